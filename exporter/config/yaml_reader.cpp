#include "config/yaml_reader.h"

#include <charconv>
#include <limits>
#include <set>

namespace diskprobe::config {
namespace {

bool ToU64(std::string_view t, std::uint64_t* v) {
  if (t.empty()) return false;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v, 10);
  return ec == std::errc() && p == t.data() + t.size();
}

bool MulOverflows(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b;
}

const char* TypeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    default: return "nothing";
  }
}

}  // namespace

std::string Error::ToString() const {
  std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  if (!path.empty()) s += path + ": ";
  return s + message;
}

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s) {
  struct Unit { std::string_view name; std::uint64_t ms; };
  // Order matters twice: the largest first (to enforce "largest first"), and "ms" before "m".
  static constexpr Unit kUnits[] = {{"w", 7 * 86400000ull}, {"d", 86400000ull}, {"h", 3600000ull},
                                    {"m", 60000ull},        {"s", 1000ull},      {"ms", 1ull}};
  if (s.empty()) return std::nullopt;
  std::uint64_t total = 0;
  int last_unit = -1;
  while (!s.empty()) {
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
    std::uint64_t n;
    if (digits == 0 || !ToU64(s.substr(0, digits), &n)) return std::nullopt;
    s.remove_prefix(digits);
    int unit = -1;
    if (s.substr(0, 2) == "ms") unit = 5;
    else if (!s.empty()) {
      for (int i = 0; i < 5; ++i)
        if (s[0] == kUnits[i].name[0]) unit = i;
    }
    if (unit < 0 || unit <= last_unit) return std::nullopt;
    s.remove_prefix(kUnits[unit].name.size());
    last_unit = unit;
    if (MulOverflows(n, kUnits[unit].ms)) return std::nullopt;
    std::uint64_t add = n * kUnits[unit].ms;
    if (total > std::numeric_limits<std::int64_t>::max() - add) return std::nullopt;
    total += add;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(total));
}

std::optional<std::uint64_t> ParseSize(std::string_view s) {
  struct Unit { std::string_view name; std::uint64_t mult; };
  static constexpr Unit kUnits[] = {{"B", 1},
                                    {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30}, {"TiB", 1ull << 40},
                                    {"kB", 1000ull},     {"MB", 1000000ull},  {"GB", 1000000000ull},
                                    {"TB", 1000000000000ull}};
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::uint64_t n;
  if (digits == 0 || !ToU64(s.substr(0, digits), &n)) return std::nullopt;
  std::string_view unit = s.substr(digits);
  if (unit.empty()) return n;
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      if (MulOverflows(n, u.mult)) return std::nullopt;
      return n * u.mult;
    }
  }
  return std::nullopt;
}

bool Pattern::FullMatch(std::string_view s) const {
  return std::regex_match(s.begin(), s.end(), re);
}

std::string YamlReader::Join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string YamlReader::Where(const YAML::Node& at, const std::string& path) const {
  YAML::Mark m = at.Mark();
  return file_ + ":" + std::to_string(m.line < 0 ? 0 : m.line + 1) + ":" + std::to_string(m.column < 0 ? 0 : m.column + 1) +
         ": " + path;
}

void YamlReader::Fail(const YAML::Node& at, const std::string& path, std::string message) {
  Error e;
  e.file = file_;
  YAML::Mark m = at.Mark();
  e.line = m.line < 0 ? 0 : m.line + 1;
  e.column = m.column < 0 ? 0 : m.column + 1;
  e.path = path;
  e.message = std::move(message);
  errors_->push_back(std::move(e));
}

bool YamlReader::CheckMap(const YAML::Node& node, const std::string& path,
                          std::initializer_list<std::string_view> known) {
  return CheckMap(node, path, std::span<const std::string_view>(known.begin(), known.size()));
}

bool YamlReader::CheckMap(const YAML::Node& node, const std::string& path, std::span<const std::string_view> known) {
  if (!node.IsDefined() || node.IsNull()) return true;
  if (!node.IsMap()) {
    Fail(node, path, std::string("must be a mapping, got ") + TypeName(node));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node k = it->first;  // by value: *it is a temporary pair
    if (!k.IsScalar()) {
      Fail(k, path, "keys must be plain strings");
      continue;
    }
    const std::string key = k.Scalar();
    if (!seen.insert(key).second) {
      Fail(k, Join(path, key), "duplicate key");
      continue;
    }
    bool ok = false;
    for (auto kn : known) ok = ok || kn == key;
    if (!ok) {
      std::string list;
      for (auto kn : known) list += (list.empty() ? "" : ", ") + std::string(kn);
      Fail(k, Join(path, key), "unknown key (known keys: " + list + ")");
    }
  }
  return true;
}

