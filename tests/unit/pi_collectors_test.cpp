// The Raspberry Pi collectors (mmc_ios, mmc_card, boot_config, board) on complete fixture roots
// built from the samples (tests/fixtures/roots/<name>, sources in each SOURCES.md), compared with a
// golden exposition file per root; and the failure and absence rules (a value that cannot be read is absent, not 0, and
// the reason is visible).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "collectors/board.h"
#include "collectors/boot_config.h"
#include "collectors/mmc_card.h"
#include "collectors/mmc_ios.h"
#include "config/config.h"
#include "sources/device_registry.h"
#include "collect_util.h"
#include "test_util.h"
#include "util/log.h"

namespace diskprobe::collectors {
namespace {

namespace fs = std::filesystem;
using testing::Fixture;

Paths RootPaths(const std::string& root) {
  Paths p;
  p.sysfs = root + "/sys";
  p.procfs = root + "/proc";
  p.rootfs = root;
  p.debugfs = root + "/debug";
  return p;
}

DeviceList Devices(const Paths& p) {
  auto cfg = config::LoadDefault().config;
  return DiscoverDevices(p.sysfs, cfg->devices, nullptr);
}

// One scrape of the four collectors; *ok gets each one's result in order.
struct Four {
  MmcIosCollector ios;
  MmcCardCollector card;
  BootConfigCollector boot;
  BoardCollector board;
  std::string Scrape(const Paths& p, const DeviceList& d, std::vector<bool>* ok = nullptr) {
    std::string text;
    FamilySink out(&text);
    ScrapeContext ctx{p, d};
    std::vector<bool> r;
    for (Collector* c : std::initializer_list<Collector*>{&ios, &card, &boot, &board})
      r.push_back(c->Collect(ctx, out).ok());
    if (ok != nullptr) *ok = r;
    return text;
  }
};

// Value of the first sample line starting with `prefix` ("name{labels}"), or "" when absent.
std::string Value(const std::string& text, const std::string& prefix) {
  std::size_t pos = 0;
  while ((pos = text.find(prefix, pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      std::size_t start = pos + prefix.size();
      if (text[start] == ' ') ++start;
      return text.substr(start, text.find('\n', start) - start);
    }
    ++pos;
  }
  return "";
}

class Roots : public ::testing::TestWithParam<std::string> {};

TEST_P(Roots, GoldenExposition) {
  Paths p = RootPaths(Fixture("roots/" + GetParam()));
  DeviceList d = Devices(p);
  Four c;
  std::vector<bool> ok;
  std::string text = c.Scrape(p, d, &ok);
  EXPECT_EQ(ok, (std::vector<bool>{true, true, true, true}));
  testing::ExpectGolden("roots_" + GetParam() + ".prom", text);
  // A second scrape comes from the caches and must be identical.
  EXPECT_EQ(c.Scrape(p, d), text);
}

INSTANTIATE_TEST_SUITE_P(Pi, Roots, ::testing::Values("pi3bplus", "pi4", "cm4"));

// The key facts, spelled out (the golden files hold everything).
TEST(Roots, Pi3BPlusOverclockStory) {
  Paths p = RootPaths(Fixture("roots/pi3bplus"));
  std::string t = Four().Scrape(p, Devices(p));
  EXPECT_EQ(Value(t, "diskprobe_boot_sd_overclock_hertz "), "100000000");  // dtparam=sd_overclock=100
  EXPECT_EQ(Value(t, "diskprobe_boot_sd_overclock_honoured "), "1");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_clock_hertz{device=\"mmcblk0\",host=\"mmc0\"}"), "50000000");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_actual_clock_hertz{device=\"mmcblk0\",host=\"mmc0\"}"), "83333333");
  EXPECT_NE(t.find("diskprobe_mmc_host_info{device=\"mmcblk0\",driver=\"sdhost-bcm2835\",host=\"mmc0\"} 1"),
            std::string::npos);
  EXPECT_NE(t.find("diskprobe_mmc_host_info{device=\"\",driver=\"mmc-bcm2835\",host=\"mmc1\"} 1"), std::string::npos);
  EXPECT_EQ(Value(t, "diskprobe_board_under_voltage_now "), "1");  // 0x50005
  EXPECT_EQ(Value(t, "diskprobe_board_under_voltage_occurred "), "1");
  EXPECT_EQ(Value(t, "diskprobe_board_arm_frequency_capped_now "), "0");
  EXPECT_EQ(Value(t, "diskprobe_board_throttled_now "), "1");
  // SanDisk SN512: CSD capacity = the block size (999743488 sectors), no SSR in the capture.
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_capacity_bytes{device=\"mmcblk0\"}"), "511868665856");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_speed_class{device=\"mmcblk0\"}"), "");
}

