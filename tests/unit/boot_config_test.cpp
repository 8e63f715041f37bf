#include "parsers/boot_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "pi_samples.h"

namespace {

using namespace diskprobe::parsers;
using diskprobe::test_pi::read_sample;
using Map = std::map<std::string, std::string>;
using Params = std::vector<std::pair<std::string, std::string>>;

BoardModel board(const char* model) { return ParseBoardModel(model).value(); }
const char* kPi3BPlus = "Raspberry Pi 3 Model B Plus Rev 1.3";
const char* kPi4B = "Raspberry Pi 4 Model B Rev 1.4";
const char* kCm4 = "Raspberry Pi Compute Module 4 Rev 1.0";
const char* kPi5 = "Raspberry Pi 5 Model B Rev 1.0";
const char* kZero2W = "Raspberry Pi Zero 2 W Rev 1.0";

BootConfig parse_sample(const std::string& file, const char* model, BootFileLoader loader = {}) {
  BootConfigInput in;
  in.board = board(model);
  in.load_file = std::move(loader);
  return ParseBootConfig(read_sample("config-txt", file), in);
}

std::vector<std::string> overlay_names(const BootConfig& c) {
  std::vector<std::string> out;
  for (const auto& o : c.overlays) out.push_back(o.name);
  return out;
}

std::vector<std::string> section_headers(const BootConfig& c) {
  std::vector<std::string> out;
  for (const auto& s : c.sections) out.push_back(s.header);
  return out;
}

TEST(BootConfig, Sample01SdhostOverlayOverclock50) {
  const auto c = parse_sample("01-sdhost-overlay-overclock50.txt", kPi3BPlus);
  ASSERT_EQ(c.overlays.size(), 1u);
  EXPECT_EQ(c.overlays[0].name, "sdhost");
  EXPECT_EQ(c.overlays[0].params, (Params{{"overclock_50", "100"}}));
  EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(100000000));
  ASSERT_TRUE(c.sd_overclock_where);
  EXPECT_EQ(c.sd_overclock_where->line, 3u);
  EXPECT_EQ(c.sd_settings, (Map{{"sd_overclock", "100"}, {"sd_overlay", "sdhost"}}));
  EXPECT_TRUE(c.sections.empty());  // implicit [all]
  EXPECT_TRUE(c.diagnostics.empty());
  EXPECT_TRUE(c.dtparams.empty());
  // On a Pi 4 the line is still configured; the board says it is ignored.
  const auto pi4 = parse_sample("01-sdhost-overlay-overclock50.txt", kPi4B);
  EXPECT_EQ(pi4.sd_overclock_hz, std::optional<std::uint64_t>(100000000));
  EXPECT_FALSE(board(kPi4B).sd_overclock_applies);
  EXPECT_TRUE(board(kPi3BPlus).sd_overclock_applies);
}

TEST(BootConfig, Sample02SdOverclockWithAvoidPwmPll) {
  const auto c = parse_sample("02-sd-overclock-with-avoid-pwm-pll.txt", kPi3BPlus);
  EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(100000000));
  EXPECT_EQ(c.sd_settings, (Map{{"sd_overclock", "100"}, {"core_freq", "500"}, {"avoid_pwm_pll", "1"}}));
  EXPECT_EQ(c.settings, (Map{{"core_freq", "500"}, {"avoid_pwm_pll", "1"}}));
  EXPECT_EQ(c.dtparams, (Map{{"sd_overclock", "100"}}));
  // The expected 83333333 Hz actual clock is not knowable from config.txt:
  // it comes from debugfs ios "actual clock" (mmc_ios parser).
}

std::optional<std::string> distroconfig(std::string_view path) {
  if (path == "distroconfig.txt") return read_sample("config-txt", "04-openwrt-distroconfig-included-file.txt");
  return std::nullopt;
}

