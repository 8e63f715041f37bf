// The firmware's get_throttled value (ParseThrottled) and the kernel's under-voltage log lines
// (ParseThrottledLogLine, each line).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/throttled.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto t = ParseThrottled(text); t && DecodeThrottled(t->value).value != t->value) __builtin_trap();
  while (!text.empty()) {
    const auto nl = text.find('\n');
    (void)ParseThrottledLogLine(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
