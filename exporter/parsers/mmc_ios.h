// Parser for debugfs <debugfs>/mmcN/ios (root only).
// Source of truth: kernel drivers/mmc/core/debugfs.c, mmc_ios_show(): lines
// "key:\t<number> (<text>)", "clock:\t\t<n> Hz", and "actual clock:\t<n> Hz"
// which is printed only when host->actual_clock != 0 (many drivers never set
// it; tests/fixtures/samples/ios/02, 10). Older kernels stop after "timing spec" (no signal
// voltage / driver type lines).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

// Every field is optional: a missing or malformed line leaves it empty.
// Codes are the kernel's enum values (include/linux/mmc/host.h); the *_name
// strings are the kernel's words in parentheses, as printed.
struct MmcIos {
  // Requested bus clock (ios->clock). 0 is a real value: card
  // runtime-suspended or powered off, not "no card" (tests/fixtures/samples/ios/12).
  std::optional<std::uint64_t> clock_hz;
  // What the host controller delivers; absent when the line is absent.
  std::optional<std::uint64_t> actual_clock_hz;
  std::optional<unsigned> vdd_code;     // OCR bit number, 0 when off
  std::optional<double> vdd_min_volts;  // from "(3.3 ~ 3.4 V)" / "(1.65 - 1.95 V)"
  std::optional<double> vdd_max_volts;  // both empty for "(invalid)"
  std::optional<unsigned> bus_mode;     // 1 open drain, 2 push-pull
  std::optional<std::string> bus_mode_name;
  std::optional<unsigned> chip_select;  // 0 don't care, 1 active high, 2 active low
  std::optional<std::string> chip_select_name;
  std::optional<unsigned> power_mode;  // 0 off, 1 up, 2 on
  std::optional<std::string> power_mode_name;
  std::optional<unsigned> bus_width_code;       // 0, 2, 3
  std::optional<unsigned> bus_width_bits;       // 1, 4, 8 (= 1 << code)
  std::optional<unsigned> timing_code;          // MMC_TIMING_*: 0 legacy .. 10 HS400
  std::optional<std::string> timing_name;       // e.g. "sd uhs SDR104"
  std::optional<unsigned> signal_voltage_code;  // 0 3.3 V, 1 1.8 V, 2 1.2 V
  std::optional<double> signal_voltage_volts;   // parsed from "(3.30 V)"
  std::optional<unsigned> driver_type_code;     // 0 B, 1 A, 2 C, 3 D
  std::optional<char> driver_type;              // 'A'..'D' from "(driver type B)"
  // Lines that did not parse (unknown key or malformed value), verbatim.
  std::vector<std::string> unparsed_lines;
};

// Parse the whole file. Tabs or spaces after the colon, trailing whitespace
// and CRLF are accepted. Errors: no known line at all (empty file, wrong file),
// "ios: no recognised line"; or one of the lines every kernel prints (clock,
// vdd, bus mode, chip select, power mode, bus width, timing spec) missing or
// malformed, "ios: incomplete, no 'vdd', ... line" (a file cut off: not a
// reading). Signal voltage, driver type and actual clock may be absent.
ParseResult<MmcIos> ParseMmcIos(std::string_view text);

// Kernel name for a timing code (debugfs.c switch), nullopt for unknown codes.
// Code 10 prints "mmc HS400" or "mmc HS400 enhanced strobe"; this returns the former.
std::optional<std::string_view> MmcTimingName(unsigned code);

}  // namespace diskprobe::parsers