TEST(BootConfig, Sample03And04IncludeFollowedAndModelSections) {
  const auto pi4 = parse_sample("03-openwrt-include-and-model-sections.txt", kPi4B, distroconfig);
  EXPECT_EQ(pi4.files, (std::vector<std::string>{"config.txt", "distroconfig.txt"}));
  EXPECT_EQ(section_headers(pi4), (std::vector<std::string>{"pi0w", "pi02", "pi3", "pi4", "pi2", "pi3", "pi4", "all"}));
  EXPECT_EQ(pi4.dtparams, (Map{{"i2c_arm", "on"}, {"audio", "on"}}));  // two params, one line
  EXPECT_EQ(overlay_names(pi4), (std::vector<std::string>{"disable-bt"}));
  EXPECT_EQ(pi4.overlays[0].where.file, "distroconfig.txt");
  EXPECT_TRUE(pi4.sd_settings.empty());
  EXPECT_TRUE(pi4.diagnostics.empty());
  EXPECT_TRUE(pi4.unevaluated.empty());
  EXPECT_FALSE(pi4.settings.count("enable_uart"));  // only in a comment

  // Pi 5: [pi4] does not match, nothing applies.
  const auto pi5 = parse_sample("03-openwrt-include-and-model-sections.txt", kPi5, distroconfig);
  EXPECT_TRUE(pi5.dtparams.empty());
  EXPECT_TRUE(pi5.overlays.empty());

  // CM4 also sees [pi4].
  const auto cm4 = parse_sample("03-openwrt-include-and-model-sections.txt", kCm4, distroconfig);
  EXPECT_EQ(cm4.dtparams, (Map{{"i2c_arm", "on"}, {"audio", "on"}}));
  EXPECT_EQ(overlay_names(cm4), (std::vector<std::string>{"disable-bt"}));

  // Zero 2 W sees [pi0w] and [pi02]: disable-bt twice, no dtparams.
  const auto z2 = parse_sample("03-openwrt-include-and-model-sections.txt", kZero2W, distroconfig);
  EXPECT_EQ(overlay_names(z2), (std::vector<std::string>{"disable-bt", "disable-bt"}));
  EXPECT_TRUE(z2.dtparams.empty());
}

TEST(BootConfig, Sample04FilterStateCarriesAcrossInclude) {
  // 04 ends inside [pi4]; the parent's next line is [pi2] in 03, so build a
  // parent where it matters: the line after the include stays under [pi4].
  BootConfigInput in;
  in.board = board(kPi3BPlus);
  in.load_file = distroconfig;
  const auto c = ParseBootConfig("include distroconfig.txt\ncore_freq=250\n[all]\nenable_uart=1\n", in);
  EXPECT_FALSE(c.settings.count("core_freq"));  // still under [pi4] from the included file
  EXPECT_EQ(c.settings.at("enable_uart"), "1");
  EXPECT_EQ(overlay_names(c), (std::vector<std::string>{"disable-bt"}));  // [pi3] part
}

