#include "parsers/board_model.h"

#include <cctype>

#include "util/strings.h"

namespace diskprobe::parsers {

namespace {

struct Rule {
  std::string_view prefix;  // body after "Raspberry Pi ", before " Rev"
  BoardFamily family;
  std::string_view variant;
  bool cm;
  std::vector<std::string> filters;
};

// Longest prefixes first so "Compute Module 3 Plus" wins over "Compute Module 3".
const std::vector<Rule>& Rules() {
  static const std::vector<Rule> kRules{
      {"Compute Module 3 Plus", BoardFamily::kPi3, "CM3+", true, {"pi3", "pi3+", "cm3+"}},
      {"Compute Module 4S", BoardFamily::kPi4, "CM4S", true, {"pi4", "cm4s"}},
      {"Compute Module 5", BoardFamily::kPi5, "CM5", true, {"pi5", "cm5"}},
      {"Compute Module 4", BoardFamily::kPi4, "CM4", true, {"pi4", "cm4"}},
      {"Compute Module 3", BoardFamily::kPi3, "CM3", true, {"pi3", "cm3"}},
      {"Compute Module 0", BoardFamily::kPi0, "CM0", true, {"pi0", "pi0w", "pi02", "cm0"}},
      {"Compute Module", BoardFamily::kPi1, "CM1", true, {"pi1", "cm1"}},
      {"Zero 2 W", BoardFamily::kPi0, "Zero 2 W", false, {"pi0", "pi0w", "pi02"}},
      {"Zero W", BoardFamily::kPi0, "Zero W", false, {"pi0", "pi0w"}},
      {"Zero", BoardFamily::kPi0, "Zero", false, {"pi0"}},
      {"3 Model B Plus", BoardFamily::kPi3, "3B+", false, {"pi3", "pi3+"}},
      {"3 Model A Plus", BoardFamily::kPi3, "3A+", false, {"pi3", "pi3+"}},
      {"3 Model B", BoardFamily::kPi3, "3B", false, {"pi3"}},
      {"2 Model B", BoardFamily::kPi2, "2B", false, {"pi2"}},
      {"4 Model B", BoardFamily::kPi4, "4B", false, {"pi4"}},
      {"400", BoardFamily::kPi4, "400", false, {"pi4", "pi400"}},
      {"500+", BoardFamily::kPi5, "500+", false, {"pi5", "pi500"}},
      {"500", BoardFamily::kPi5, "500", false, {"pi5", "pi500"}},
      {"5 Model B", BoardFamily::kPi5, "5B", false, {"pi5"}},
      {"Model B Plus", BoardFamily::kPi1, "1B+", false, {"pi1"}},
      {"Model A Plus", BoardFamily::kPi1, "1A+", false, {"pi1"}},
      {"Model B", BoardFamily::kPi1, "1B", false, {"pi1"}},
      {"Model A", BoardFamily::kPi1, "1A", false, {"pi1"}},
  };
  return kRules;
}

}  // namespace

std::string_view ToString(BoardFamily f) {
  switch (f) {
    case BoardFamily::kPi0: return "pi0";
    case BoardFamily::kPi1: return "pi1";
    case BoardFamily::kPi2: return "pi2";
    case BoardFamily::kPi3: return "pi3";
    case BoardFamily::kPi4: return "pi4";
    case BoardFamily::kPi5: return "pi5";
    case BoardFamily::kUnknown: break;
  }
  return "unknown";
}

std::optional<BoardModel> ParseBoardModel(std::string_view raw) {
  if (auto nul = raw.find('\0'); nul != std::string_view::npos) raw = raw.substr(0, nul);
  raw = util::Trim(raw);
  if (raw.empty()) return std::nullopt;
  BoardModel b;
  b.model = std::string(raw);
  constexpr std::string_view kPi = "Raspberry Pi ";
  if (!raw.starts_with(kPi)) return b;
  b.raspberry_pi = true;
  std::string_view body = raw.substr(kPi.size());
  if (auto rev = body.find(" Rev "); rev != std::string_view::npos) {
    std::string_view r = body.substr(rev + 5);
    std::size_t n = 0;
    while (n < r.size() && (std::isdigit(static_cast<unsigned char>(r[n])) || r[n] == '.')) ++n;
    if (n > 0) b.revision = std::string(r.substr(0, n));
    body = body.substr(0, rev);
  }
  for (const auto& rule : Rules()) {
    // Whole-word prefix only: "500" must not claim "500+".
    if (!body.starts_with(rule.prefix)) continue;
    if (body.size() > rule.prefix.size() && body[rule.prefix.size()] != ' ') continue;
    b.family = rule.family;
    b.variant = std::string(rule.variant);
    b.compute_module = rule.cm;
    b.config_filters = rule.filters;
    break;
  }
  b.sd_overclock_applies = b.family == BoardFamily::kPi0 || b.family == BoardFamily::kPi1 ||
                           b.family == BoardFamily::kPi2 || b.family == BoardFamily::kPi3;
  return b;
}

std::optional<std::string> ModelFromCpuinfo(std::string_view cpuinfo) {
  while (!cpuinfo.empty()) {
    const auto nl = cpuinfo.find('\n');
    const std::string_view line = cpuinfo.substr(0, nl);
    cpuinfo = nl == std::string_view::npos ? std::string_view{} : cpuinfo.substr(nl + 1);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || util::Trim(line.substr(0, colon)) != "Model") continue;
    const auto v = util::Trim(line.substr(colon + 1));
    if (!v.empty()) return std::string(v);
  }
  return std::nullopt;
}

}  // namespace diskprobe::parsers
