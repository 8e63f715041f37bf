#include "config/config.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "util/file.h"

namespace diskprobe::config {
namespace {

using std::chrono::milliseconds;

// Applies the document `root` onto *cfg, recording problems in `reader`.
void Apply(const YAML::Node& root, YamlReader& r, Config* cfg) {
  if (!r.CheckMap(root, "", {"devices"})) return;
  if (!root.IsDefined() || root.IsNull()) return;
  const YAML::Node devices = root["devices"];
  if (r.CheckMap(devices, "devices", {"include", "exclude", "discovery_interval"})) {
    r.ReadPatterns(devices, "devices", "include", &cfg->devices.include);
    r.ReadPatterns(devices, "devices", "exclude", &cfg->devices.exclude);
    r.ReadDuration(devices, "devices", "discovery_interval", &cfg->devices.discovery_interval, milliseconds(1000));
  }
}

// Parses one document onto *cfg. Returns false (with errors) on problems.
bool ParseInto(std::string_view yaml, const std::string& name, Config* cfg, std::vector<Error>* errors) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    Error err;
    err.file = name;
    err.line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    err.column = e.mark.column < 0 ? 0 : e.mark.column + 1;
    err.message = "YAML syntax error: " + e.msg;
    errors->push_back(std::move(err));
    return false;
  }
  std::size_t before = errors->size();
  YamlReader reader(name, errors);
  try {
    Apply(root, reader, cfg);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on some malformed trees (e.g. a key that is itself a map); keep it an error.
    Error err;
    err.file = name;
    err.line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    err.column = e.mark.column < 0 ? 0 : e.mark.column + 1;
    err.message = e.msg;
    errors->push_back(std::move(err));
  }
  std::stable_sort(errors->begin() + static_cast<std::ptrdiff_t>(before), errors->end(),
                   [](const Error& a, const Error& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
  return errors->size() == before;
}

}  // namespace

bool DevicesConfig::Selects(std::string_view name) const {
  bool included = include.empty();
  for (const auto& p : include) included = included || p.FullMatch(name);
  if (!included) return false;
  for (const auto& p : exclude)
    if (p.FullMatch(name)) return false;
  return true;
}

LoadResult LoadDefault() {
  LoadResult out;
  auto cfg = std::make_shared<Config>();
  cfg->source = kDefaultConfigName;
  if (ParseInto(kDefaultConfigYaml, kDefaultConfigName, cfg.get(), &out.errors)) out.config = std::move(cfg);
  return out;
}

LoadResult LoadString(std::string_view yaml, const std::string& source_name) {
  LoadResult out = LoadDefault();
  if (!out.config) return out;  // a broken embedded default is a build defect; tests catch it
  auto cfg = std::make_shared<Config>(*out.config);
  cfg->source = source_name;
  out.config.reset();
  if (ParseInto(yaml, source_name, cfg.get(), &out.errors)) out.config = std::move(cfg);
  return out;
}

LoadResult LoadFile(const std::string& path) {
  util::FileContent f = util::ReadFile(path, 4 << 20);
  if (!f.ok()) {
    LoadResult out;
    out.errors.push_back(Error{path, 0, 0, "", std::string("cannot read: ") + std::strerror(f.error)});
    return out;
  }
  return LoadString(f.text, path);
}

}  // namespace diskprobe::config
