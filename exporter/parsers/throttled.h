// Raspberry Pi firmware throttling flags (get_throttled).
// Source of truth: https://www.raspberrypi.com/documentation/computers/os.html#get_throttled
// (bit table), kernel drivers/firmware/raspberrypi.c (sysfs get_throttled_show
// prints "%x\n"; the "Under-voltage detected! (0x%08x)" / "Voltage normalised
// (0x%08x)" log lines).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

struct Throttled {
  std::uint32_t value = 0;
  // Bits 0-3: active now.
  bool under_voltage_now = false;    // bit 0
  bool arm_freq_capped_now = false;  // bit 1
  bool throttled_now = false;        // bit 2
  bool soft_temp_limit_now = false;  // bit 3
  // Bits 16-19: sticky, has occurred since boot.
  bool under_voltage_occurred = false;    // bit 16
  bool arm_freq_capped_occurred = false;  // bit 17
  bool throttled_occurred = false;        // bit 18
  bool soft_temp_limit_occurred = false;  // bit 19
  std::uint32_t unknown_bits = 0;         // value & ~0x000f000f
};

Throttled DecodeThrottled(std::uint32_t value);

// Accepts the sysfs form ("50005\n", hex without 0x), the vcgencmd form
// ("throttled=0x50005", also inside multi-line output such as
// "temp=..\nthrottled=0x50000\n"), and a bare "0x50005".
// Errors: no hex value, value wider than 32 bits, trailing garbage.
ParseResult<Throttled> ParseThrottled(std::string_view text);

// One kernel log line of the firmware driver. The driver logs only
// under-voltage transitions, so `value` is what the firmware returned at that
// moment: the "occurred" bits are often clear in "Voltage normalised" lines
// and must not be read as history (tests/fixtures/samples/throttled/05).
struct ThrottledLogEvent {
  bool under_voltage_detected = false;  // false: "Voltage normalised"
  Throttled flags;
};
// nullopt when the line is not one of the two messages.
std::optional<ThrottledLogEvent> ParseThrottledLogLine(std::string_view line);

}  // namespace diskprobe::parsers
