#include "collectors/registry.h"

#include "collectors/block_stat.h"
#include "collectors/board.h"
#include "collectors/boot_config.h"
#include "collectors/kmsg.h"
#include "collectors/mmc_card.h"
#include "collectors/mmc_ios.h"
#include "collectors/mounts.h"
#include "collectors/nvme.h"
#include "collectors/probes.h"
#include "collectors/sd_vendor.h"
#include "collectors/smart.h"

namespace diskprobe::collectors {
namespace {

template <typename C>
std::unique_ptr<Collector> Make(const Dependencies&) {
  return std::make_unique<C>();
}

}  // namespace

const std::vector<CollectorInfo>& AllCollectors() {
  static const std::vector<CollectorInfo> kAll = {
      {"block_stat", "I/O counters and device facts from /sys/block/<dev>", true, Source::kNone,
       &Make<BlockStatCollector>},
      {"probes", "results of the scheduled I/O probes (configured under probes: in the config)", true, Source::kProbes,
       [](const Dependencies& d) -> std::unique_ptr<Collector> { return std::make_unique<ProbesCollector>(d.probes); }},
      {"mmc_ios", "SD/MMC bus clock, width, timing and voltage from debugfs mmcN/ios", true, Source::kNone,
       &Make<MmcIosCollector>},
      {"mmc_card", "SD card and eMMC identity, class and wear from /sys/block/mmcblkN/device", true, Source::kNone,
       &Make<MmcCardCollector>},
      {"boot_config", "SD settings of the Raspberry Pi firmware's config.txt", true, Source::kNone,
       &Make<BootConfigCollector>},
      {"board", "Raspberry Pi board model and firmware throttling flags", true, Source::kNone, &Make<BoardCollector>},
      {"mounts", "read-only state of the filesystems on monitored disks, ext4 error records", true, Source::kNone,
       &Make<MountsCollector>},
      {"kmsg", "kernel log messages of failing cards, followed from --path.kmsg in a thread", true, Source::kKmsg,
       [](const Dependencies& d) -> std::unique_ptr<Collector> { return std::make_unique<KmsgCollector>(d.kmsg); }},
      {"nvme", "NVMe SMART / Health Information log (wear, spare, temperature, errors), read in a thread", true,
       Source::kNvme,
       [](const Dependencies& d) -> std::unique_ptr<Collector> { return std::make_unique<NvmeCollector>(d.nvme); }},
      {"sd_vendor", "SD card vendor health over CMD56 (life used, erase counts), cards of health.sd_vendor only", true,
       Source::kSdVendor,
       [](const Dependencies& d) -> std::unique_ptr<Collector> {
         return std::make_unique<SdVendorCollector>(d.sd_vendor);
       }},
      {"smart", "SATA/USB disk SMART health (verdict, wear, sectors, temperature, hours, writes) from smartctl, run in a thread",
       true, Source::kSmart,
       [](const Dependencies& d) -> std::unique_ptr<Collector> { return std::make_unique<SmartCollector>(d.smart); }},
  };
  return kAll;
}

bool Needs(const std::vector<const CollectorInfo*>& enabled, Source source) {
  for (const CollectorInfo* c : enabled)
    if (c->needs == source) return true;
  return false;
}

std::vector<NamedCollector> Build(const std::vector<const CollectorInfo*>& enabled, const Dependencies& deps) {
  std::vector<NamedCollector> out;
  out.reserve(enabled.size());
  for (const CollectorInfo* c : enabled) out.push_back({c->name, c->make(deps)});
  return out;
}

}  // namespace diskprobe::collectors
