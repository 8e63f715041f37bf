#include "parsers/mmc_ios.h"

#include <array>

#include "util/strings.h"

namespace diskprobe::parsers {

namespace {

// "<n> Hz"
std::optional<std::uint64_t> ParseHz(std::string_view v) {
  if (v.size() < 3 || !v.ends_with("Hz")) return std::nullopt;
  return util::ParseNumber<std::uint64_t>(util::Trim(v.substr(0, v.size() - 2)));
}

struct CodeText {
  unsigned code;
  std::string text;
};

// "<n> (<text>)"
std::optional<CodeText> ParseCodeText(std::string_view v) {
  const auto open = v.find('(');
  if (open == std::string_view::npos || v.back() != ')') return std::nullopt;
  auto code = util::ParseNumber<std::uint64_t>(util::Trim(v.substr(0, open)));
  if (!code || *code > 0xffff) return std::nullopt;
  return CodeText{static_cast<unsigned>(*code), std::string(v.substr(open + 1, v.size() - open - 2))};
}

// "3.3 ~ 3.4 V" or "1.65 - 1.95 V"; "invalid" -> nullopt.
std::optional<std::pair<double, double>> ParseVddRange(std::string_view t) {
  if (t.size() < 2 || !t.ends_with('V')) return std::nullopt;
  t = util::Trim(t.substr(0, t.size() - 1));
  auto sep = t.find('~');
  if (sep == std::string_view::npos) sep = t.find(" - ");
  if (sep == std::string_view::npos) return std::nullopt;
  auto lo = util::ParseNumber<double>(util::Trim(t.substr(0, sep)));
  auto hi = util::ParseNumber<double>(util::Trim(t.substr(t[sep] == '~' ? sep + 1 : sep + 3)));
  if (!lo || !hi) return std::nullopt;
  return std::make_pair(*lo, *hi);
}

constexpr std::array<std::string_view, 11> kTiming{"legacy",       "mmc high-speed", "sd high-speed", "sd uhs SDR12",
                                                   "sd uhs SDR25", "sd uhs SDR50",   "sd uhs SDR104", "sd uhs DDR50",
                                                   "mmc DDR52",    "mmc HS200",      "mmc HS400"};

}  // namespace

std::optional<std::string_view> MmcTimingName(unsigned code) {
  if (code >= kTiming.size()) return std::nullopt;
  return kTiming[code];
}

ParseResult<MmcIos> ParseMmcIos(std::string_view text) {
  MmcIos ios;
  bool any = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const std::string_view line = util::Trim(raw);
    if (line.empty()) continue;

    const auto colon = line.find(':');
    bool ok = false;
    if (colon != std::string_view::npos) {
      const std::string_view key = util::Trim(line.substr(0, colon));
      const std::string_view val = util::Trim(line.substr(colon + 1));
      // A malformed line never overwrites a value parsed earlier.
      if (key == "clock") {
        if (auto hz = ParseHz(val)) ios.clock_hz = hz, ok = true;
      } else if (key == "actual clock") {
        if (auto hz = ParseHz(val)) ios.actual_clock_hz = hz, ok = true;
      } else if (auto ct = ParseCodeText(val)) {
        ok = true;
        if (key == "vdd") {
          ios.vdd_code = ct->code;
          if (auto r = ParseVddRange(ct->text)) {
            ios.vdd_min_volts = r->first;
            ios.vdd_max_volts = r->second;
          }
        } else if (key == "bus mode") {
          ios.bus_mode = ct->code;
          ios.bus_mode_name = ct->text;
        } else if (key == "chip select") {
          ios.chip_select = ct->code;
          ios.chip_select_name = ct->text;
        } else if (key == "power mode") {
          ios.power_mode = ct->code;
          ios.power_mode_name = ct->text;
        } else if (key == "bus width") {
          ios.bus_width_code = ct->code;
          // "(4 bits)"; the kernel prints 1 << code.
          const auto sp = ct->text.find(' ');
          auto bits = util::ParseNumber<std::uint64_t>(std::string_view(ct->text).substr(0, sp));
          if (bits) ios.bus_width_bits = static_cast<unsigned>(*bits);
          else if (ct->code < 8) ios.bus_width_bits = 1u << ct->code;
        } else if (key == "timing spec") {
          ios.timing_code = ct->code;
          ios.timing_name = ct->text;
        } else if (key == "signal voltage") {
          ios.signal_voltage_code = ct->code;
          std::string_view t = ct->text;
          if (t.size() > 2 && t.ends_with(" V"))
            ios.signal_voltage_volts = util::ParseNumber<double>(t.substr(0, t.size() - 2));
        } else if (key == "driver type") {
          ios.driver_type_code = ct->code;
          constexpr std::string_view kPrefix = "driver type ";
          if (ct->text.size() == kPrefix.size() + 1 && ct->text.starts_with(kPrefix)) ios.driver_type = ct->text.back();
        } else {
          ok = false;
        }
      }
    }
    if (ok) any = true;
    else ios.unparsed_lines.emplace_back(raw);
  }
  if (!any) return ParseResult<MmcIos>::Fail("ios: no recognised line");
  // mmc_ios_show() prints these seven lines on every kernel (signal voltage and driver type came
  // later; actual clock only when the driver sets it). Without one of them the file was cut off
  // or is not an ios file: a partial reading would pass for the card's state.
  std::string missing;
  auto need = [&missing](bool have, const char* key) {
    if (!have) missing += std::string(missing.empty() ? "" : ", ") + "'" + key + "'";
  };
  need(ios.clock_hz.has_value(), "clock");
  need(ios.vdd_code.has_value(), "vdd");
  need(ios.bus_mode.has_value(), "bus mode");
  need(ios.chip_select.has_value(), "chip select");
  need(ios.power_mode.has_value(), "power mode");
  need(ios.bus_width_code.has_value(), "bus width");
  need(ios.timing_code.has_value(), "timing spec");
  if (!missing.empty()) return ParseResult<MmcIos>::Fail("ios: incomplete, no " + missing + " line");
  return ParseResult<MmcIos>::Ok(std::move(ios));
}

}  // namespace diskprobe::parsers
