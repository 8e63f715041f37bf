// /sys/block/<dev>/stat (ParseBlockStat, the whole input) and /proc/diskstats (ParseDiskstatsLine,
// each line).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/block_stat.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto s = ParseBlockStat(text); s && s->field_count < 11) __builtin_trap();
  while (!text.empty()) {
    const auto nl = text.find('\n');
    (void)ParseDiskstatsLine(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
