#include "collectors/block_stat.h"
#include "collectors/board.h"
#include "collectors/boot_config.h"
#include "scrape/collector.h"
#include "collectors/kmsg.h"
#include "collectors/mmc_card.h"
#include "collectors/mmc_ios.h"
#include "collectors/mounts.h"
#include "collectors/probes.h"

namespace diskprobe::collectors {

const std::vector<CollectorInfo>& AllCollectors() {
  static const std::vector<CollectorInfo> kAll = {
      {"block_stat", "I/O counters and device facts from /sys/block/<dev>", true,
       [] { return std::make_unique<BlockStatCollector>(); }},
      {"probes", "results of the scheduled I/O probes (configured under probes: in the config)", true,
       [] { return std::make_unique<ProbesCollector>(); }},
      {"mmc_ios", "SD/MMC bus clock, width, timing and voltage from debugfs mmcN/ios", true,
       [] { return std::make_unique<MmcIosCollector>(); }},
      {"mmc_card", "SD card and eMMC identity, class and wear from /sys/block/mmcblkN/device", true,
       [] { return std::make_unique<MmcCardCollector>(); }},
      {"boot_config", "SD settings of the Raspberry Pi firmware's config.txt", true,
       [] { return std::make_unique<BootConfigCollector>(); }},
      {"board", "Raspberry Pi board model and firmware throttling flags", true,
       [] { return std::make_unique<BoardCollector>(); }},
      {"mounts", "read-only state of the filesystems on monitored disks, ext4 error records", true,
       [] { return std::make_unique<MountsCollector>(); }},
      {"kmsg", "kernel log messages of failing cards, followed from --path.kmsg in a thread", true,
       [] { return std::make_unique<KmsgCollector>(); }},
  };
  return kAll;
}

}  // namespace diskprobe::collectors
