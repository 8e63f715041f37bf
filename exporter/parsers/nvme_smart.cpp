#include "parsers/nvme_smart.h"

#include <algorithm>
#include <string>

namespace diskprobe::parsers {
namespace {

std::uint64_t Le(std::span<const std::uint8_t> p, std::size_t off, std::size_t n) {
  std::uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[off + i];
  return v;
}

NvmeCounter128 Le128(std::span<const std::uint8_t> p, std::size_t off) {
  return {Le(p, off, 8), Le(p, off + 8, 8)};
}

}  // namespace

double NvmeCounter128::AsDouble() const {
  // hi * 2^64 + lo: each conversion rounds once, the sum once more; with hi == 0 this is the
  // one rounding of lo.
  return static_cast<double>(hi) * 18446744073709551616.0 + static_cast<double>(lo);
}

ParseResult<NvmeSmartLog> ParseNvmeSmartLog(std::span<const std::uint8_t> page) {
  using R = ParseResult<NvmeSmartLog>;
  if (page.size() != kNvmeSmartLogSize)
    return R::Fail("SMART log page is " + std::to_string(page.size()) + " bytes, want " +
                   std::to_string(kNvmeSmartLogSize));
  if (std::all_of(page.begin(), page.end(), [](std::uint8_t b) { return b == 0; }))
    return R::Fail("SMART log page: all bytes zero (the controller returned no data)");
  NvmeSmartLog s;
  s.critical_warning = page[0];
  s.composite_temperature_kelvin = static_cast<std::uint16_t>(Le(page, 1, 2));
  s.available_spare = page[3];
  s.available_spare_threshold = page[4];
  s.percentage_used = page[5];
  s.endurance_group_critical_warning = page[6];
  s.data_units_read = Le128(page, 32);
  s.data_units_written = Le128(page, 48);
  s.host_read_commands = Le128(page, 64);
  s.host_write_commands = Le128(page, 80);
  s.controller_busy_time_minutes = Le128(page, 96);
  s.power_cycles = Le128(page, 112);
  s.power_on_hours = Le128(page, 128);
  s.unsafe_shutdowns = Le128(page, 144);
  s.media_errors = Le128(page, 160);
  s.error_log_entries = Le128(page, 176);
  s.warning_temperature_time_minutes = static_cast<std::uint32_t>(Le(page, 192, 4));
  s.critical_temperature_time_minutes = static_cast<std::uint32_t>(Le(page, 196, 4));
  for (std::size_t i = 0; i < s.temperature_sensor_kelvin.size(); ++i)
    s.temperature_sensor_kelvin[i] = static_cast<std::uint16_t>(Le(page, 200 + 2 * i, 2));
  return R::Ok(s);
}

}  // namespace diskprobe::parsers
