#include "parsers/boot_config.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "util/strings.h"

namespace diskprobe::parsers {

namespace {

constexpr std::array<std::string_view, 18> kModelFilters{"pi0",  "pi0w", "pi02",  "pi1", "pi2",   "pi3",
                                                         "pi3+", "pi4",  "pi400", "pi5", "pi500", "cm0",
                                                         "cm1",  "cm3",  "cm3+",  "cm4", "cm4s",  "cm5"};

enum class Tri { kYes, kNo, kUnknown };

struct FilterState {
  // category -> (state, header, reason). Same category replaces; [all] clears.
  struct Entry {
    Tri state;
    std::string header;
    std::string reason;
    BootConfigLocation where;
    std::size_t unevaluated_index;  // into BootConfig::unevaluated when unknown
  };
  std::map<std::string, Entry> by_category;

  Tri Applies() const {
    Tri t = Tri::kYes;
    for (const auto& [cat, e] : by_category) {
      if (e.state == Tri::kNo) return Tri::kNo;
      if (e.state == Tri::kUnknown) t = Tri::kUnknown;
    }
    return t;
  }
};

// SD params of the sdhost and sdtweak overlays -> base dtparam names.
std::optional<std::string> SdOverlayParam(std::string_view name) {
  if (name == "overclock_50") return "sd_overclock";
  if (name == "poll_once") return "sd_poll_once";
  if (name == "pio_limit") return "sd_pio_limit";
  if (name == "debug") return "sd_debug";
  if (name == "force_pio") return "sd_force_pio";
  return std::nullopt;
}

// Parameters the firmware's device-tree code treats as booleans: a bare name means on, and
// on/true/yes/okay/1 and off/false/no/0 are the same settings spelt differently (overlays README,
// "Boolean parameters"). Normalised so that one setting has one label value.
bool IsBooleanSdParam(std::string_view key) {
  return key == "sd_poll_once" || key == "sd_debug" || key == "sd_force_pio" || key == "sd_cqe";
}

std::optional<std::string_view> NormaliseBoolean(std::string_view v) {
  std::string lower;
  for (char c : util::Trim(v)) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "on" || lower == "true" || lower == "yes" || lower == "okay" || lower == "1") return "on";
  if (lower == "off" || lower == "false" || lower == "no" || lower == "0") return "off";
  return std::nullopt;
}

bool IsSdOverlay(std::string_view name) { return name == "sdhost" || name == "sdtweak"; }

bool IsSdTopLevel(std::string_view key) {
  return key == "enable_uart" || key == "core_freq" || key == "core_freq_min" || key == "avoid_pwm_pll";
}

// "a=1,b,c=\"x,y\"" -> [(a,1),(b,on),(c,"x,y")]; commas inside double quotes do not split.
std::vector<std::pair<std::string, std::string>> SplitParams(std::string_view s) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string cur;
  bool quoted = false;
  auto flush = [&]() {
    std::string_view item = util::Trim(cur);
    if (!item.empty()) {
      const auto eq = item.find('=');
      if (eq == std::string_view::npos) out.emplace_back(std::string(item), "on");
      else out.emplace_back(std::string(util::Trim(item.substr(0, eq))), std::string(item.substr(eq + 1)));
    }
    cur.clear();
  };
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) flush();
    else cur.push_back(c);
  }
  flush();
  return out;
}

// Setting names are identifiers with an optional ":N" port suffix ("hdmi_mode:0") and the
// occasional dot or dash in third-party keys.
bool IsKeyChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '-' || c == '.';
}

