#include "parsers/mmc_ios.h"

#include <gtest/gtest.h>

#include <string>

#include "pi_samples.h"

namespace {

using namespace diskprobe::parsers;
using diskprobe::test_pi::sample_body;

MmcIos ios_sample(const std::string& file) {
  const auto r = ParseMmcIos(sample_body("ios", file));
  EXPECT_TRUE(r) << r.error;
  EXPECT_TRUE(r.value.value_or(MmcIos{}).unparsed_lines.empty()) << file;
  return r.value.value_or(MmcIos{});
}

using OptU64 = std::optional<std::uint64_t>;
using OptU = std::optional<unsigned>;
using OptS = std::optional<std::string>;
using OptD = std::optional<double>;

// Fields shared by the .expected files: clock_hz, actual_clock_hz, vdd_code,
// vdd_range, power_mode, bus_width_bits, timing_code, timing, signal_voltage_v.
void expect_common(const MmcIos& s, OptU64 clock, OptU64 actual, unsigned vdd, OptD vmin, OptD vmax, const char* power,
                   unsigned width_bits, unsigned timing, const char* timing_name, double volts) {
  EXPECT_EQ(s.clock_hz, clock);
  EXPECT_EQ(s.actual_clock_hz, actual);
  EXPECT_EQ(s.vdd_code, OptU(vdd));
  EXPECT_EQ(s.vdd_min_volts, vmin);
  EXPECT_EQ(s.vdd_max_volts, vmax);
  EXPECT_EQ(s.power_mode_name, OptS(power));
  EXPECT_EQ(s.bus_width_bits, OptU(width_bits));
  EXPECT_EQ(s.timing_code, OptU(timing));
  EXPECT_EQ(s.timing_name, OptS(timing_name));
  EXPECT_EQ(s.signal_voltage_volts, OptD(volts));
}

TEST(MmcIos, Sample01PiSdioWifiHighSpeed) {
  const auto s = ios_sample("01-pi-onboard-sdio-wifi-mmc1-hs.txt");
  expect_common(s, 50000000, 50000000, 21, 3.3, 3.4, "on", 4, 2, "sd high-speed", 3.3);
  EXPECT_EQ(s.power_mode, OptU(2));
  EXPECT_EQ(s.bus_mode, OptU(2));
  EXPECT_EQ(s.bus_mode_name, OptS("push-pull"));
  EXPECT_EQ(s.chip_select, OptU(0));
  EXPECT_EQ(s.chip_select_name, OptS("don't care"));
  EXPECT_EQ(s.bus_width_code, OptU(2));
  EXPECT_EQ(s.signal_voltage_code, OptU(0));
  EXPECT_EQ(s.driver_type_code, OptU(0));
  EXPECT_EQ(s.driver_type, std::optional<char>('B'));
}

TEST(MmcIos, Sample02PoweredOffNoActualClock) {
  const auto s = ios_sample("02-mmc2-powered-off-no-actual-clock.txt");
  expect_common(s, 0, std::nullopt, 0, std::nullopt, std::nullopt, "off", 1, 0, "legacy", 3.3);
  EXPECT_EQ(s.power_mode, OptU(0));
  EXPECT_EQ(s.bus_width_code, OptU(0));
}

TEST(MmcIos, Sample03Enumeration100kHz) {
  const auto s = ios_sample("03-mmc2-enumeration-100khz.txt");
  expect_common(s, 100000, 100000, 21, 3.3, 3.4, "on", 1, 0, "legacy", 3.3);
}

TEST(MmcIos, Sample05Pi4ActualBelowRequested) {
  const auto s = ios_sample("05-pi4-mmc1-actual-below-requested.txt");
  expect_common(s, 50000000, 41666667, 21, 3.3, 3.4, "on", 4, 2, "sd high-speed", 3.3);
  EXPECT_NEAR(static_cast<double>(*s.actual_clock_hz) / static_cast<double>(*s.clock_hz), 0.8333, 0.00005);
}

TEST(MmcIos, Sample06Pi4ForcedHighSpeed) {
  const auto s = ios_sample("06-pi4-sdhci-quirks2-4-forced-hs.txt");
  expect_common(s, 50000000, 50000000, 21, 3.3, 3.4, "on", 4, 2, "sd high-speed", 3.3);
}

TEST(MmcIos, Sample08Pi3bPlusEmmcSpacesNotTabs) {
  const auto s = ios_sample("08-pi3bplus-emmc51-adapter-mmc-hs.txt");
  expect_common(s, 52000000, 50000000, 21, 3.3, 3.4, "on", 4, 1, "mmc high-speed", 3.3);
}

TEST(MmcIos, Sample10Rk3399NoActualClockWhileRunning) {
  const auto s = ios_sample("10-rk3399-hs-no-actual-clock.txt");
  expect_common(s, 50000000, std::nullopt, 18, 3.0, 3.1, "on", 4, 2, "sd high-speed", 3.3);
}

TEST(MmcIos, Sample12RuntimeSuspendedEmmcAt1v8) {
  const auto s = ios_sample("12-emmc-runtime-suspended-6.1-clock0-1v8.txt");
  expect_common(s, 0, std::nullopt, 0, std::nullopt, std::nullopt, "off", 1, 0, "legacy", 1.8);
  EXPECT_EQ(s.signal_voltage_code, OptU(1));
}

TEST(MmcIos, Sample13Sdr50TrailingSpaces) {
  const auto s = ios_sample("13-s905x2-sdr50-actual-off-by-one.txt");
  expect_common(s, 100000000, 99999999, 21, 3.3, 3.4, "on", 4, 5, "sd uhs SDR50", 1.8);
}

TEST(MmcIos, OldKernelWithoutVoltageAndDriverLinesCrlfAndUnknownLines) {
  const auto r = ParseMmcIos(
      "clock:\t\t25000000 Hz\r\n"
      "vdd:\t\t7 (1.65 - 1.95 V)\r\n"
      "bus mode:\t2 (push-pull)\r\n"
      "chip select:\t0 (don't care)\r\n"
      "power mode:\t2 (on)\r\n"
      "bus width:\t3 (8 bits)\r\n"
      "timing spec:\t9 (mmc HS200)\r\n"
      "future field:\t1 (whatever)\n"
      "garbage\n"
      "clock:\t\tfast\n");
  ASSERT_TRUE(r) << r.error;
  // The malformed second clock line is reported but keeps the good value.
  EXPECT_EQ(r->clock_hz, OptU64(25000000));
  EXPECT_EQ(r->vdd_code, OptU(7));
  EXPECT_EQ(r->vdd_min_volts, OptD(1.65));
  EXPECT_EQ(r->vdd_max_volts, OptD(1.95));
  EXPECT_EQ(r->bus_width_bits, OptU(8));
  EXPECT_EQ(r->timing_code, OptU(9));
  EXPECT_EQ(r->timing_name, OptS("mmc HS200"));
  EXPECT_FALSE(r->signal_voltage_volts.has_value());
  EXPECT_FALSE(r->driver_type.has_value());
  EXPECT_EQ(r->power_mode, OptU(2));
  ASSERT_EQ(r->unparsed_lines.size(), 3u);
  EXPECT_EQ(r->unparsed_lines[0], "future field:\t1 (whatever)");
  EXPECT_EQ(r->unparsed_lines[1], "garbage");
  EXPECT_EQ(r->unparsed_lines[2], "clock:\t\tfast");
}

TEST(MmcIos, InvalidNamesAndHs400EnhancedStrobe) {
  const auto r = ParseMmcIos(
      "clock:\t\t200000000 Hz\n"
      "vdd:\t\t21 (3.3 ~ 3.4 V)\n"
      "chip select:\t0 (don't care)\n"
      "power mode:\t2 (on)\n"
      "bus width:\t3 (8 bits)\n"
      "timing spec:\t10 (mmc HS400 enhanced strobe)\n"
      "signal voltage:\t2 (1.20 V)\n"
      "driver type:\t7 (invalid)\n"
      "bus mode:\t0 (invalid)\n");
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->timing_name, OptS("mmc HS400 enhanced strobe"));
  EXPECT_EQ(r->signal_voltage_volts, OptD(1.2));
  EXPECT_EQ(r->driver_type_code, OptU(7));
  EXPECT_FALSE(r->driver_type.has_value());
  EXPECT_EQ(r->bus_mode_name, OptS("invalid"));
}

