// debugfs mmcN/ios (ParseMmcIos).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/mmc_ios.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = ParseMmcIos(text);
  if (r.value.has_value() == !r.error.empty()) __builtin_trap();  // a value or an error
  if (r && r->timing_code) (void)MmcTimingName(*r->timing_code);
  return 0;
}
