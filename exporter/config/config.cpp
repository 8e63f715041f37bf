#include "config/config.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <tuple>

#include "parsers/sd_vendor_health.h"
#include "util/file.h"

namespace diskprobe::config {
namespace {

using std::chrono::milliseconds;

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

// Reads one settings key of a probe kind, with the limits that keep its runs sane.
void ReadProbeKey(const YAML::Node& node, const std::string& path, ProbeKey key, YamlReader& r, ProbeSettings* s) {
  switch (key) {
    case ProbeKey::kEnabled: r.ReadBool(node, path, "enabled", &s->enabled); return;
    case ProbeKey::kInterval:
      r.ReadDuration(node, path, "interval", &s->interval, milliseconds(1000), std::chrono::hours(24 * 7));
      return;
    case ProbeKey::kOps: {
      std::uint64_t ops = s->ops;
      r.ReadUint(node, path, "ops", &ops, 1, 4096);
      s->ops = static_cast<std::uint32_t>(ops);
      return;
    }
    case ProbeKey::kBlockSize: r.ReadSize(node, path, "block_size", &s->block_size, 512, 1 * kMiB); return;
    case ProbeKey::kSize: r.ReadSize(node, path, "size", &s->size, 4096, kGiB); return;
    case ProbeKey::kRequestSize: r.ReadSize(node, path, "request_size", &s->request_size, 4096, 64 * kMiB); return;
  }
}

void ApplyProbeSettings(const YAML::Node& node, const std::string& path, const ProbeKindRow& row, YamlReader& r,
                        ProbeSettings* s) {
  std::vector<std::string_view> keys;
  for (std::size_t i = 0; i < kProbeKeyNames.size(); ++i)
    if (row.Accepts(static_cast<ProbeKey>(i))) keys.push_back(kProbeKeyNames[i]);
  if (!r.CheckMap(node, path, keys)) return;
  for (std::size_t i = 0; i < kProbeKeyNames.size(); ++i)
    if (row.Accepts(static_cast<ProbeKey>(i))) ReadProbeKey(node, path, static_cast<ProbeKey>(i), r, s);
  // Where a rule about a merged value (this node's or the defaults') is reported: at the key when
  // this node sets it, else at the node.
  auto at = [&](const char* key) { return node[key].IsDefined() ? node[key] : node; };
  if (row.Accepts(ProbeKey::kSize) && row.Accepts(ProbeKey::kRequestSize)) {
    // Requests are O_DIRECT, so aligned to the largest logical block size (4 KiB), and the run
    // reads or writes whole requests: a size the requests do not fill was silently cut (a 1 MiB
    // size with 4 MiB requests did nothing and counted an ok run).
    if (s->request_size % 4096 != 0)
      r.Fail(at("request_size"), path + ".request_size",
             "must be a multiple of 4KiB, got " + std::to_string(s->request_size));
    else if (s->request_size > s->size)
      r.Fail(at("request_size"), path + ".request_size",
             "must not exceed size (" + std::to_string(s->size) + "), got " + std::to_string(s->request_size));
    else if (s->size % s->request_size != 0)
      r.Fail(at("size"), path + ".size",
             "must be a multiple of request_size (" + std::to_string(s->request_size) + "), got " +
                 std::to_string(s->size));
  }
  // The row's unit (ProbeKindRow::block_unit says why per kind): 5000 failed every write run
  // with EINVAL, 1000 was silently written as 4096.
  if (row.Accepts(ProbeKey::kBlockSize) && row.block_unit != 0 && s->block_size % row.block_unit != 0)
    r.Fail(at("block_size"), path + ".block_size",
           "must be a multiple of " +
               std::string(row.block_unit % 1024 == 0 ? std::to_string(row.block_unit / 1024) + "KiB"
                                                      : std::to_string(row.block_unit)) +
               ", got " + std::to_string(s->block_size));
}

void ApplyProbeSet(const YAML::Node& node, const std::string& path, YamlReader& r, ProbeSet* set) {
  std::vector<std::string_view> names;
  for (const ProbeKindRow& row : kProbeKindTable) names.push_back(row.name);
  if (!r.CheckMap(node, path, names)) return;
  if (!node.IsDefined() || node.IsNull()) return;
  for (const ProbeKindRow& row : kProbeKindTable) {
    std::string name(row.name);
    const YAML::Node sub = node[name];
    if (sub.IsDefined()) ApplyProbeSettings(sub, YamlReader::Join(path, name), row, r, &(*set)[row.kind]);
  }
}

void ApplyProbes(const YAML::Node& node, YamlReader& r, ProbesConfig* p) {
  const std::string path = "probes";
  if (!r.CheckMap(node, path,
                  {"enabled", "state_directory", "write_directories", "probe_file_size", "io_priority",
                   "busy_threshold", "busy_window", "jitter", "op_deadline", "write_budget_per_day", "free_space_floor",
                   "free_space_floor_ratio", "defaults", "devices"}))
    return;
  if (!node.IsDefined() || node.IsNull()) return;
  r.ReadBool(node, path, "enabled", &p->enabled);
  r.ReadString(node, path, "state_directory", &p->state_directory);
  if (p->state_directory.empty() || p->state_directory[0] != '/')
    r.Fail(node["state_directory"].IsDefined() ? node["state_directory"] : node, path + ".state_directory",
           "must be an absolute path");
  r.ReadStrings(node, path, "write_directories", &p->write_directories);
  for (std::size_t i = 0; i < p->write_directories.size(); ++i) {
    const std::string& d = p->write_directories[i];
    const YAML::Node item = node["write_directories"][i];
    const std::string item_path = path + ".write_directories[" + std::to_string(i) + "]";
    if (d.empty() || d[0] != '/') {
      r.Fail(item, item_path, "\"" + d + "\" is not an absolute path");
      continue;
    }
    // The same directory twice ("/a", "/a/", "/a/./") would run its probes twice and export
    // the same series twice, which Prometheus rejects.
    auto norm = [](const std::string& x) {
      std::string n = std::filesystem::path(x).lexically_normal().string();
      while (n.size() > 1 && n.back() == '/') n.pop_back();
      return n;
    };
    for (std::size_t j = 0; j < i; ++j)
      if (norm(p->write_directories[j]) == norm(d)) {
        r.Fail(item, item_path, "\"" + d + "\" is listed twice (also at write_directories[" + std::to_string(j) + "])");
        break;
      }
  }
  r.ReadSize(node, path, "probe_file_size", &p->probe_file_size, kMiB, 1 * kGiB);
  std::string prio;
  r.ReadString(node, path, "io_priority", &prio);
  if (!prio.empty()) {
    if (prio == "idle") p->io_priority = IoPriority::kIdle;
    else if (prio == "best-effort") p->io_priority = IoPriority::kBestEffort;
    else if (prio == "none") p->io_priority = IoPriority::kNone;
    else r.Fail(node["io_priority"], path + ".io_priority", "must be idle, best-effort or none, got \"" + prio + "\"");
  }
  r.ReadRatio(node, path, "busy_threshold", &p->busy_threshold);
  r.ReadDuration(node, path, "busy_window", &p->busy_window, milliseconds(100), std::chrono::minutes(1));
  r.ReadRatio(node, path, "jitter", &p->jitter);
  r.ReadDuration(node, path, "op_deadline", &p->op_deadline, milliseconds(10), std::chrono::hours(1));
  r.ReadSize(node, path, "write_budget_per_day", &p->write_budget_per_day, 0, 1024 * kGiB);
  r.ReadSize(node, path, "free_space_floor", &p->free_space_floor, 0, 1024 * kGiB);
  r.ReadRatio(node, path, "free_space_floor_ratio", &p->free_space_floor_ratio);
  ApplyProbeSet(node["defaults"], path + ".defaults", r, &p->defaults);
  const YAML::Node devices = node["devices"];
  if (devices.IsDefined() && !devices.IsNull()) {
    if (!devices.IsMap()) {
      r.Fail(devices, path + ".devices", "must be a mapping from a device-name pattern to probe settings");
    } else {
      // Overrides start from the (possibly changed) defaults of this same file.
      std::vector<std::pair<Pattern, ProbeSet>> list;
      for (auto it = devices.begin(); it != devices.end(); ++it) {
        const std::string key = it->first.Scalar();
        const std::string sub = path + ".devices." + key;
        Pattern pat;
        // The key is the pattern: a refused 40 KB one is shown cut in the path too.
        if (!r.CompilePatternAt(it->first, path + ".devices." + (key.size() <= 64 ? key : key.substr(0, 64) + "..."),
                                key, &pat))
          continue;
        ProbeSet set = p->defaults;
        ApplyProbeSet(it->second, sub, r, &set);
        list.emplace_back(std::move(pat), set);
      }
      p->devices = std::move(list);
    }
  }
}

// health.sd_vendor: which cards get CMD56, with which layout, how often, how long to wait.
void ApplySdVendor(const YAML::Node& node, YamlReader& r, SdVendorHealthConfig* sd) {
  const std::string path = "health.sd_vendor";
  if (!r.CheckMap(node, path, {"devices", "layout", "interval", "timeout"})) return;
  if (!node.IsDefined() || node.IsNull()) return;
  r.ReadDuration(node, path, "interval", &sd->interval, std::chrono::minutes(1), std::chrono::hours(24 * 7));
  r.ReadDuration(node, path, "timeout", &sd->timeout, milliseconds(100), std::chrono::seconds(60));
  if (node["layout"].IsDefined()) {
    std::string layout = sd->layout;
    r.ReadString(node, path, "layout", &layout);
    if (layout == "auto" || parsers::FindSdVendorLayout(layout)) {
      sd->layout = layout;
    } else {
      std::string known = "auto";
      for (const auto& l : parsers::SdVendorLayouts()) known += ", " + std::string(l.name);
      r.Fail(node["layout"], path + ".layout", "unknown layout \"" + layout + "\" (known: " + known + ")");
    }
  }
  if (node["devices"].IsDefined()) {
    std::vector<std::string> devices;
    r.ReadStrings(node, path, "devices", &devices);
    std::size_t i = 0;
    for (const std::string& d : devices) {
      // A kernel name of a whole disk: the device node is <path.devfs>/<name>, so no path
      // separators or dots may reach it.
      bool ok = !d.empty() && d.size() <= 32;
      for (char c : d) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
      if (!ok) r.Fail(node["devices"][i], path + ".devices", "\"" + d + "\" is not a kernel disk name (mmcblk0)");
      // mmcblk<N>p<M>: a partition; the kernel takes MMC_IOC_CMD only on the whole card.
      const auto p = d.rfind('p');
      const auto digits = [&d](std::size_t from, std::size_t to) {
        if (from >= to) return false;
        for (std::size_t k = from; k < to; ++k)
          if (d[k] < '0' || d[k] > '9') return false;
        return true;
      };
      if (ok && d.starts_with("mmcblk") && p != std::string::npos && p > 6 && digits(6, p) && digits(p + 1, d.size()))
        r.Fail(node["devices"][i], path + ".devices",
               "\"" + d + "\" is a partition: CMD56 goes to the whole card (" + d.substr(0, p) + ")");
      for (std::size_t j = 0; j < i; ++j)
        if (devices[j] == d) r.Fail(node["devices"][i], path + ".devices", "\"" + d + "\" is listed twice");
      ++i;
    }
    sd->devices = std::move(devices);
  }
}

// True when `type` is a smartctl device type this exporter passes on: a letter, then lowercase
// letters, digits, ',' and '+' ("sat,12", "usbjmicron,x,0", "sat+megaraid,0"), at most 32. It is
// one argv element of its own, never seen by a shell; the character set keeps it from reading as
// another option or a path.
bool IsSmartDeviceType(std::string_view type) {
  if (type.empty() || type.size() > 32 || type[0] < 'a' || type[0] > 'z') return false;
  for (char c : type)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ',' || c == '+')) return false;
  return true;
}

