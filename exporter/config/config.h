#pragma once
// The exporter's configuration: config/default.yml (embedded in the binary) with an optional
// file applied on top. See config/default.yml for the meaning and default of every key.
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/yaml_reader.h"

namespace diskprobe::config {

// The text of config/default.yml, embedded at build time (generated default_config.cpp).
extern const std::string_view kDefaultConfigYaml;
inline constexpr const char* kDefaultConfigName = "<embedded config/default.yml>";

struct DevicesConfig {
  std::vector<Pattern> include;  // empty: every whole disk
  std::vector<Pattern> exclude;
  std::chrono::milliseconds discovery_interval{0};

  // True when a whole disk named `name` is to be monitored under these filters.
  bool Selects(std::string_view name) const;
};

struct Config {
  std::string source;  // file the config came from, or kDefaultConfigName
  DevicesConfig devices;
};

struct LoadResult {
  std::shared_ptr<const Config> config;  // null when errors is not empty
  std::vector<Error> errors;              // every problem found, in document order
};

// Parses `yaml` (named `source_name` in errors) on top of the embedded defaults. Never throws:
// YAML syntax errors, unknown keys, wrong types, bad durations/sizes/regexes are all in errors.
LoadResult LoadString(std::string_view yaml, const std::string& source_name);

// Reads and parses `path`; an unreadable file is one error "path:0:0: cannot read: <strerror>".
LoadResult LoadFile(const std::string& path);

// The embedded defaults alone.
LoadResult LoadDefault();

}  // namespace diskprobe::config
