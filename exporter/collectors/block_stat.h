#pragma once
// block_stat: I/O counters and device facts of each monitored whole disk, from sysfs.
//
// Sources (Documentation/ABI/stable/sysfs-block, Documentation/block/stat.rst):
//   <sysfs>/block/<dev>/stat                      I/O counters (parsers/block_stat.h)
//   <sysfs>/block/<dev>/{size,ro,removable}       size in 512-byte sectors, flags
//   <sysfs>/block/<dev>/queue/{rotational,logical_block_size,physical_block_size,scheduler}
//   <sysfs>/block/<dev>/device/{model,name,vendor,rev,fwrev,firmware_rev,serial}, <dev>/serial
//     revision: `rev` (SCSI), `firmware_rev` (NVMe), `fwrev` for SD/eMMC (an eMMC's `rev` is its
//     EXT_CSD revision, exported by mmc_card as ext_csd_rev)
// stat, size and ro are read at every scrape, from descriptors kept open (util::SysfsAttributes:
// one pread each). The device's other facts (identity, queue geometry, scheduler) change only
// with the medium or an administrator, so they are cached per device and re-read when the device
// number or size changes, or after kFactsMaxAge.
// A file that is missing gives an absent series. A failed device discovery fails the collector. A device that
// vanished between discovery and the scrape (unplugged: its sysfs directory is gone) is skipped silently; a device
// whose `stat` cannot be read or parsed while it is still there fails the collector and gets
// diskprobe_block_stat_readable 0 (1 for every device whose counters are exported).
#include <chrono>
#include <optional>
#include <unordered_map>

#include "scrape/collector.h"
#include "util/file.h"

namespace diskprobe::collectors {

class BlockStatCollector : public Collector {
 public:
  static constexpr std::chrono::seconds kFactsMaxAge{60};

  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

  // Slowly changing facts of one device, read from sysfs (absent attribute: nullopt / "").
  struct Facts {
    unsigned major = 0, minor = 0;
    std::optional<unsigned long long> size_sectors;  // size when the facts were read
    std::optional<unsigned long long> removable, rotational, logical_bs, physical_bs;
    std::string scheduler, model, vendor, serial, revision;
    std::chrono::steady_clock::time_point read_at;
  };

 private:
  std::unordered_map<std::string, Facts> facts_;  // by device name; scrapes are serialised
  util::SysfsAttributes files_;                   // stat, size and ro, kept open
};

}  // namespace diskprobe::collectors
