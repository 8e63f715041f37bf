#include "parsers/throttled.h"

#include "util/strings.h"

namespace diskprobe::parsers {

Throttled DecodeThrottled(std::uint32_t v) {
  Throttled t;
  t.value = v;
  t.under_voltage_now = v & (1u << 0);
  t.arm_freq_capped_now = v & (1u << 1);
  t.throttled_now = v & (1u << 2);
  t.soft_temp_limit_now = v & (1u << 3);
  t.under_voltage_occurred = v & (1u << 16);
  t.arm_freq_capped_occurred = v & (1u << 17);
  t.throttled_occurred = v & (1u << 18);
  t.soft_temp_limit_occurred = v & (1u << 19);
  t.unknown_bits = v & ~0x000f000fu;
  return t;
}

ParseResult<Throttled> ParseThrottled(std::string_view text) {
  std::string_view value = text;
  constexpr std::string_view kKey = "throttled=";
  for (std::string_view rest = text; !rest.empty();) {
    const auto nl = rest.find('\n');
    const std::string_view line = util::Trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.starts_with(kKey)) {
      value = line.substr(kKey.size());
      break;
    }
  }
  auto v = util::ParseHex<std::uint32_t>(util::Trim(value));
  if (!v) return ParseResult<Throttled>::Fail("get_throttled: not a 32-bit hex value");
  return ParseResult<Throttled>::Ok(DecodeThrottled(*v));
}

std::optional<ThrottledLogEvent> ParseThrottledLogLine(std::string_view line) {
  ThrottledLogEvent e;
  if (line.find("Under-voltage detected!") != std::string_view::npos) e.under_voltage_detected = true;
  else if (line.find("Voltage normalised") == std::string_view::npos) return std::nullopt;
  const auto open = line.rfind('('), close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  auto v = util::ParseHex<std::uint32_t>(util::Trim(line.substr(open + 1, close - open - 1)));
  if (!v) return std::nullopt;
  e.flags = DecodeThrottled(*v);
  return e;
}

}  // namespace diskprobe::parsers