// A diagnostic quotes the line; control bytes and bytes above 0x7e are written as \xNN so a
// binary file cannot put raw bytes into a log line.
std::string Printable(std::string_view s) {
  static constexpr std::size_t kMax = 80;
  std::string out;
  for (char ch : s.substr(0, kMax)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(ch);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  if (s.size() > kMax) out += "...";
  return out;
}

class Evaluator {
 public:
  Evaluator(const BootConfigInput& in, BootConfig& out) : in_(in), out_(out) {}

  void Run(std::string_view text, const std::string& file, unsigned depth) {
    out_.files.push_back(file);
    // Editors on Windows save a UTF-8 byte order mark; left in place it becomes part of the
    // first line's key and that setting is lost.
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    total_bytes_ += text.size();
    stack_.push_back(file);
    unsigned lineno = 0;
    while (!text.empty()) {
      const auto nl = text.find('\n');
      const std::string_view raw = text.substr(0, nl);
      text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
      ++lineno;
      Line(util::Trim(raw), BootConfigLocation{file, lineno}, depth);
    }
    stack_.pop_back();
  }

 private:
  void Line(std::string_view l, const BootConfigLocation& where, unsigned depth) {
    if (l.empty() || l.front() == '#') return;
    if (l.front() == '[') {
      const auto close = l.find(']');
      if (close != std::string_view::npos) {
        Header(std::string(l.substr(1, close - 1)), where);
        return;
      }
      Diag("unparsed_line", "section header without ']': \"" + Printable(l) + "\"", where);
      return;
    }
    const Tri applies = filters_.Applies();
    if (applies == Tri::kNo) return;
    if (applies == Tri::kUnknown) {
      // Attach to every unknown filter currently active.
      for (const auto& [cat, e] : filters_.by_category)
        if (e.state == Tri::kUnknown) out_.unevaluated[e.unevaluated_index].skipped_lines.emplace_back(l);
      return;
    }

    if (l.starts_with("include") && l.size() > 7 && std::isspace(static_cast<unsigned char>(l[7]))) {
      Include(std::string(util::Trim(l.substr(8))), where, depth);
      return;
    }
    const auto eq = l.find('=');
    if (eq == std::string_view::npos) {
      // The documented space-separated form: "initramfs <file> <address>".
      if (l.starts_with("initramfs ")) {
        out_.settings["initramfs"] = std::string(util::Trim(l.substr(10)));
        return;
      }
      Diag("unparsed_line", "no '=' in \"" + Printable(l) + "\"", where);
      return;
    }
    const std::string key(util::Trim(l.substr(0, eq)));
    const std::string value(l.substr(eq + 1));
    if (key.empty() || !std::all_of(key.begin(), key.end(), IsKeyChar)) {
      Diag("unparsed_line", "not a setting name: \"" + Printable(key) + "\"", where);
      return;
    }
    if (key == "dtoverlay") Overlay(value, where);
    else if (key == "dtparam") Dtparam(value, where);
    else {
      out_.settings[key] = value;
      if (IsSdTopLevel(key)) SdSetting(key, value, where);
    }
  }

  void Header(std::string h, const BootConfigLocation& where) {
    std::string category, reason;
    Tri state = Tri::kUnknown;
    const auto filters = in_.board ? in_.board->config_filters : std::vector<std::string>{};
    if (h == "all") {
      filters_.by_category.clear();
      out_.sections.push_back({h, where, "yes"});
      return;
    }
    if (h == "none") {
      category = "model";
      state = Tri::kNo;
    } else if (std::find(kModelFilters.begin(), kModelFilters.end(), h) != kModelFilters.end()) {
      category = "model";
      if (filters.empty()) {
        reason = "board model unknown";
      } else {
        state = std::find(filters.begin(), filters.end(), h) != filters.end() ? Tri::kYes : Tri::kNo;
      }
    } else if (h.starts_with("board-type=")) {
      category = "board-type";
      reason = "board-type needs the revision code";
    } else if (h.starts_with("EDID=")) {
      category = "edid";
      reason = "depends on the monitor connected at boot";
    } else if (h.starts_with("HDMI:")) {
      category = "hdmi";
      reason = "HDMI port selector";
    } else if (h.starts_with("gpio")) {
      category = "gpio";
      reason = "depends on a GPIO level at boot";
    } else if (h.starts_with("0x")) {
      category = "serial";
      reason = "depends on the board serial number";
    } else if (h == "tryboot") {
      category = "tryboot";
      reason = "depends on the tryboot flag";
    } else {
      category = "unknown:" + h;
      reason = "unknown filter";
    }
    std::size_t idx = 0;
    if (state == Tri::kUnknown) {
      idx = out_.unevaluated.size();
      out_.unevaluated.push_back({h, reason, where, {}});
    }
    filters_.by_category[category] = {state, h, reason, where, idx};
    const Tri now = filters_.Applies();
    out_.sections.push_back({h, where, now == Tri::kYes ? "yes" : now == Tri::kNo ? "no" : "unknown"});
  }

  void Include(const std::string& path, const BootConfigLocation& where, unsigned depth) {
    if (!in_.load_file) {
      Diag("include_not_followed", "include " + path + ": no file loader", where);
      return;
    }
    if (std::find(stack_.begin(), stack_.end(), path) != stack_.end()) {
      Diag("include_loop", "include " + path + ": already being read", where);
      return;
    }
    if (depth + 1 > in_.max_include_depth) {
      Diag("include_depth", "include " + path + ": nested deeper than " + std::to_string(in_.max_include_depth), where);
      return;
    }
    if (out_.includes_followed >= in_.max_includes) {
      Diag("include_limit",
           "include " + path + ": more than " + std::to_string(in_.max_includes) + " includes in total", where);
      return;
    }
    auto cached = loaded_.find(path);
    if (cached == loaded_.end()) {
      ++out_.loads;
      cached = loaded_.emplace(path, in_.load_file(path)).first;
    }
    const std::optional<std::string>& content = cached->second;
    if (!content) {
      Diag("include_missing", "include " + path + ": cannot read", where);
      return;
    }
    if (total_bytes_ + content->size() > in_.max_total_bytes) {
      Diag("include_limit",
           "include " + path + ": more than " + std::to_string(in_.max_total_bytes) + " bytes of text in total", where);
      return;
    }
    ++out_.includes_followed;
    Run(*content, path, depth + 1);
  }

  void Overlay(const std::string& value, const BootConfigLocation& where) {
    auto params = SplitParams(value);
    if (params.empty() || util::Trim(value).empty()) {
      current_overlay_.reset();  // "dtoverlay=" ends the overlay's dtparam scope
      return;
    }
    BootOverlay ov;
    ov.name = params.front().first;
    ov.where = where;
    params.erase(params.begin());
    out_.overlays.push_back(std::move(ov));
    current_overlay_ = out_.overlays.size() - 1;
    if (IsSdOverlay(out_.overlays.back().name)) out_.sd_settings["sd_overlay"] = out_.overlays.back().name;
    for (auto& [k, v] : params) OverlayParam(k, v, where);
  }

  void OverlayParam(const std::string& k, const std::string& v, const BootConfigLocation& where) {
    auto& ov = out_.overlays[*current_overlay_];
    ov.params.emplace_back(k, v);
    if (IsSdOverlay(ov.name))
      if (auto base = SdOverlayParam(k)) SdSetting(*base, v, where);
  }

  void Dtparam(const std::string& value, const BootConfigLocation& where) {
    for (auto& [k, v] : SplitParams(value)) {
      // An SD overlay that exports the name takes it; any other name goes
      // to the base DT (we do not know third-party overlays' params).
      if (current_overlay_ && IsSdOverlay(out_.overlays[*current_overlay_].name) && SdOverlayParam(k)) {
        OverlayParam(k, v, where);
        continue;
      }
      out_.dtparams[k] = v;
      if (k.starts_with("sd_")) SdSetting(k, v, where);
    }
  }

  void SdSetting(const std::string& k, const std::string& v, const BootConfigLocation& where) {
    if (IsBooleanSdParam(k)) {
      auto b = NormaliseBoolean(v);
      // sd_cqe is a tri-state on the Pi 5 (0 off, 1 known-good A2 cards, 2 every A2 card: overlays
      // README): 0 and 1 are the boolean spellings, any other integer is kept as written.
      if (!b && k == "sd_cqe" && util::ParseNumber<unsigned>(util::Trim(v))) {
        out_.sd_settings[k] = std::string(util::Trim(v));
        return;
      }
      if (!b) {
        Diag("bad_value", k + "=" + Printable(v) + ": not a boolean (on/off, yes/no, true/false, 1/0)", where);
        return;
      }
      out_.sd_settings[k] = std::string(*b);
      return;
    }
    out_.sd_settings[k] = v;
    if (k == "sd_overclock") sd_overclock_where_ = where;
  }

  void Diag(std::string kind, std::string msg, const BootConfigLocation& where) {
    out_.diagnostics.push_back({std::move(kind), std::move(msg), where});
  }

 public:
  void Finish() {
    auto it = out_.sd_settings.find("sd_overclock");
    if (it == out_.sd_settings.end()) return;
    const auto mhz = util::ParseNumber<std::uint64_t>(util::Trim(it->second));
    if (!mhz || *mhz > 1000000) {
      Diag("bad_value", "sd_overclock=" + it->second + ": not an integer MHz", *sd_overclock_where_);
      return;
    }
    if (*mhz == 0) return;
    out_.sd_overclock_hz = *mhz * 1000000;
    out_.sd_overclock_where = sd_overclock_where_;
  }

 private:
  const BootConfigInput& in_;
  BootConfig& out_;
  FilterState filters_;
  std::vector<std::string> stack_;
  // Loader results by path as written: one read per file per evaluation.
  std::map<std::string, std::optional<std::string>, std::less<>> loaded_;
  std::size_t total_bytes_ = 0;
  std::optional<std::size_t> current_overlay_;
  std::optional<BootConfigLocation> sd_overclock_where_;
};

}  // namespace

BootConfig ParseBootConfig(std::string_view text, const BootConfigInput& input) {
  BootConfig out;
  Evaluator ev(input, out);
  ev.Run(text, input.file_name, 0);
  ev.Finish();
  return out;
}

}  // namespace diskprobe::parsers