// health.smart_device_types: kernel-name pattern -> smartctl -d TYPE, in file order.
void ApplySmartDeviceTypes(const YAML::Node& node, YamlReader& r, HealthConfig* h) {
  const std::string path = "health.smart_device_types";
  if (!node.IsDefined() || node.IsNull()) return;
  if (!node.IsMap()) return r.Fail(node, path, "must be a mapping from a device-name pattern to a smartctl -d type");
  std::vector<std::pair<Pattern, std::string>> list;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (!it->first.IsScalar()) {
      r.Fail(it->first, path, "keys must be plain strings (device-name patterns)");
      continue;
    }
    const std::string key = it->first.Scalar();
    const std::string sub = path + "." + (key.size() <= 64 ? key : key.substr(0, 64) + "...");
    if (!seen.insert(key).second) {
      r.Fail(it->first, sub, "duplicate key");
      continue;
    }
    Pattern pat;
    if (!r.CompilePatternAt(it->first, sub, key, &pat)) continue;
    if (!it->second.IsScalar()) {
      r.Fail(it->second, sub, "must be a smartctl device type (sat, sntrealtek, usbjmicron ...)");
      continue;
    }
    const std::string type = it->second.Scalar();
    if (!IsSmartDeviceType(type)) {
      r.Fail(it->second, sub,
             QuoteExcerpt(type) + " is not a smartctl device type (a letter, then a-z, 0-9, ',' or '+'; at most 32)");
      continue;
    }
    list.emplace_back(std::move(pat), type);
  }
  h->smart_device_types = std::move(list);
}

