#include "collectors/block_stat.h"
#include "collectors/collector.h"

namespace diskprobe::collectors {

const std::vector<CollectorInfo>& AllCollectors() {
  static const std::vector<CollectorInfo> kAll = {
      {"block_stat", "I/O counters and device facts from /sys/block/<dev>", true,
       [] { return std::make_unique<BlockStatCollector>(); }},
  };
  return kAll;
}

}  // namespace diskprobe::collectors
