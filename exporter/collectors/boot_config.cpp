#include "collectors/boot_config.h"
#include "sources/board_model.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "parsers/boot_config.h"
#include "util/file.h"
#include "util/log.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;
using FileStamp = BootConfigCollector::FileStamp;

// stat() of `path`; nullopt with *err = errno when it fails.
std::optional<FileStamp> Stamp(const std::string& path, int* err) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *err = errno;
    return std::nullopt;
  }
  *err = 0;
  return FileStamp{path, static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec,
                   static_cast<long long>(st.st_size), static_cast<unsigned long long>(st.st_ino)};
}

std::string Dirname(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `path` as seen from inside the host root (the label shows /boot/firmware/config.txt, not the
// container's /host/boot/...).
std::string InRoot(const std::string& path, const std::string& rootfs) {
  std::string root = rootfs;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root != "/" && path.compare(0, root.size(), root) == 0 && path.size() > root.size() && path[root.size()] == '/')
    return path.substr(root.size());
  return path;
}

// The SD settings shown as labels of diskprobe_boot_sd_config_info, in label order. An SD overlay
// parameter appears under its base dtparam name (overclock_50 -> sd_overclock).
constexpr const char* kInfoKeys[] = {"avoid_pwm_pll", "core_freq",    "core_freq_min", "enable_uart",
                                     "sd_cqe",        "sd_debug",     "sd_force_pio",  "sd_overclock",
                                     "sd_overlay",    "sd_pio_limit", "sd_poll_once"};

}  // namespace

CollectResult BootConfigCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  const bool explicit_path = !ctx.paths.bootconfig.empty();
  std::vector<std::string> candidates;
  if (explicit_path) candidates = {ctx.paths.bootconfig};
  else
    candidates = {util::JoinPath(ctx.paths.rootfs, "boot/firmware/config.txt"),
                  util::JoinPath(ctx.paths.rootfs, "boot/config.txt")};
  std::optional<FileStamp> main;
  int err = 0;
  for (const auto& c : candidates) {
    main = Stamp(c, &err);
    if (main || err != ENOENT) break;
  }
  if (!main) {
    stamps_.clear();
    cached_text_.clear();
    // No config.txt: not a Pi, or /boot not visible; nothing to read is not a failure.
    if (!explicit_path && err == ENOENT) return CollectResult::Ok();
    return CollectResult::Failed(candidates.front() + ": " + std::strerror(err));
  }

  // Unchanged files: the cached result.
  bool same = !stamps_.empty() && stamps_.front() == *main;
  for (std::size_t i = 1; same && i < stamps_.size(); ++i) {
    int e = 0;
    auto s = Stamp(stamps_[i].path, &e);
    same = s && *s == stamps_[i];
  }
  if (same) {
    out.Text(cached_text_);
    return CollectResult::Ok();
  }

  util::FileContent text = util::ReadFile(main->path, 1 << 20);
  if (!text.ok()) {
    stamps_.clear();
    cached_text_.clear();
    return CollectResult::Failed(main->path + ": " + std::strerror(text.error));
  }
  if (!board_read_) {
    board_ = sources::ReadBoardModel(ctx.paths.sysfs, ctx.paths.procfs);
    board_read_ = true;
  }
  std::vector<FileStamp> stamps = {*main};
  const std::string boot_dir = Dirname(main->path);
  parsers::BootConfigInput in;
  in.board = board_;
  in.file_name = "config.txt";
  in.load_file = [&stamps, &boot_dir](std::string_view name) -> std::optional<std::string> {
    std::string p = util::JoinPath(boot_dir, name);
    int e = 0;
    auto s = Stamp(p, &e);
    util::FileContent f = util::ReadFile(p, 1 << 20);
    if (!s || !f.ok()) return std::nullopt;
    stamps.push_back(*s);
    return std::move(f.text);
  };
  parsers::BootConfig cfg = parsers::ParseBootConfig(text.text, in);

  std::string text_out;
  FamilySink fams(&text_out);
  // kInfoKeys in order, with file between enable_uart and sd_cqe: labels stay sorted.
  const std::string file = InRoot(main->path, ctx.paths.rootfs);
  std::vector<LabelView> labels;
  for (const char* k : kInfoKeys) {
    auto it = cfg.sd_settings.find(k);
    labels.push_back({k, it == cfg.sd_settings.end() ? std::string_view() : std::string_view(it->second)});
    if (std::string_view(k) == "enable_uart") labels.push_back({"file", file});
  }
  fams.Family("diskprobe_boot_sd_config_info",
              "SD-related settings in force in config.txt for this board; value 1. Empty label: not set.",
              MetricType::Gauge);
  fams.Sample(labels, 1);
  fams.Family("diskprobe_boot_sd_overclock_hertz",
              "SD clock requested by sd_overclock / sdhost overclock_50 in config.txt; a ceiling, see "
              "diskprobe_mmc_ios_actual_clock_hertz for what the bus runs at.",
              MetricType::Gauge);
  if (cfg.sd_overclock_hz) fams.Sample({}, static_cast<double>(*cfg.sd_overclock_hz));
  fams.Family("diskprobe_boot_sd_overclock_honoured",
              "1 when this board's SD host driver applies sd_overclock (bcm2835-sdhost, Pi 0-3), 0 when it "
              "ignores it (Pi 4, Pi 5).",
              MetricType::Gauge);
  if (board_ && board_->raspberry_pi && board_->family != parsers::BoardFamily::kUnknown)
    fams.Sample({}, board_->sd_overclock_applies ? 1 : 0);
  fams.Family("diskprobe_boot_config_unevaluated_sections",
              "Conditional sections of config.txt whose filter the exporter cannot evaluate; their settings "
              "are not applied.",
              MetricType::Gauge);
  fams.Sample({}, static_cast<double>(cfg.unevaluated.size()));
  std::map<std::string, int> kinds;
  for (const auto& d : cfg.diagnostics) ++kinds[d.kind];
  fams.Family("diskprobe_boot_config_problems",
              "Lines of config.txt (and its includes) that could not be used, by kind.", MetricType::Gauge);
  for (const auto& [k, n] : kinds) fams.Sample({{"kind", k}}, n);
  log::Info("boot config read", {{"file", main->path},
                                 {"files", std::to_string(cfg.files.size())},
                                 {"sd_overclock_hz", cfg.sd_overclock_hz ? std::to_string(*cfg.sd_overclock_hz) : ""},
                                 {"unevaluated_sections", std::to_string(cfg.unevaluated.size())},
                                 {"problems", std::to_string(cfg.diagnostics.size())}});

  stamps_ = std::move(stamps);
  cached_text_ = std::move(text_out);
  out.Text(cached_text_);
  return CollectResult::Ok();
}

}  // namespace diskprobe::collectors