TEST(Roots, Pi4Ddr50AndOverclockIgnored) {
  Paths p = RootPaths(Fixture("roots/pi4"));
  std::string t = Four().Scrape(p, Devices(p));
  EXPECT_EQ(Value(t, "diskprobe_boot_sd_overclock_hertz "), "100000000");
  EXPECT_EQ(Value(t, "diskprobe_boot_sd_overclock_honoured "), "0");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_timing_spec{device=\"mmcblk0\",host=\"mmc0\",timing=\"sd uhs DDR50\"}"), "7");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_signal_voltage_volts{device=\"mmcblk0\",host=\"mmc0\"}"), "1.8");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_actual_clock_hertz{device=\"\",host=\"mmc1\"}"), "41666667");
  // Kingston SD64G: C10 U3 V30 A2, SD 6.xx, made 2019-11.
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_speed_class{device=\"mmcblk0\"}"), "10");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_uhs_speed_grade{device=\"mmcblk0\"}"), "3");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_video_speed_class{device=\"mmcblk0\"}"), "30");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_app_perf_class{device=\"mmcblk0\"}"), "2");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_capacity_bytes{device=\"mmcblk0\"}"), "62277025792");
  EXPECT_NE(
      t.find("date=\"2019-11\",device=\"mmcblk0\",ext_csd_rev=\"\",fwrev=\"0x1\",maker=\"unknown\",manfid=\"0x00009f\","
             "name=\"SD64G\",oemid=\"0x5449\",oemid_ascii=\"TI\",revision=\"6.1\",sd_spec=\"6.xx\",serial=\"0x0a0b0c0d\","
             "type=\"SD\""),
      std::string::npos)
      << t;
  EXPECT_EQ(Value(t, "diskprobe_board_under_voltage_now "), "0");
}

TEST(Roots, Cm4EmmcWearAndHwmonFallback) {
  Paths p = RootPaths(Fixture("roots/cm4"));
  std::string t = Four().Scrape(p, Devices(p));
  // The eMMC's identity as sysfs shows it: firmware from fwrev, the EXT_CSD revision as what it is,
  // the 16-bit oemid (CBX 1, OID 0).
  EXPECT_NE(t.find("device=\"mmcblk0\",ext_csd_rev=\"0x8\",fwrev=\"0x0300000000000000\",maker=\"Samsung\","
                   "manfid=\"0x000015\",name=\"BJTD4R\",oemid=\"0x0100\",oemid_ascii=\"\",revision=\"0.8\""),
            std::string::npos)
      << t;
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_life_time_estimate{device=\"mmcblk0\",type=\"A\"}"), "1");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_life_time_estimate{device=\"mmcblk0\",type=\"B\"}"), "1");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_pre_eol_info{device=\"mmcblk0\"}"), "1");
  EXPECT_EQ(t.find("mmcblk0boot0"), std::string::npos) << "boot areas are the same card";
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_capacity_bytes{device=\"mmcblk0\"}"), "") << "eMMC > 2 GiB: EXT_CSD";
  // Runtime-suspended eMMC: clock 0 is a value, the actual clock line is absent.
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_clock_hertz{device=\"mmcblk0\",host=\"mmc0\"}"), "0");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_actual_clock_hertz{device=\"mmcblk0\",host=\"mmc0\"}"), "");
  EXPECT_EQ(Value(t, "diskprobe_mmc_ios_vdd_volts{device=\"mmcblk0\",host=\"mmc0\"}"), "");
  EXPECT_EQ(Value(t, "diskprobe_boot_sd_overclock_hertz "), "");  // not set
  EXPECT_NE(t.find("enable_uart=\"1\""), std::string::npos);
  EXPECT_EQ(Value(t, "diskprobe_board_under_voltage_now "), "0");  // hwmon in0_lcrit_alarm
  EXPECT_EQ(Value(t, "diskprobe_board_under_voltage_occurred "), "") << "hwmon has no since-boot flag";
  EXPECT_NE(t.find("family=\"pi4\",model=\"Raspberry Pi Compute Module 4 Rev 1.0\",revision=\"1.0\",variant=\"CM4\""),
            std::string::npos);
}