TEST(BootConfig, IncludeWithoutLoaderMissingLoopAndDepth) {
  BootConfigInput in;
  in.board = board(kPi4B);
  auto c = ParseBootConfig("include extra.txt\n", in);
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_EQ(c.diagnostics[0].kind, "include_not_followed");

  in.load_file = [](std::string_view) { return std::optional<std::string>{}; };
  c = ParseBootConfig("include extra.txt\n", in);
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_EQ(c.diagnostics[0].kind, "include_missing");
  EXPECT_EQ(c.diagnostics[0].where.line, 1u);

  const std::map<std::string, std::string> files{{"a.txt", "sd_debug_a=1\ninclude b.txt\n"},
                                                 {"b.txt", "dtparam=sd_debug=on\ninclude a.txt\ninclude config.txt\n"}};
  in.load_file = [&files](std::string_view p) -> std::optional<std::string> {
    auto it = files.find(std::string(p));
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  c = ParseBootConfig("include a.txt\n", in);
  EXPECT_EQ(c.files, (std::vector<std::string>{"config.txt", "a.txt", "b.txt"}));
  ASSERT_EQ(c.diagnostics.size(), 2u);
  EXPECT_EQ(c.diagnostics[0].kind, "include_loop");
  EXPECT_EQ(c.diagnostics[0].where.file, "b.txt");
  EXPECT_EQ(c.diagnostics[0].where.line, 2u);
  EXPECT_EQ(c.diagnostics[1].kind, "include_loop");  // back to config.txt
  EXPECT_EQ(c.sd_settings, (Map{{"sd_debug", "on"}}));

  // Depth: a chain d0 -> d1 -> d2 ... stops at max_include_depth.
  in.max_include_depth = 2;
  in.load_file = [](std::string_view p) -> std::optional<std::string> { return "include " + std::string(p) + "x\n"; };
  c = ParseBootConfig("include d\n", in);
  EXPECT_EQ(c.files, (std::vector<std::string>{"config.txt", "d", "dx"}));
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_EQ(c.diagnostics[0].kind, "include_depth");
}

// The fan-out that took 14.8 s and 274 MB before these bounds: every file includes six others,
// none of them on the current include stack, so no loop is seen and the expansion is 6^depth.
TEST(BootConfig, IncludeFanOutIsBoundedAndEachFileLoadedOnce) {
  std::map<std::string, int> loads;
  BootConfigInput in;
  in.board = board(kPi4B);
  in.load_file = [&loads](std::string_view p) -> std::optional<std::string> {
    ++loads[std::string(p)];
    const int n = p[1] - '0';  // "f<n>.txt" includes the six files after it, modulo 9
    std::string text = "enable_uart=1\n";
    for (int k = 1; k <= 6; ++k) text += "include f" + std::to_string((n + k) % 9) + ".txt\n";
    return text;
  };
  const auto c = ParseBootConfig("include f0.txt\ninclude f1.txt\n", in);
  EXPECT_LE(c.includes_followed, in.max_includes);
  EXPECT_EQ(c.includes_followed, in.max_includes);  // the limit was reached, not something smaller
  EXPECT_EQ(c.files.size(), in.max_includes + 1u);
  EXPECT_EQ(c.loads, 9u);
  for (const auto& [path, n] : loads) EXPECT_EQ(n, 1) << path;
  std::size_t limit = 0;
  for (const auto& d : c.diagnostics) limit += d.kind == "include_limit";
  EXPECT_GT(limit, 0u);
  EXPECT_EQ(c.settings.at("enable_uart"), "1");

  // The byte bound stops one big file included over and over.
  BootConfigInput big = in;
  big.load_file = [](std::string_view) -> std::optional<std::string> {
    return std::string(300000, '#') + "\ninclude same.txt\n";
  };
  big.max_include_depth = 100;
  const auto b = ParseBootConfig("include a.txt\ninclude a.txt\ninclude a.txt\ninclude a.txt\n", big);
  EXPECT_EQ(b.includes_followed, 3u);  // 3 x 300 kB fit in 1 MiB, a fourth does not
  ASSERT_FALSE(b.diagnostics.empty());
  EXPECT_EQ(b.diagnostics.back().kind, "include_limit");
}

// Found by tests/fuzz (boot_config target: a 1 KiB input, 14 s before the bounds above): one file
// that includes itself under several names ("a", "./a", ".//a"), which loop detection, going by
// the name as written, cannot see. The include bound stops it like the fan-out above.
TEST(BootConfig, SelfIncludeUnderSeveralNamesIsBounded) {
  const std::string text = "include a\ninclude ./a\ninclude .//a\ninclude b\ninclude ./b\ndtparam=sd_overclock=62\n";
  BootConfigInput in;
  in.board = board(kPi4B);
  in.load_file = [&text](std::string_view) { return std::optional<std::string>(text); };
  const auto c = ParseBootConfig(text, in);
  EXPECT_EQ(c.includes_followed, in.max_includes);
  EXPECT_EQ(c.files.size(), in.max_includes + 1u);
  std::size_t limit = 0;
  for (const auto& d : c.diagnostics) limit += d.kind == "include_limit";
  EXPECT_GT(limit, 0u);
  EXPECT_EQ(c.sd_overclock_hz, 62000000u);  // what was evaluated still counts
}

TEST(BootConfig, Sample05CommentedSdPollOnce) {
  const auto pi4 = parse_sample("05-haos-commented-sd-poll-once.txt", kPi4B);
  EXPECT_TRUE(pi4.sd_settings.empty());
  EXPECT_FALSE(pi4.settings.count("enable_uart"));
  EXPECT_FALSE(pi4.dtparams.count("sd_poll_once"));
  EXPECT_EQ(pi4.dtparams, (Map{{"audio", "on"}}));
  EXPECT_EQ(pi4.settings,
            (Map{{"disable_splash", "1"}, {"kernel", "u-boot.bin"}, {"max_framebuffers", "2"}, {"arm_boost", "1"}}));
  EXPECT_EQ(overlay_names(pi4), (std::vector<std::string>{"vc4-fkms-v3d"}));

  const auto pi3 = parse_sample("05-haos-commented-sd-poll-once.txt", kPi3BPlus);
  EXPECT_EQ(pi3.settings, (Map{{"disable_splash", "1"}, {"kernel", "u-boot.bin"}, {"initial_turbo", "0"}}));
  EXPECT_TRUE(pi3.overlays.empty());
}

TEST(BootConfig, Sample07SdtweakBarePollOnce) {
  const auto c = parse_sample("07-sdtweak-poll-once-overlay.txt", kPi3BPlus);
  ASSERT_EQ(c.overlays.size(), 1u);
  EXPECT_EQ(c.overlays[0].name, "sdtweak");
  EXPECT_EQ(c.overlays[0].params, (Params{{"poll_once", "on"}}));
  EXPECT_EQ(c.sd_settings, (Map{{"sd_poll_once", "on"}, {"sd_overlay", "sdtweak"}}));
  EXPECT_FALSE(c.sd_overclock_hz);
}

TEST(BootConfig, Sample08SdCqeNumeric) {
  const auto c = parse_sample("08-pi5-sd-cqe-2.txt", kPi5);
  EXPECT_EQ(c.sd_settings, (Map{{"sd_cqe", "2"}}));
  EXPECT_EQ(c.dtparams, (Map{{"sd_cqe", "2"}}));
}

TEST(BootConfig, Sample10SdCqeBareFlag) {
  const auto c = parse_sample("10-pi5-sd-cqe-bare-flag.txt", kPi5);
  EXPECT_EQ(c.sd_settings, (Map{{"sd_cqe", "on"}}));
}

TEST(BootConfig, Sample11Cm4RepeatedAllSections) {
  const auto cm4 = parse_sample("11-cm4-repeated-all-sections-enable-uart.txt", kCm4);
  EXPECT_EQ(cm4.settings.at("enable_uart"), "1");
  EXPECT_EQ(cm4.settings.at("otg_mode"), "1");
  EXPECT_EQ(cm4.settings.at("arm_boost"), "1");
  EXPECT_EQ(cm4.settings.at("gpu_mem"), "128");
  EXPECT_EQ(overlay_names(cm4), (std::vector<std::string>{"dwc2", "vc4-fkms-v3d", "anyspi", "w5500"}));
  EXPECT_EQ(cm4.overlays[2].params, (Params{{"spi0-0", "on"}, {"dev", "\"w5500\""}, {"speed", "30000000"}}));
  EXPECT_EQ(cm4.sd_settings, (Map{{"enable_uart", "1"}}));
  EXPECT_EQ(section_headers(cm4), (std::vector<std::string>{"cm4", "all", "pi4", "all"}));

  const auto pi4 = parse_sample("11-cm4-repeated-all-sections-enable-uart.txt", kPi4B);
  EXPECT_FALSE(pi4.settings.count("otg_mode"));
  EXPECT_EQ(pi4.settings.at("arm_boost"), "1");
  EXPECT_EQ(pi4.settings.at("enable_uart"), "1");
  EXPECT_EQ(overlay_names(pi4), (std::vector<std::string>{"vc4-fkms-v3d", "anyspi", "w5500"}));
}

TEST(BootConfig, Sample13LineWithoutEqualsAndColonParam) {
  const auto c = parse_sample("13-line-without-equals-and-colon-param.txt", kPi4B);
  EXPECT_EQ(c.settings.at("over_voltage"), "5.5");  // kept raw
  EXPECT_EQ(c.settings.at("hdmi_mode"), "87");      // last wins
  EXPECT_FALSE(c.settings.count("gpu_feq"));
  EXPECT_FALSE(c.settings.count("hdmi_cvt"));
  ASSERT_EQ(c.diagnostics.size(), 1u);
  EXPECT_EQ(c.diagnostics[0].kind, "unparsed_line");
  EXPECT_EQ(c.diagnostics[0].where.line, 14u);
  EXPECT_NE(c.diagnostics[0].message.find("hdmi_cvt 480 320 60 6 0 0 0"), std::string::npos);
  ASSERT_EQ(c.overlays.size(), 1u);
  EXPECT_EQ(c.overlays[0].params, (Params{{"fps", "50"}, {"speed", "24000000"}, {"debug", "32:rotate=90"}}));
  EXPECT_TRUE(c.sd_settings.empty());
}

TEST(BootConfig, UnevaluableSectionsAreReportedNotApplied) {
  BootConfigInput in;
  in.board = board(kPi4B);
  const auto c = ParseBootConfig(
      "[HDMI:0]\nhdmi_mode=4\n"
      "[EDID=DEL-DELL_U2422H]\ncmdline=c.txt\n"
      "[all]\n[gpio4=1]\nsd_overclock_x=1\n"
      "[all]\n[0x12345678]\ndtparam=sd_overclock=100\n"
      "[all]\n[pi9]\ncore_freq=1\n"
      "[all]\n[board-type=0x11]\nenable_uart=1\n"
      "[all]\n[tryboot]\ncore_freq_min=1\n"
      "[all]\n[none]\nenable_uart=0\n[pi4]\navoid_pwm_pll=1\n[all]\n",
      in);
  ASSERT_EQ(c.unevaluated.size(), 7u);
  EXPECT_EQ(c.unevaluated[0].header, "HDMI:0");
  // [HDMI:0] and [EDID=..] are different filter types: they combine, so
  // cmdline= is skipped under both.
  EXPECT_EQ(c.unevaluated[0].skipped_lines, (std::vector<std::string>{"hdmi_mode=4", "cmdline=c.txt"}));
  EXPECT_EQ(c.unevaluated[1].header, "EDID=DEL-DELL_U2422H");
  EXPECT_EQ(c.unevaluated[1].skipped_lines, (std::vector<std::string>{"cmdline=c.txt"}));
  EXPECT_EQ(c.unevaluated[2].header, "gpio4=1");
  EXPECT_EQ(c.unevaluated[3].header, "0x12345678");
  EXPECT_EQ(c.unevaluated[3].skipped_lines, (std::vector<std::string>{"dtparam=sd_overclock=100"}));
  EXPECT_EQ(c.unevaluated[4].header, "pi9");
  EXPECT_EQ(c.unevaluated[4].reason, "unknown filter");
  EXPECT_EQ(c.unevaluated[5].header, "board-type=0x11");
  EXPECT_EQ(c.unevaluated[6].header, "tryboot");
  EXPECT_EQ(c.settings, (Map{{"avoid_pwm_pll", "1"}}));  // [none] replaced by [pi4]
  EXPECT_FALSE(c.sd_overclock_hz);
  EXPECT_TRUE(c.dtparams.empty());
}

TEST(BootConfig, UnknownBoardLeavesModelSectionsUnevaluated) {
  BootConfigInput in;  // no board
  const auto c = ParseBootConfig("enable_uart=1\n[pi4]\ncore_freq=500\n[all]\ndtparam=sd_overclock=80\n", in);
  EXPECT_EQ(c.settings.at("enable_uart"), "1");
  EXPECT_FALSE(c.settings.count("core_freq"));
  ASSERT_EQ(c.unevaluated.size(), 1u);
  EXPECT_EQ(c.unevaluated[0].reason, "board model unknown");
  EXPECT_EQ(c.unevaluated[0].where.line, 2u);
  EXPECT_EQ(c.sections.at(0).applies, "unknown");
  EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(80000000));
}

