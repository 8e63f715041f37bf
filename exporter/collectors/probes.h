#pragma once
// probes: the published results of the scheduled I/O probes (probes/probe_manager.h), copied from the
// probe threads' snapshots; no I/O at scrape time.
//
// Every scheduled (device, probe) pair has its counters and histogram from the start (at 0);
// the last-run gauges appear after its first completed run (absent before, never a fake 0).
// Without a probe scheduler (probes not running) nothing is exported, and that is success.
#include <cstdint>
#include <string>

#include "scrape/collector.h"

namespace diskprobe {
class ProbeManager;
}

namespace diskprobe::collectors {

class ProbesCollector : public Collector {
 public:
  // `probes` may be null; it must outlive the collector.
  explicit ProbesCollector(const ProbeManager* probes) : probes_(probes) {}

  // Probe results change once per run (minutes), scrapes come every few seconds: the text of
  // the results is kept until ProbeManager::Generation() moves; only diskprobe_probe_stalled is
  // written anew every scrape (after the results).
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  // Everything but diskprobe_probe_stalled.
  void WriteResults(FamilySink& out) const;

  const ProbeManager* probes_;
  bool cached_ = false;
  std::uint64_t cached_generation_ = 0;
  std::string cached_text_;
};

}  // namespace diskprobe::collectors
