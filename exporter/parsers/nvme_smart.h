// NVMe SMART / Health Information log page (Get Log Page, Log Identifier 02h).
//
// Source of truth: NVM Express Base Specification, "SMART / Health Information (Log Identifier
// 02h)" (figure "SMART / Health Information Log Page"; the layout is the same from revision 1.0
// to 2.0, later revisions only named bits that were reserved). All multi-byte fields are
// little-endian; the page is 512 bytes.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

inline constexpr std::size_t kNvmeSmartLogSize = 512;

// An unsigned 128-bit counter as the page stores it (16 bytes, little-endian).
struct NvmeCounter128 {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  bool operator==(const NvmeCounter128&) const = default;
  // The value as a double: exact below 2^53, otherwise the nearest double within one rounding
  // step of the true value (Prometheus samples are doubles; no device counts past 2^64 in
  // practice, but the field is 128 bits wide and is never cut to 64).
  double AsDouble() const;
  // The value times `factor`, as a double (data units to bytes): one rounding, exact while the
  // product is below 2^53.
  double Times(double factor) const { return AsDouble() * factor; }
};

struct NvmeSmartLog {
  // Byte 0, Critical Warning. Bit 0: available spare below threshold; 1: temperature above an
  // over-temperature or below an under-temperature threshold; 2: NVM subsystem reliability
  // degraded (media or internal errors); 3: media placed in read-only mode; 4: volatile memory
  // backup device failed; 5: persistent memory region read-only (revision 1.4); 6-7 reserved.
  std::uint8_t critical_warning = 0;
  // Bytes 2:1, Composite Temperature in kelvins (0 = the controller reports none).
  std::uint16_t composite_temperature_kelvin = 0;
  std::uint8_t available_spare = 0;            // byte 3, percent of spare capacity left (0-100)
  std::uint8_t available_spare_threshold = 0;  // byte 4, percent
  // Byte 5, Percentage Used: the vendor's estimate of life used, percent; may exceed 100
  // (saturates at 255 by the specification).
  std::uint8_t percentage_used = 0;
  std::uint8_t endurance_group_critical_warning = 0;  // byte 6 (revision 1.4), bits as above
  // Data units are thousands of 512-byte units, rounded up: 1 = 512,000 bytes (the spec's
  // definition; a value of 1 means 1 to 1,000 units of 512 bytes were transferred).
  NvmeCounter128 data_units_read;      // bytes 47:32
  NvmeCounter128 data_units_written;   // bytes 63:48
  NvmeCounter128 host_read_commands;   // bytes 79:64
  NvmeCounter128 host_write_commands;  // bytes 95:80
  NvmeCounter128 controller_busy_time_minutes;  // bytes 111:96
  NvmeCounter128 power_cycles;                  // bytes 127:112
  NvmeCounter128 power_on_hours;                // bytes 143:128
  NvmeCounter128 unsafe_shutdowns;              // bytes 159:144
  NvmeCounter128 media_errors;                  // bytes 175:160, Media and Data Integrity Errors
  NvmeCounter128 error_log_entries;             // bytes 191:176, Number of Error Information Log Entries
  std::uint32_t warning_temperature_time_minutes = 0;   // bytes 195:192
  std::uint32_t critical_temperature_time_minutes = 0;  // bytes 199:196
  // Bytes 215:200, Temperature Sensor 1-8 in kelvins; 0 = not implemented.
  std::array<std::uint16_t, 8> temperature_sensor_kelvin{};

  // Kelvin to degrees Celsius as the spec and nvme-cli convert (K - 273.15, nvme-cli prints the
  // integer K - 273).
  static double Celsius(std::uint16_t kelvin) { return static_cast<double>(kelvin) - 273.15; }
};

// Names of the Critical Warning bits 0-5, in bit order (the `kind` label of the warning metric).
inline constexpr std::array<std::string_view, 6> kNvmeCriticalWarningBits = {
    "available_spare", "temperature", "reliability_degraded", "read_only", "volatile_memory_backup",
    "persistent_memory_read_only"};

// Decodes a page. `page` must be exactly kNvmeSmartLogSize bytes, else an error saying the
// length. A page of all zero bytes is refused ("all bytes zero"): a controller or bridge that
// answered without filling the buffer (seen with nvme-cli on real devices and with USB bridges)
// would otherwise export a temperature of -273 and a spare of 0 % as if measured.
ParseResult<NvmeSmartLog> ParseNvmeSmartLog(std::span<const std::uint8_t> page);

}  // namespace diskprobe::parsers