TEST(MmcIos, EmptyOrForeignInputIsAnError) {
  EXPECT_FALSE(ParseMmcIos(""));
  EXPECT_FALSE(ParseMmcIos("\n\n"));
  const auto r = ParseMmcIos("MemTotal:  1024 kB\n");
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "ios: no recognised line");
}

// A read cut off after the first line (a short read, a driver crash mid-print) used to parse as a
// card at that clock with nothing else known: a success. Every real sample has all seven lines.
TEST(MmcIos, FileCutOffIsAnError) {
  const std::string full = sample_body("ios", "05-pi4-mmc1-actual-below-requested.txt");
  ASSERT_TRUE(ParseMmcIos(full));
  const std::string first = full.substr(0, full.find('\n') + 1);
  auto r = ParseMmcIos(first);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error,
            "ios: incomplete, no 'vdd', 'bus mode', 'chip select', 'power mode', 'bus width', 'timing spec' line");
  // Cut anywhere before the timing spec line: still an error; after it, a reading.
  const auto timing = full.find("timing spec:");
  ASSERT_NE(timing, std::string::npos);
  for (std::size_t cut = 1; cut < timing; cut += 7) EXPECT_FALSE(ParseMmcIos(full.substr(0, cut))) << cut;
  EXPECT_TRUE(ParseMmcIos(full.substr(0, full.find('\n', timing) + 1)));
}

TEST(MmcIos, TimingNameTableMatchesKernel) {
  EXPECT_EQ(MmcTimingName(0), std::optional<std::string_view>("legacy"));
  EXPECT_EQ(MmcTimingName(6), std::optional<std::string_view>("sd uhs SDR104"));
  EXPECT_EQ(MmcTimingName(7), std::optional<std::string_view>("sd uhs DDR50"));
  EXPECT_EQ(MmcTimingName(8), std::optional<std::string_view>("mmc DDR52"));
  EXPECT_EQ(MmcTimingName(10), std::optional<std::string_view>("mmc HS400"));
  EXPECT_FALSE(MmcTimingName(11));
}

}  // namespace