YAML::Node YamlReader::Scalar(const YAML::Node& map, const std::string& path, const char* key, const char* what) {
  if (!map.IsDefined() || !map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node v = map[key];
  if (!v.IsDefined()) return v;
  if (!v.IsScalar()) {
    Fail(v, Join(path, key), std::string("must be ") + what + ", got " + TypeName(v));
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return v;
}

void YamlReader::ReadDuration(const YAML::Node& map, const std::string& path, const char* key,
                              std::chrono::milliseconds* out, std::chrono::milliseconds min,
                              std::chrono::milliseconds max) {
  YAML::Node v = Scalar(map, path, key, "a duration");
  if (!v.IsDefined()) return;
  auto d = ParseDuration(v.Scalar());
  if (!d) {
    Fail(v, Join(path, key), "invalid duration \"" + v.Scalar() +
                                 "\": want an integer and a unit (ms, s, m, h, d, w), largest first, e.g. 30s, 5m, 1h30m");
    return;
  }
  if (*d < min) {
    Fail(v, Join(path, key), "duration \"" + v.Scalar() + "\" is below the minimum of " +
                                 std::to_string(min.count()) + "ms");
    return;
  }
  if (*d > max) {
    Fail(v, Join(path, key), "duration \"" + v.Scalar() + "\" is above the maximum of " +
                                 std::to_string(max.count() / 1000) + "s");
    return;
  }
  *out = *d;
}

void YamlReader::ReadSize(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                          std::uint64_t min, std::uint64_t max) {
  YAML::Node v = Scalar(map, path, key, "a size");
  if (!v.IsDefined()) return;
  auto sz = ParseSize(v.Scalar());
  if (!sz) {
    Fail(v, Join(path, key), "invalid size \"" + v.Scalar() +
                                 "\": want bytes or an integer with B, KiB, MiB, GiB, TiB, kB, MB, GB or TB, e.g. 4KiB, 16MiB");
    return;
  }
  if (*sz < min || *sz > max) {
    Fail(v, Join(path, key), "size \"" + v.Scalar() + "\" is outside " + std::to_string(min) + ".." +
                                 std::to_string(max) + " bytes");
    return;
  }
  *out = *sz;
}

void YamlReader::ReadBool(const YAML::Node& map, const std::string& path, const char* key, bool* out) {
  YAML::Node v = Scalar(map, path, key, "true or false");
  if (!v.IsDefined()) return;
  const std::string& s = v.Scalar();
  // YAML 1.2's core schema: true|True|TRUE, false|False|FALSE, unquoted. A quoted "true" is a
  // string (yaml-cpp tags quoted scalars "!", plain ones "?"); YAML 1.1's yes/no/on/off are
  // refused rather than guessed.
  const bool plain = v.Tag() != "!";
  if (plain && (s == "true" || s == "True" || s == "TRUE")) *out = true;
  else if (plain && (s == "false" || s == "False" || s == "FALSE")) *out = false;
  else if (!plain) Fail(v, Join(path, key), "must be true or false, got the string \"" + s + "\" (remove the quotes)");
  else Fail(v, Join(path, key), "must be true or false, got \"" + s + "\"");
}

void YamlReader::ReadString(const YAML::Node& map, const std::string& path, const char* key, std::string* out) {
  YAML::Node v = Scalar(map, path, key, "a string");
  if (v.IsDefined()) *out = v.Scalar();
}

void YamlReader::ReadUint(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                          std::uint64_t min, std::uint64_t max) {
  YAML::Node v = Scalar(map, path, key, "an integer");
  if (!v.IsDefined()) return;
  std::uint64_t n;
  if (!ToU64(v.Scalar(), &n) || n < min || n > max) {
    Fail(v, Join(path, key), "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                                 ", got \"" + v.Scalar() + "\"");
    return;
  }
  *out = n;
}

void YamlReader::ReadRatio(const YAML::Node& map, const std::string& path, const char* key, double* out) {
  YAML::Node v = Scalar(map, path, key, "a number from 0 to 1");
  if (!v.IsDefined()) return;
  const std::string& s = v.Scalar();
  double d = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec != std::errc() || p != s.data() + s.size() || !(d >= 0 && d <= 1)) {
    Fail(v, Join(path, key), "must be a number from 0 to 1 (a fraction: 0.5 = 50 %), got \"" + s + "\"");
    return;
  }
  *out = d;
}

void YamlReader::ReadStrings(const YAML::Node& map, const std::string& path, const char* key,
                             std::vector<std::string>* out) {
  if (!map.IsDefined() || !map.IsMap()) return;
  YAML::Node v = map[key];
  if (!v.IsDefined()) return;
  const std::string p = Join(path, key);
  if (v.IsNull()) {
    out->clear();
    return;
  }
  if (!v.IsSequence()) {
    Fail(v, p, std::string("must be a list of strings, got ") + TypeName(v));
    return;
  }
  std::vector<std::string> result;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].IsScalar()) {
      Fail(v[i], p + "[" + std::to_string(i) + "]", std::string("must be a string, got ") + TypeName(v[i]));
      return;
    }
    result.push_back(v[i].Scalar());
  }
  *out = std::move(result);
}

void YamlReader::ReadPatterns(const YAML::Node& map, const std::string& path, const char* key,
                              std::vector<Pattern>* out) {
  if (!map.IsDefined() || !map.IsMap()) return;
  YAML::Node v = map[key];
  if (!v.IsDefined()) return;
  const std::string p = Join(path, key);
  if (v.IsNull()) {
    out->clear();
    return;
  }
  if (!v.IsSequence()) {
    Fail(v, p, std::string("must be a list of regular expressions, got ") + TypeName(v));
    return;
  }
  std::vector<Pattern> result;
  bool ok = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    YAML::Node item = v[i];
    const std::string ip = p + "[" + std::to_string(i) + "]";
    if (!item.IsScalar()) {
      Fail(item, ip, std::string("must be a regular expression string, got ") + TypeName(item));
      ok = false;
      continue;
    }
    try {
      result.push_back(Pattern{item.Scalar(), std::regex(item.Scalar(), std::regex::ECMAScript)});
    } catch (const std::regex_error& e) {
      Fail(item, ip, "invalid regular expression \"" + item.Scalar() + "\": " + e.what());
      ok = false;
    }
  }
  if (ok) *out = std::move(result);
}

}  // namespace diskprobe::config
