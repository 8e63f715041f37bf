#pragma once
// nvme: the SMART / Health Information log of each monitored NVMe disk's controller, as last read
// by an NvmeHealthReader (sources/nvme_health.h) in its own thread every health.nvme_interval;
// a scrape copies the results: no I/O, no command to the device.
//
// Series per monitored whole disk that is an NVMe namespace, labels device (nvme0n1) and
// controller (nvme0); every namespace of a controller shows the controller's page. The page's
// values are exported only while the last read succeeded: after a failed read they are absent
// and diskprobe_nvme_smart_up is 0 (the reason in diskprobe_nvme_smart_read_failures_total and
// one log line per change); before the first read only the read-state families exist.
// Without a reader (collector disabled at start) nothing is exported and the collector fails.
#include "scrape/collector.h"
#include "sources/nvme_health.h"

namespace diskprobe::collectors {

class NvmeCollector : public Collector {
 public:
  // `reader` may be null; it must outlive the collector.
  explicit NvmeCollector(const NvmeHealthReader* reader) : reader_(reader) {}
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  const NvmeHealthReader* reader_;
};

}  // namespace diskprobe::collectors
