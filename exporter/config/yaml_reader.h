#pragma once
// Typed, validating access to a yaml-cpp document that reports every problem as
// "file:line:col: key.path: message" and keeps going, so one run shows all errors.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace diskprobe::config {

// One validation problem. line and column are 1-based (yaml-cpp marks are 0-based).
struct Error {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;     // dotted key path, e.g. "devices.discovery_interval"; empty for syntax errors
  std::string message;
  // "file:line:col: path: message" (or "file:line:col: message" without a path).
  std::string ToString() const;
};

// Parses a Prometheus-style duration: one or more <integer><unit> with unit in
// ms, s, m, h, d, w, largest first ("1h30m", "500ms", "30s"). nullopt on anything else or overflow.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s);

// Parses a size: a bare integer (bytes) or an integer followed by B, KiB, MiB, GiB, TiB (powers of
// 1024) or kB, MB, GB, TB (powers of 1000). nullopt on anything else (fractions, "KB", overflow).
std::optional<std::uint64_t> ParseSize(std::string_view s);

// An anchored regular expression with its source text.
struct Pattern {
  std::string source;
  std::regex re;  // ECMAScript; always used with std::regex_match, so anchored at both ends
  bool FullMatch(std::string_view s) const;
};

// Validating reader. Each accessor reads the value at `key` of `map` into *out when the key is
// present and valid, records an Error when it is present and invalid, and leaves *out untouched
// when absent (the caller pre-fills defaults). `path` is the dotted path of `map`.
class YamlReader {
 public:
  YamlReader(std::string file, std::vector<Error>* errors) : file_(std::move(file)), errors_(errors) {}

  // True when `node` is a mapping (or null/absent: treated as empty). Reports keys not in `known`
  // and duplicate keys, each at the key's position.
  bool CheckMap(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> known);
  bool CheckMap(const YAML::Node& node, const std::string& path, std::span<const std::string_view> known);

  // A duration from min to max inclusive (a maximum keeps timers far from overflow).
  void ReadDuration(const YAML::Node& map, const std::string& path, const char* key,
                    std::chrono::milliseconds* out, std::chrono::milliseconds min, std::chrono::milliseconds max);
  void ReadSize(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                std::uint64_t min, std::uint64_t max);
  void ReadBool(const YAML::Node& map, const std::string& path, const char* key, bool* out);
  void ReadString(const YAML::Node& map, const std::string& path, const char* key, std::string* out);
  // A decimal integer from min to max inclusive.
  void ReadUint(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                std::uint64_t min, std::uint64_t max);
  // A number from 0 to 1 inclusive (a fraction, e.g. 0.5 = 50 %).
  void ReadRatio(const YAML::Node& map, const std::string& path, const char* key, double* out);
  // A list of strings.
  void ReadStrings(const YAML::Node& map, const std::string& path, const char* key, std::vector<std::string>* out);
  void ReadPatterns(const YAML::Node& map, const std::string& path, const char* key, std::vector<Pattern>* out);

  void Fail(const YAML::Node& at, const std::string& path, std::string message);
  // "file:line:col: path" of `at`, the prefix Fail() would give an error there (for checks made
  // later, e.g. loading a certificate the file names).
  std::string Where(const YAML::Node& at, const std::string& path) const;
  static std::string Join(const std::string& path, std::string_view key);

 private:
  // Returns the scalar at map[key] or an undefined node; reports a non-scalar.
  YAML::Node Scalar(const YAML::Node& map, const std::string& path, const char* key, const char* what);

  std::string file_;
  std::vector<Error>* errors_;
};

}  // namespace diskprobe::config