TEST(BootConfig, DtparamScopeAfterOverlayAndLastAssignmentWins) {
  BootConfigInput in;
  in.board = board(kPi3BPlus);
  // overclock_50 after dtoverlay=sdhost goes to the overlay; "dtoverlay="
  // ends the scope; base sd_overclock later in the file wins.
  auto c = ParseBootConfig(
      "dtparam=sd_overclock=62\n"
      "dtoverlay=sdhost\n"
      "dtparam=overclock_50=84,audio=on\n"
      "dtoverlay=\n"
      "dtparam=overclock_50=1\n",
      in);
  EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(84000000));
  EXPECT_EQ(c.sd_overclock_where->line, 3u);
  EXPECT_EQ(c.overlays.at(0).params, (Params{{"overclock_50", "84"}}));
  EXPECT_EQ(c.dtparams, (Map{{"sd_overclock", "62"}, {"audio", "on"}, {"overclock_50", "1"}}));

  c = ParseBootConfig("dtoverlay=sdhost,overclock_50=100\ndtparam=sd_overclock=50\n", in);
  EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(50000000));
  c = ParseBootConfig("dtparam=sd_overclock=100\ndtparam=sd_overclock=0\n", in);
  EXPECT_FALSE(c.sd_overclock_hz);  // 0: no overclock
  EXPECT_TRUE(c.diagnostics.empty());
}