// Applies the document `root` onto *cfg, recording problems in `reader`.
void Apply(const YAML::Node& root, YamlReader& r, Config* cfg) {
  if (!r.CheckMap(root, "", {"devices", "probes", "health"})) return;
  if (!root.IsDefined() || root.IsNull()) return;
  if (root["probes"].IsDefined()) ApplyProbes(root["probes"], r, &cfg->probes);
  const YAML::Node health = root["health"];
  if (r.CheckMap(health, "health", {"nvme_interval", "sd_vendor", "smart_interval", "smartctl_timeout", "smartctl_path",
                                  "smart_device_types"})) {
    r.ReadDuration(health, "health", "nvme_interval", &cfg->health.nvme_interval, std::chrono::seconds(1),
                   std::chrono::hours(24 * 7));
    if (health.IsDefined() && !health.IsNull()) ApplySdVendor(health["sd_vendor"], r, &cfg->health.sd_vendor);
    r.ReadDuration(health, "health", "smart_interval", &cfg->health.smart_interval, std::chrono::seconds(1),
                   std::chrono::hours(24 * 7));
    r.ReadDuration(health, "health", "smartctl_timeout", &cfg->health.smartctl_timeout, std::chrono::seconds(1),
                   std::chrono::minutes(10));
    r.ReadString(health, "health", "smartctl_path", &cfg->health.smartctl_path);
    // Executed without a PATH search (the service's PATH is not the operator's shell's).
    if (health.IsDefined() && health.IsMap() && health["smartctl_path"].IsDefined() && !cfg->health.smartctl_path.starts_with("/"))
      r.Fail(health["smartctl_path"], "health.smartctl_path",
             "must be an absolute path, got \"" + cfg->health.smartctl_path + "\"");
    if (health.IsDefined() && health.IsMap()) ApplySmartDeviceTypes(health["smart_device_types"], r, &cfg->health);
  }
  const YAML::Node devices = root["devices"];
  if (r.CheckMap(devices, "devices", {"include", "exclude", "exclude_unless_included", "skip_empty_removable",
                                          "discovery_interval"})) {
    r.ReadPatterns(devices, "devices", "include", &cfg->devices.include);
    r.ReadPatterns(devices, "devices", "exclude", &cfg->devices.exclude);
    r.ReadPatterns(devices, "devices", "exclude_unless_included", &cfg->devices.exclude_unless_included);
    r.ReadBool(devices, "devices", "skip_empty_removable", &cfg->devices.skip_empty_removable);
    r.ReadDuration(devices, "devices", "discovery_interval", &cfg->devices.discovery_interval, milliseconds(1000),
                   std::chrono::hours(24));
  }
}

