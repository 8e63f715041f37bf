// smartctl's JSON report (`smartctl --json --info --health --attributes /dev/sdX`, smartmontools
// 7.0 and later, "json_format_version" [1, 0]).
//
// Source of truth: the smartmontools man page smartctl(8) ("-j, --json", "EXIT STATUS") and
// the output of smartctl 7.3 (Debian 12) on real and emulated drives; field names are those of
// smartmontools' JSON writer (ataprint.cpp, nvmeprint.cpp, scsiprint.cpp). Only what the
// exporter uses is read; every field is optional, as smartctl writes a field only when the
// device answered the command behind it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

// One row of the ATA SMART attribute table (ata_smart_attributes.table[]).
struct SmartAttribute {
  int id = 0;                // 1-255
  std::string name;          // smartctl's name from its drive database ("Reallocated_Sector_Ct")
  int value = 0;             // normalized value, 1-253 (vendor scale, usually 100 or 200 = new)
  int worst = 0;             // lowest normalized value seen
  int thresh = 0;            // failure threshold of the normalized value (0 = never fails)
  std::string when_failed;   // "" | "now" | "past": normalized value at or below thresh
  bool prefailure = false;   // flags.prefailure: a failure predicts the drive's failure
  std::uint64_t raw = 0;     // raw.value: the 48-bit raw field as an integer
  std::string raw_string;    // raw.string: smartctl's decoding ("29 (Min/Max 19/29)")
  bool operator==(const SmartAttribute&) const = default;
};

// The NVMe SMART / Health log of an NVMe drive behind a USB bridge (RTL9210, JMS583, ASM2362;
// device types sntrealtek, sntjmicron, sntasmedia), as smartctl decodes it
// (nvme_smart_health_information_log).
struct SmartNvmeLog {
  std::uint64_t critical_warning = 0;
  std::uint64_t percentage_used = 0;      // percent, may exceed 100
  std::uint64_t available_spare = 0;      // percent
  double data_units_written = 0;          // units of 1000 x 512 bytes
  double data_units_read = 0;
  double media_errors = 0;
  double unsafe_shutdowns = 0;
  bool operator==(const SmartNvmeLog&) const = default;
};

// A SCSI disk's error counter log, one direction (scsi_error_counter_log.read / .write / .verify;
// SCSI SPC-4 LOG SENSE pages 02h, 03h, 05h): errors the drive could not correct.
struct SmartScsiErrorCounter {
  std::string kind;                  // "read", "write", "verify"
  std::uint64_t uncorrected = 0;     // total_uncorrected_errors
  bool operator==(const SmartScsiErrorCounter&) const = default;
};

struct SmartctlReport {
  int exit_status = 0;                 // smartctl.exit_status: the process's exit status bits
  std::vector<std::string> messages;   // smartctl.messages[].string (errors and warnings)
  std::string device_type;             // device.type: "sat", "usbjmicron", "sntrealtek", "scsi" ...
  std::string protocol;                // device.protocol: "ATA", "NVMe", "SCSI"
  std::string model_family;            // model_family (drive database), "" when unknown
  std::string model_name;              // model_name (ATA/NVMe) or scsi_model_name
  std::string firmware_version;
  std::uint64_t logical_block_size = 512;
  std::optional<bool> smart_passed;          // smart_status.passed: the drive's own verdict
  std::optional<double> temperature_celsius; // temperature.current
  std::optional<std::uint64_t> power_on_hours;  // power_on_time.hours
  std::optional<std::uint64_t> power_cycles;    // power_cycle_count
  std::vector<SmartAttribute> attributes;       // in table order
  std::optional<SmartNvmeLog> nvme;
  // SCSI (device type scsi, or a bridge that answers SCSI only): scsi_grown_defect_list, blocks
  // the drive reassigned since manufacture; and the error counter log, in read, write, verify order.
  std::optional<std::uint64_t> scsi_grown_defects;
  std::vector<SmartScsiErrorCounter> scsi_errors;
  bool operator==(const SmartctlReport&) const = default;

  // The attribute with `id`, or null.
  const SmartAttribute* Attribute(int id) const;
};

// Deepest nesting of arrays and objects ParseSmartctlJson accepts (smartctl's reports nest 4-5).
inline constexpr int kSmartctlMaxDepth = 32;

// Parses smartctl's JSON output. Fails (with a reason and the byte offset for bad JSON) when
// the text is not a JSON object, nests arrays and objects deeper than kSmartctlMaxDepth (checked
// before the JSON parser allocates anything), has no json_format_version [1, ...] or no
// smartctl.exit_status, or a field the exporter reads has the wrong type. A field that is absent
// stays empty. An attribute id repeated in ata_smart_attributes.table keeps its first row.
ParseResult<SmartctlReport> ParseSmartctlJson(std::string_view text);

// Bytes the host has written, from the first attribute, in this order, whose drive-database name
// says its unit: Host_Writes_32MiB, Host_Writes_GiB, Lifetime_Writes_GiB, Total_Writes_GiB,
// Host_Writes_MiB, then Total_LBAs_Written x logical block size (last: on some drives it counts
// larger units, see tests/fixtures/samples/smartctl/01-*); else from the NVMe log (data units x
// 512000); nullopt when the drive reports neither. `source` gets the attribute's name.
std::optional<double> SmartWrittenBytes(const SmartctlReport& r, std::string* source);

// The drive's own estimate of the life left, 0-1: the normalized value / 100 of the first wear
// attribute it has, by name, in this order: Percent_Lifetime_Remain (Crucial/Micron, 202),
// SSD_Life_Left (231), Remaining_Lifetime_Perc (169), Percent_Life_Remaining, Media_Wearout_Indicator
// (Intel, 233), Wear_Leveling_Count (Samsung, 177), skipping one whose normalized value is outside
// 0-100 (not a percentage on that drive); for an NVMe drive behind a bridge 1 - Percentage Used /
// 100 (at least 0). Always within 0-1; nullopt when there is none. `source` gets the name.
std::optional<double> SmartLifeRemaining(const SmartctlReport& r, std::string* source);

}  // namespace diskprobe::parsers