TEST(BootConfig, BadOverclockValueWhitespaceCrlfAndComments) {
  BootConfigInput in;
  in.board = board(kPi3BPlus);
  const auto c = ParseBootConfig(
      "# comment\r\n"
      "   \r\n"
      "  [pi3]  \r\n"
      "dtparam=sd_overclock=fast\r\n"
      "sd_debug_note\r\n"
      "enable_uart=1 \r\n",
      in);
  EXPECT_FALSE(c.sd_overclock_hz);
  ASSERT_EQ(c.diagnostics.size(), 2u);
  EXPECT_EQ(c.diagnostics[0].kind, "unparsed_line");
  EXPECT_EQ(c.diagnostics[0].where.line, 5u);
  EXPECT_EQ(c.diagnostics[1].kind, "bad_value");
  EXPECT_EQ(c.diagnostics[1].where.line, 4u);
  EXPECT_EQ(c.sd_settings, (Map{{"sd_overclock", "fast"}, {"enable_uart", "1"}}));
  EXPECT_EQ(c.sections.at(0).header, "pi3");
  EXPECT_EQ(c.sections.at(0).applies, "yes");
}

// A real config (sample 01) saved by a Windows editor: BOM and CRLF. The BOM used to become part
// of the first key, so the first line's setting was lost without a problem reported.
TEST(BootConfig, Utf8BomAndCrlfKeepTheFirstLine) {
  std::string text = read_sample("config-txt", "01-sdhost-overlay-overclock50.txt");
  std::string crlf;
  for (char ch : text) {
    if (ch == '\n') crlf += "\r\n";
    else crlf.push_back(ch);
  }
  // The BOM goes before the first line, here the sample's comment; also test it on a setting line.
  for (const std::string& variant : {"\xEF\xBB\xBF" + crlf, std::string("\xEF\xBB\xBF") + "dtoverlay=sdhost,overclock_50=100\r\n"}) {
    BootConfigInput in;
    in.board = board(kPi3BPlus);
    const auto c = ParseBootConfig(variant, in);
    EXPECT_EQ(c.sd_overclock_hz, std::optional<std::uint64_t>(100000000));
    EXPECT_EQ(c.sd_settings, (Map{{"sd_overclock", "100"}, {"sd_overlay", "sdhost"}}));
    EXPECT_TRUE(c.diagnostics.empty());
  }
}