// --- failure and absence rules ------------------------------------------------------------------

// (Logging a failure once per change is the scraper's: scraper_test.cpp.)
TEST(MmcIos, UnreadableDebugfsFailsWithTheReason) {
  Paths p = RootPaths(Fixture("roots/pi4"));
  p.debugfs = Fixture("roots/pi4/no-debugfs-here");
  DeviceList d = Devices(p);
  MmcIosCollector c;
  ::testing::internal::CaptureStderr();
  auto first = testing::Collect(c, ScrapeContext{p, d});
  auto second = testing::Collect(c, ScrapeContext{p, d});
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(first.result.error,
            p.debugfs + "/mmc0/ios: No such file or directory (is debugfs mounted at " + p.debugfs + "?)");
  EXPECT_EQ(second.result.error, first.result.error);
  EXPECT_EQ(second.text.find("diskprobe_mmc_ios_"), std::string::npos) << "ios series are absent";
  EXPECT_NE(second.text.find("diskprobe_mmc_host_info"), std::string::npos) << "host facts come from sysfs";
  EXPECT_EQ(log, "") << "the collector does not log its failure: the scraper does, once";
}

// An ios file cut off after its first line is an error state, not a reading: the collector fails
// with the file and the reason, and the host's ios series are absent (the other host's stay).
TEST(MmcIos, FileCutOffAfterFirstLineFailsTheCollector) {
  const fs::path root = fs::path(::testing::TempDir()) / ("pi4-cut-ios." + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::copy(Fixture("roots/pi4"), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  const fs::path ios = root / "debug/mmc0/ios";
  std::string first;
  {
    std::ifstream in(ios);
    std::getline(in, first);
  }
  ASSERT_EQ(first.rfind("clock:", 0), 0u) << first;
  std::ofstream(ios, std::ios::trunc) << first << "\n";
  Paths p = RootPaths(root.string());
  DeviceList d = Devices(p);
  MmcIosCollector c;
  auto r = testing::Collect(c, ScrapeContext{p, d});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.result.error, p.debugfs + "/mmc0/ios: ios: incomplete, no 'vdd', 'bus mode', 'chip select', "
                                        "'power mode', 'bus width', 'timing spec' line");
  EXPECT_EQ(r.text.find("diskprobe_mmc_ios_clock_hertz{device=\"mmcblk0\""), std::string::npos);
  EXPECT_NE(r.text.find("diskprobe_mmc_ios_clock_hertz{device=\"\",host=\"mmc1\"}"), std::string::npos);
  fs::remove_all(root);
}

TEST(PiCollectors, NoMmcNoConfigNoBoardIsSilentSuccess) {
  // The block_stat fixture: disks but no mmc host, no config.txt, no device tree, no firmware.
  Paths p = RootPaths(Fixture("no-such-root"));
  p.sysfs = Fixture("sys");
  DeviceList d = Devices(p);
  Four c;
  std::vector<bool> ok;
  ::testing::internal::CaptureStderr();
  std::string t = c.Scrape(p, d, &ok);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(ok, (std::vector<bool>{true, true, true, true}));
  // tests/fixtures/sys/block/mmcblk0 is a card without a host in that tree: only mmc_card sees it.
  EXPECT_EQ(t.find("diskprobe_mmc_ios_"), std::string::npos);
  EXPECT_EQ(t.find("diskprobe_boot_"), std::string::npos);
  EXPECT_EQ(t.find("diskprobe_board_"), std::string::npos);
  EXPECT_EQ(log, "");
}

TEST(PiCollectors, NothingAtAllIsEmpty) {
  Paths p = RootPaths(Fixture("no-such-root"));
  Four c;
  std::vector<bool> ok;
  EXPECT_EQ(c.Scrape(p, {}, &ok), "");
  EXPECT_EQ(ok, (std::vector<bool>{true, true, true, true}));
}

// A writable copy of a fixture root, removed at the end.
struct TempRoot {
  fs::path dir;
  explicit TempRoot(const std::string& name) {
    dir = fs::temp_directory_path() / ("diskprobe-root-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::copy(Fixture("roots/" + name), dir, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  }
  ~TempRoot() { fs::remove_all(dir); }
  void Write(const std::string& rel, const std::string& text) const { std::ofstream(dir / rel) << text; }
};

const char* kKingstonCard = "sys/devices/platform/emmc2bus/fe340000.mmc/mmc_host/mmc0/mmc0:5048/";

TEST(MmcCard, SwapIsCountedAndLoggedOnce) {
  TempRoot r("pi4");
  Paths p = RootPaths(r.dir.string());
  DeviceList d = Devices(p);
  MmcCardCollector c;
  auto scrape = [&]() {
    auto out = testing::Collect(c, ScrapeContext{p, d});
    EXPECT_TRUE(out.ok());
    return out.text;
  };
  EXPECT_EQ(Value(scrape(), "diskprobe_mmc_card_swaps_total{device=\"mmcblk0\"}"), "0");
  // Another SD64G with another serial (PSN bytes 9..12).
  r.Write(std::string(kKingstonCard) + "cid", "9f54495344363447610a0b0c0e013b00\n");
  ::testing::internal::CaptureStderr();
  std::string t = scrape();
  std::string t2 = scrape();
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_swaps_total{device=\"mmcblk0\"}"), "1");
  EXPECT_EQ(Value(t2, "diskprobe_mmc_card_swaps_total{device=\"mmcblk0\"}"), "1");
  EXPECT_NE(t.find("serial=\"0x0a0b0c0e\""), std::string::npos);
  EXPECT_NE(log.find("msg=\"mmc card changed\" device=mmcblk0 old_serial=0x0a0b0c0d new_serial=0x0a0b0c0e"),
            std::string::npos)
      << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;
}

TEST(MmcCard, ImplausibleRegistersAreAbsentAndCountedOnce) {
  TempRoot r("pi4");
  Paths p = RootPaths(r.dir.string());
  r.Write(std::string(kKingstonCard) + "ssr", std::string(128, 'f') + "\n");
  // A CSD whose capacity contradicts the block device: 0x1cffe instead of 0x1cfff.
  r.Write(std::string(kKingstonCard) + "csd", "400e00325b590001cffe7f800a400000\n");
  DeviceList d = Devices(p);
  MmcCardCollector c;
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(testing::Collect(c, ScrapeContext{p, d}).ok());
  auto out2 = testing::Collect(c, ScrapeContext{p, d});
  EXPECT_TRUE(out2.ok());
  std::string log = ::testing::internal::GetCapturedStderr();
  std::string t = out2.text;
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_speed_class{device=\"mmcblk0\"}"), "");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_capacity_bytes{device=\"mmcblk0\"}"), "");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_register_rejected_total{device=\"mmcblk0\",register=\"ssr\"}"), "1");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_register_rejected_total{device=\"mmcblk0\",register=\"csd\"}"), "1");
  EXPECT_EQ(Value(t, "diskprobe_mmc_card_register_rejected_total{device=\"mmcblk0\",register=\"cid\"}"), "0");
  EXPECT_NE(Value(t, "diskprobe_mmc_card_video_speed_class{device=\"mmcblk0\"}"), "30");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 2) << log;
  EXPECT_NE(log.find("does not match the block device"), std::string::npos) << log;
}

