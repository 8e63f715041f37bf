#pragma once
// mmc_ios: the SD/MMC bus settings of each mmc host, from debugfs.
//
// Sources:
//   <sysfs>/class/mmc_host/mmcN                     the hosts (Documentation/ABI/testing/sysfs-class-mmc_host
//                                                   has no attributes of interest; the directory is the list)
//   <sysfs>/class/mmc_host/mmcN/mmcN:RCA/block/X    the block device of the card on that host (none for SDIO)
//   <sysfs>/class/mmc_host/mmcN/device/driver       symlink to the host driver (sdhost-bcm2835, sdhci-iproc...)
//   <debugfs>/mmcN/ios                              kernel drivers/mmc/core/debugfs.c mmc_ios_show()
//                                                   (parsers/mmc_ios.h); root only
// The host list and the card -> block mapping are read at every scrape (a few directory reads;
// cards come and go); the driver of a host cannot change and is cached.
// No mmc host at all (not an SD/eMMC machine): nothing is exported and that is success. Hosts but
// an unreadable ios (debugfs not mounted, not root): the ios series are absent, the collector
// fails and the reason is logged once. debugfs is never mounted by the exporter.
#include <map>

#include "scrape/collector.h"

namespace diskprobe::collectors {

class MmcIosCollector : public Collector {
 public:
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  std::map<std::string, std::string> drivers_;  // host -> driver name ("" when unknown)
};

// A host and the whole-disk block device of its card ("" for SDIO or an empty slot), from sysfs.
struct MmcHost {
  std::string host;    // "mmc0"
  std::string device;  // "mmcblk0" or ""
};
// Lists <sysfs>/class/mmc_host in natural order. Empty when there is no mmc host.
std::vector<MmcHost> ListMmcHosts(const std::string& sysfs);

}  // namespace diskprobe::collectors