// Parses one document onto *cfg. Returns false (with errors) on problems.
bool ParseInto(std::string_view yaml, const std::string& name, Config* cfg, std::vector<Error>* errors) {
  YAML::Node root;
  if (!LoadDocument(yaml, name, &root, errors)) return false;
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
  std::stable_sort(
      errors->begin() + static_cast<std::ptrdiff_t>(before), errors->end(),
      [](const Error& a, const Error& b) { return std::tie(a.line, a.column) < std::tie(b.line, b.column); });
  return errors->size() == before;
}

}  // namespace

const ProbeSet& ProbesConfig::For(std::string_view device) const {
  for (const auto& [pat, set] : devices)
    if (pat.FullMatch(device)) return set;
  return defaults;
}

std::vector<std::string> ProbesConfig::WriteDirectories() const {
  if (write_directories.empty()) return {state_directory};
  return write_directories;
}

bool DevicesConfig::Selects(std::string_view name) const {
  bool named = false;
  for (const auto& p : include) named = named || p.FullMatch(name);
  if (!include.empty() && !named) return false;
  for (const auto& p : exclude)
    if (p.FullMatch(name)) return false;
  if (!named)
    for (const auto& p : exclude_unless_included)
      if (p.FullMatch(name)) return false;
  return true;
}

LoadResult LoadDefault() {
  // The embedded text never changes: parsed once (thread-safe static initialisation), then every
  // load and every reload starts from a copy instead of running yaml-cpp over it again.
  static const LoadResult kParsed = [] {
    LoadResult out;
    auto cfg = std::make_shared<Config>();
    cfg->source = kDefaultConfigName;
    if (ParseInto(kDefaultConfigYaml, kDefaultConfigName, cfg.get(), &out.errors)) out.config = std::move(cfg);
    return out;
  }();
  return kParsed;
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
  util::RegularFileContent f = util::ReadRegularFile(path, kMaxDocumentBytes);
  if (!f.ok()) {
    LoadResult out;
    out.errors.push_back(Error{path, 0, 0, "", f.error});
    return out;
  }
  return LoadString(f.text, path);
}

}  // namespace diskprobe::config
