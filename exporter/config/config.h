#pragma once
// The exporter's configuration: config/default.yml (embedded in the binary) with an optional
// file applied on top. See config/default.yml for the meaning and default of every key.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/probe_kinds.h"
#include "config/yaml_reader.h"

namespace diskprobe::config {

// The text of config/default.yml, embedded at build time (generated default_config.cpp).
extern const std::string_view kDefaultConfigYaml;
inline constexpr const char* kDefaultConfigName = "<embedded config/default.yml>";

struct DevicesConfig {
  std::vector<Pattern> include;  // empty: every whole disk
  std::vector<Pattern> exclude;
  // Excluded unless an include pattern matches the name (loop devices, optical drives).
  std::vector<Pattern> exclude_unless_included;
  // Skip removable devices (sysfs removable 1) whose size is 0: no medium.
  bool skip_empty_removable = true;
  std::chrono::milliseconds discovery_interval{0};

  // True when a whole disk named `name` is to be monitored under these filters: include empty
  // or matching, no exclude matching, and no exclude_unless_included matching unless an include
  // pattern matched.
  bool Selects(std::string_view name) const;
};

enum class IoPriority { kNone, kBestEffort, kIdle };

struct ProbesConfig {
  bool enabled = false;
  std::string state_directory;
  std::vector<std::string> write_directories;  // empty: {state_directory}
  std::uint64_t probe_file_size = 0;
  IoPriority io_priority = IoPriority::kIdle;
  double busy_threshold = 0;  // io_ticks utilisation ratio 0..1
  std::chrono::milliseconds busy_window{0};
  double jitter = 0;  // +- fraction of each interval
  std::chrono::milliseconds op_deadline{0};
  std::uint64_t write_budget_per_day = 0;  // bytes per device per UTC day
  std::uint64_t free_space_floor = 0;      // bytes; the floor is the smaller of this and
  double free_space_floor_ratio = 0;       // this fraction of the filesystem
  ProbeSet defaults;
  // Per-device overrides, first match wins: a kernel-name pattern and the set it yields.
  std::vector<std::pair<Pattern, ProbeSet>> devices;

  // The probe set for a device: the first matching override, else the defaults.
  const ProbeSet& For(std::string_view device) const;
  // Directories the write probes use.
  std::vector<std::string> WriteDirectories() const;
};

// SD vendor health over CMD56 (sources/sd_vendor_health.h). Off while `devices` is empty: a
// vendor command goes only to the cards named here.
struct SdVendorHealthConfig {
  std::vector<std::string> devices;  // whole-disk kernel names (mmcblk0); never a partition
  std::string layout = "auto";       // "auto" or a name of parsers::SdVendorLayouts()
  std::chrono::milliseconds interval{0};  // between two reads of one card
  std::chrono::milliseconds timeout{0};   // one command's bound before the card is given up on
};

// Background readers of what devices report about their own health (sources/nvme_health.h,
// sources/sd_vendor_health.h, sources/smart_health.h).
struct HealthConfig {
  std::chrono::milliseconds nvme_interval{0};  // between SMART log reads of each NVMe controller
  SdVendorHealthConfig sd_vendor;
  std::chrono::milliseconds smart_interval{0};  // between smartctl runs for each SATA/USB (sd) disk
  std::chrono::milliseconds smartctl_timeout{0};  // a smartctl run is killed after this long
  std::string smartctl_path;  // absolute path of smartmontools' smartctl; absent file = source off
  // smartctl's -d TYPE for disks whose USB bridge its drive database does not know: a kernel-name
  // pattern (anchored) and the type ("sat", "sntrealtek", "usbjmicron,x" ...: lowercase letters,
  // digits, ',', '+', starting with a letter; smartctl(8) "-d TYPE"). First matching pattern
  // wins, in file order; a disk no pattern matches gets no -d (smartctl's own detection).
  std::vector<std::pair<Pattern, std::string>> smart_device_types;
};

struct Config {
  std::string source;  // file the config came from, or kDefaultConfigName
  DevicesConfig devices;
  ProbesConfig probes;
  HealthConfig health;
};

struct LoadResult {
  std::shared_ptr<const Config> config;  // null when errors is not empty
  std::vector<Error> errors;             // every problem found, in document order
};

// Parses `yaml` (named `source_name` in errors) on top of the embedded defaults. Never throws:
// YAML syntax errors, unknown keys, wrong types, bad durations/sizes/regexes are all in errors.
// A text outside LoadDocument's bounds (one document, size, depth, nodes, aliases) is one error;
// patterns are held to CompilePattern's.
LoadResult LoadString(std::string_view yaml, const std::string& source_name);

// Reads (util::ReadRegularFile, at most kMaxDocumentBytes) and parses `path`. A file that cannot
// be used is one error "path:0:0: <reason>": "cannot read: <strerror>", "not a regular file
// (fifo)" (directory, character device...), "file is larger than 65536 bytes".
LoadResult LoadFile(const std::string& path);

// The embedded defaults alone: parsed on the first call, the same configuration on every later one.
LoadResult LoadDefault();

}  // namespace diskprobe::config