TEST(BootConfig, ReparsedWhenTheFileChanges) {
  TempRoot r("pi3bplus");
  Paths p = RootPaths(r.dir.string());
  BootConfigCollector c;
  auto overclock = [&]() {
    auto out = testing::Collect(c, ScrapeContext{p, {}});
    EXPECT_TRUE(out.ok());
    return Value(out.text, "diskprobe_boot_sd_overclock_hertz ");
  };
  EXPECT_EQ(overclock(), "100000000");
  r.Write("boot/config.txt", "dtoverlay=sdhost,overclock_50=62\n# a longer file, so that the size differs\n");
  EXPECT_EQ(overclock(), "62000000");
  fs::remove(r.dir / "boot/config.txt");
  EXPECT_EQ(overclock(), "") << "file gone: nothing, and no failure";
}

TEST(BootConfig, ExplicitPathMissingFails) {
  Paths p = RootPaths(Fixture("roots/pi3bplus"));
  p.bootconfig = Fixture("roots/pi3bplus/boot/nope.txt");
  BootConfigCollector c;
  auto out = testing::Collect(c, ScrapeContext{p, {}});
  EXPECT_EQ(out.result.error, p.bootconfig + ": No such file or directory");
  EXPECT_EQ(out.text, "");
}

TEST(Board, UnparseableThrottledFails) {
  TempRoot r("pi4");
  r.Write("sys/devices/platform/soc/soc:firmware/get_throttled", "zz\n");
  Paths p = RootPaths(r.dir.string());
  BoardCollector c;
  auto out = testing::Collect(c, ScrapeContext{p, {}});
  const std::string file = (r.dir / "sys/devices/platform/soc/soc:firmware/get_throttled").string();
  EXPECT_EQ(out.result.error.rfind(file + ": ", 0), 0u) << "the reason starts with the file: " << out.result.error;
  std::string t = out.text;
  EXPECT_NE(t.find("diskprobe_board_info"), std::string::npos);
  EXPECT_EQ(t.find("diskprobe_board_under_voltage_now"), std::string::npos);
}

