#pragma once
// probes: the published results of the scheduled I/O probes (scheduler.h), copied from the
// probe threads' snapshots; no I/O at scrape time.
//
// Every scheduled (device, probe) pair has its counters and histogram from the start (at 0);
// the last-run gauges appear after its first completed run (absent before, never a fake 0).
#include "collectors/collector.h"

namespace diskprobe::collectors {

class ProbesCollector : public Collector {
 public:
  std::string_view Name() const override { return "probes"; }
  bool Collect(const ScrapeContext& ctx, Families* out) override;
};

}  // namespace diskprobe::collectors