// One setting, one value: every spelling the firmware accepts for a boolean dtparam gives the
// same sd_settings value; sd_cqe keeps the Pi 5 tri-state's 2.
TEST(BootConfig, BooleanDtparamsAreNormalised) {
  BootConfigInput in;
  in.board = board(kPi5);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"dtparam=sd_cqe", "on"},        {"dtparam=sd_cqe=on", "on"},   {"dtparam=sd_cqe=1", "on"},
      {"dtparam=sd_cqe=yes", "on"},    {"dtparam=sd_cqe=TRUE", "on"}, {"dtparam=sd_cqe=okay", "on"},
      {"dtparam=sd_cqe=off", "off"},   {"dtparam=sd_cqe=0", "off"},   {"dtparam=sd_cqe=no", "off"},
      {"dtparam=sd_cqe=false", "off"}, {"dtparam=sd_cqe=Off", "off"}, {"dtparam=sd_cqe=2", "2"},
      {"dtparam=sd_poll_once=1", "on"}, {"dtparam=sd_debug=no", "off"},
  };
  for (const auto& [line, want] : cases) {
    const auto c = ParseBootConfig(line + "\n", in);
    const std::string key = line.substr(8, line.find('=', 8) == std::string::npos ? std::string::npos
                                                                                   : line.find('=', 8) - 8);
    EXPECT_EQ(c.sd_settings, (Map{{key, want}})) << line;
    EXPECT_TRUE(c.diagnostics.empty()) << line;
  }
  // The sdtweak overlay's own spelling is the same setting.
  EXPECT_EQ(ParseBootConfig("dtoverlay=sdtweak,poll_once=true\n", in).sd_settings,
            (Map{{"sd_poll_once", "on"}, {"sd_overlay", "sdtweak"}}));
  const auto bad = ParseBootConfig("dtparam=sd_cqe=maybe\n", in);
  EXPECT_TRUE(bad.sd_settings.empty());
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].kind, "bad_value");
  EXPECT_EQ(bad.diagnostics[0].message, "sd_cqe=maybe: not a boolean (on/off, yes/no, true/false, 1/0)");
}

// Anything the parser does not understand is a problem with its line, not silently dropped.
TEST(BootConfig, LinesNotUnderstoodAreProblems) {
  BootConfigInput in;
  in.board = board(kPi4B);
  const auto c = ParseBootConfig("[pi4\n=1\n\x01\x02=3\narm_boost=1\n", in);
  ASSERT_EQ(c.diagnostics.size(), 3u);
  EXPECT_EQ(c.diagnostics[0].kind, "unparsed_line");
  EXPECT_EQ(c.diagnostics[0].where.line, 1u);
  EXPECT_EQ(c.diagnostics[0].message, "section header without ']': \"[pi4\"");
  EXPECT_EQ(c.diagnostics[1].where.line, 2u);
  EXPECT_EQ(c.diagnostics[2].where.line, 3u);
  EXPECT_EQ(c.diagnostics[2].message, "not a setting name: \"\\x01\\x02\"");
  EXPECT_EQ(c.settings, (Map{{"arm_boost", "1"}}));
}

}  // namespace
