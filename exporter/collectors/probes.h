#pragma once
// probes: the published results of the scheduled I/O probes (probes/probe_manager.h), copied from the
// probe threads' snapshots; no I/O at scrape time.
//
// Every scheduled (device, probe) pair has its counters and histogram from the start (at 0);
// the last-run gauges appear after its first completed run (absent before, never a fake 0).
#include "scrape/collector.h"

namespace diskprobe::collectors {

class ProbesCollector : public Collector {
 public:
  std::string_view Name() const override { return "probes"; }
  bool Collect(const ScrapeContext& ctx, Families* out) override;
  // Probe results change once per run (minutes), scrapes come every few seconds: the rendered
  // text is kept until ProbeManager::Generation() moves; only `stalled` is computed every scrape.
  // The cached results go to *tail, where they have always been in the exposition.
  bool CollectWithText(const ScrapeContext& ctx, Families* out, std::string* text, std::string* tail) override;

 private:
  // Everything but diskprobe_probe_stalled.
  void CollectResults(const ScrapeContext& ctx, Families* out);
  void CollectStalled(const ScrapeContext& ctx, Families* out);
  std::uint64_t cached_generation_ = 0;
  std::string cached_text_;
};

}  // namespace diskprobe::collectors
