#pragma once
// sd_vendor: the vendor health block of each SD card named in health.sd_vendor.devices, as last
// read with CMD56 by an SdVendorHealthReader (sources/sd_vendor_health.h) in its own thread
// every health.sd_vendor.interval; a scrape copies the results: no I/O, no command to a card.
//
// Series per configured card, label device (mmcblk0). The read-state families (up, failures,
// rejected replies, reads, commands, timings) exist from the first pass on. The health families
// (label layout too) exist only while the last pass gave an accepted reply: after a failure or a
// rejected reply they are absent and diskprobe_sd_health_up is 0, with the reason in
// diskprobe_sd_health_read_failures_total or diskprobe_sd_health_rejected_replies_total and one
// log line per change. A field the card's layout does not carry is absent, never 0.
// With no cards configured nothing is exported. Without a reader (collector disabled at start)
// the collector fails.
#include "scrape/collector.h"
#include "sources/sd_vendor_health.h"

namespace diskprobe::collectors {

class SdVendorCollector : public Collector {
 public:
  // `reader` may be null; it must outlive the collector.
  explicit SdVendorCollector(const SdVendorHealthReader* reader) : reader_(reader) {}
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  const SdVendorHealthReader* reader_;
};

}  // namespace diskprobe::collectors
