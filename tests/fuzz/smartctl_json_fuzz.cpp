// smartctl's JSON report (ParseSmartctlJson) and what the smart collector derives from a parsed
// one: the written bytes and life left (SmartWrittenBytes, SmartLifeRemaining), an attribute by id,
// and the run's failure reason for a normal exit with the report's own status. Traps when a
// contract of parsers/smartctl_json.h is broken: an accepted attribute id outside 1-255, a life
// left outside 0-1, a negative byte count, or a source name missing beside a value.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "parsers/smartctl_json.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = ParseSmartctlJson(text);
  if (!r) {
    if (r.error.empty()) __builtin_trap();  // a refusal always says why
    return 0;
  }
  for (const SmartAttribute& a : r->attributes)
    if (a.id < 1 || a.id > 255) __builtin_trap();
  (void)r->Attribute(5);
  (void)r->Attribute(197);
  std::string source;
  if (const auto w = SmartWrittenBytes(*r, &source); w && (!(*w >= 0) || source.empty())) __builtin_trap();
  source.clear();
  if (const auto l = SmartLifeRemaining(*r, &source); l && (!(*l >= 0 && *l <= 1) || source.empty()))
    __builtin_trap();
  return 0;
}
