#pragma once
// block_stat: I/O counters and device facts of each monitored whole disk, from sysfs.
//
// Sources (Documentation/ABI/stable/sysfs-block, Documentation/block/stat.rst):
//   <sysfs>/block/<dev>/stat                      I/O counters (parsers/block_stat.h)
//   <sysfs>/block/<dev>/{size,ro,removable}       size in 512-byte sectors, flags
//   <sysfs>/block/<dev>/queue/{rotational,logical_block_size,physical_block_size,scheduler}
//   <sysfs>/block/<dev>/device/{model,name,vendor,rev,fwrev,firmware_rev,serial}, <dev>/serial
// A file that is missing gives an absent series. A device whose `stat` vanished between discovery
// and the scrape (unplugged) is skipped silently; any other unreadable `stat` fails the collector.
#include "collectors/collector.h"

namespace diskprobe::collectors {

class BlockStatCollector : public Collector {
 public:
  std::string_view Name() const override { return "block_stat"; }
  bool Collect(const ScrapeContext& ctx, Families* out) override;

 private:
  ErrorState errors_{"block_stat"};
};

}  // namespace diskprobe::collectors
