#pragma once
// smart: the SMART data of each monitored SATA/USB disk (sd*) as smartctl reported it, read by a
// SmartHealthReader (sources/smart_health.h) in its own thread every health.smart_interval; a
// scrape copies the results: no I/O, no process, no command to the device.
//
// Series per monitored sd disk the reader has visited, label device (sda). The drive's values
// are exported only while the last run succeeded: after a failed run they are absent and
// diskprobe_smart_up is 0 (the reason in diskprobe_smart_read_failures_total and one log line
// per change); a disk in standby keeps its last values (diskprobe_smart_skipped_total). A value
// the drive does not report (no temperature, no wear attribute) is absent. Without smartctl
// (diskprobe_smart_smartctl_up 0) no per-disk series exist. Without a reader (collector enabled
// but not started) nothing is exported and the collector fails.
#include "scrape/collector.h"
#include "sources/smart_health.h"

namespace diskprobe::collectors {

class SmartCollector : public Collector {
 public:
  // `reader` may be null; it must outlive the collector.
  explicit SmartCollector(const SmartHealthReader* reader) : reader_(reader) {}
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  const SmartHealthReader* reader_;
};

}  // namespace diskprobe::collectors