// Seen on QEMU's raspi3b with Debian's 6.1 kernel: no soc:firmware under devices/platform/soc,
// and the firmware driver's directory lists bind, uevent and unbind before the device link; a path
// through `bind` (ENOTDIR) was taken for the throttled file and the collector failed.
TEST(Board, ThrottledFoundThroughTheDriverDirectoryPastItsFiles) {
  TempRoot r("pi4");
  fs::rename(r.dir / "sys/devices/platform/soc/soc:firmware", r.dir / "sys/devices/platform/firmware");
  const fs::path drv = r.dir / "sys/bus/platform/drivers/raspberrypi-firmware";
  fs::create_directories(drv);
  for (const char* f : {"bind", "uevent", "unbind"}) r.Write(fs::relative(drv / f, r.dir).string(), "");
  fs::create_directory_symlink("../../../../devices/platform/firmware", drv / "soc:firmware");
  Paths p = RootPaths(r.dir.string());
  BoardCollector c;
  auto out = testing::Collect(c, ScrapeContext{p, {}});
  EXPECT_TRUE(out.ok()) << out.result.error;
  EXPECT_NE(out.text.find("diskprobe_board_under_voltage_now"), std::string::npos) << out.text;
}

}  // namespace
}  // namespace diskprobe::collectors
