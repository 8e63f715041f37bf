// Device discovery and the block_stat collector on the fixture sysfs tree (tests/fixtures/sys,
// sources in its SOURCES.md), compared with a golden exposition file.
#include "collectors/block_stat.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/config.h"
#include "sources/device_registry.h"
#include "collect_util.h"
#include "test_util.h"

namespace diskprobe::collectors {
namespace {

using testing::Collect;
using testing::Fixture;

std::vector<std::string> Names(const DeviceList& l) {
  std::vector<std::string> out;
  for (const auto& d : l) out.push_back(d.name);
  return out;
}

TEST(DiscoverDevices, DefaultRulesOnFixture) {
  auto cfg = config::LoadDefault().config;
  ASSERT_TRUE(cfg);
  std::string err;
  DeviceList l = DiscoverDevices(Fixture("sys"), cfg->devices, &err);
  EXPECT_EQ(err, "");
  // loop0/loop1, zram0/ram0 are excluded by default, sdc1 is a partition.
  EXPECT_EQ(Names(l), (std::vector<std::string>{"mmcblk0", "nvme0n1", "sdb", "vda"}));
  EXPECT_EQ(l[0].major, 179u);
  EXPECT_EQ(l[0].minor, 0u);
  EXPECT_EQ(l[0].sysfs_path, Fixture("sys") + "/block/mmcblk0");
}

// Loop devices (snaps, k3s), optical drives and removable devices without a medium are not
// monitored by default; each can be monitored by saying so.
TEST(DiscoverDevices, LoopOpticalAndEmptyRemovableNeedToBeAskedFor) {
  namespace fs = std::filesystem;
  const fs::path sys = fs::path(::testing::TempDir()) / ("discover-sys." + std::to_string(::getpid()));
  fs::remove_all(sys);
  auto disk = [&](const std::string& name, const std::string& dev, const std::string& size, const char* removable) {
    fs::create_directories(sys / "block" / name);
    std::ofstream(sys / "block" / name / "dev") << dev << "\n";
    std::ofstream(sys / "block" / name / "size") << size << "\n";
    std::ofstream(sys / "block" / name / "removable") << removable << "\n";
  };
  disk("loop3", "7:3", "112400", "0");  // a snap's squashfs
  disk("sr0", "11:0", "0", "1");        // a DVD drive, no disc
  disk("sr1", "11:1", "1376256", "1");  // with a disc
  disk("sdd", "8:48", "0", "1");        // a card reader slot, no card
  disk("sde", "8:64", "62333952", "1"); // a card reader slot with a card
  disk("mmcblk0", "179:0", "62333952", "0");
  auto names = [&](const std::string& yaml) {
    auto r = config::LoadString(yaml, "t.yml");
    EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].message);
    return r.config ? Names(DiscoverDevices(sys.string(), r.config->devices, nullptr)) : std::vector<std::string>{};
  };
  EXPECT_EQ(names(""), (std::vector<std::string>{"mmcblk0", "sde"}));
  // Named by an include pattern: monitored (the e2e tests' emulated cards are loop devices).
  EXPECT_EQ(names("devices:\n  include: ['mmcblk[0-9]+', 'loop3', 'sr[0-9]']\n"),
            (std::vector<std::string>{"loop3", "mmcblk0", "sr1"}));
  EXPECT_EQ(names("devices:\n  exclude_unless_included: []\n"),
            (std::vector<std::string>{"loop3", "mmcblk0", "sde", "sr1"}));
  EXPECT_EQ(names("devices:\n  exclude_unless_included: []\n  skip_empty_removable: false\n"),
            (std::vector<std::string>{"loop3", "mmcblk0", "sdd", "sde", "sr0", "sr1"}));
  // exclude still wins over include.
  EXPECT_EQ(names("devices:\n  include: ['loop3', 'sde']\n  exclude: ['sde']\n"), (std::vector<std::string>{"loop3"}));
  fs::remove_all(sys);
}

TEST(DiscoverDevices, IncludeExclude) {
  auto r = config::LoadString(
      "devices:\n  include: ['mmcblk[0-9]+', 'sd[a-z]+', 'zram[0-9]+']\n"
      "  exclude: ['sdb']\n",
      "t.yml");
  ASSERT_TRUE(r.config);
  DeviceList l = DiscoverDevices(Fixture("sys"), r.config->devices, nullptr);
  EXPECT_EQ(Names(l), (std::vector<std::string>{"mmcblk0", "zram0"})) << "an explicit exclude replaces the default";
}

TEST(DiscoverDevices, MissingSysfs) {
  auto cfg = config::LoadDefault().config;
  std::string err;
  DeviceList l = DiscoverDevices("/nonexistent-sysfs", cfg->devices, &err);
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(err, "/nonexistent-sysfs/block: No such file or directory");
}

TEST(BlockStatCollector, GoldenOnFixture) {
  // Every device of the fixture, the attached loop device too (not monitored by default).
  auto cfg = config::LoadString("devices: {exclude_unless_included: []}\n", "t.yml").config;
  ASSERT_TRUE(cfg);
  DeviceList devices = DiscoverDevices(Fixture("sys"), cfg->devices, nullptr);
  Paths paths;
  paths.sysfs = Fixture("sys");
  paths.procfs = Fixture("proc");
  paths.rootfs = Fixture("root");
  BlockStatCollector c;
  auto first = Collect(c, ScrapeContext{paths, devices});
  EXPECT_TRUE(first.ok()) << first.result.error;
  testing::ExpectGolden("block_stat.prom", first.text);
  // The second scrape takes the device facts from the cache: the same page.
  EXPECT_EQ(Collect(c, ScrapeContext{paths, devices}).text, first.text);
}

TEST(BlockStatCollector, UnitsAndAbsentFields) {
  auto cfg = config::LoadDefault().config;
  DeviceList devices = DiscoverDevices(Fixture("sys"), cfg->devices, nullptr);
  Paths paths;
  paths.sysfs = Fixture("sys");
  BlockStatCollector c;
  auto out = Collect(c, ScrapeContext{paths, devices});
  ASSERT_TRUE(out.ok());
  auto find = [&](const std::string& family, const std::string& device) {
    return testing::SampleValue(out.text, family + "{device=\"" + device + "\"}");
  };
  // https://github.com/giampaolo/psutil/issues/807: sectors_read 4732260326 (> 2^32) x 512.
  EXPECT_EQ(find("diskprobe_block_read_bytes_total", "vda"), 2422917286912.0);
  EXPECT_EQ(find("diskprobe_block_read_time_seconds_total", "vda"), 79610.084);
  // 11-field kernel: no discard or flush series at all (absent, not 0).
  EXPECT_FALSE(find("diskprobe_block_discards_completed_total", "mmcblk0"));
  EXPECT_FALSE(find("diskprobe_block_flushes_completed_total", "mmcblk0"));
  // 15 fields: discards yes, flushes no.
  EXPECT_EQ(find("diskprobe_block_discarded_bytes_total", "sdb"), 1925173784.0 * 512);
  EXPECT_FALSE(find("diskprobe_block_flushes_completed_total", "sdb"));
  // 17 fields.
  EXPECT_EQ(find("diskprobe_block_flushes_completed_total", "nvme0n1"), 4958.0);
  EXPECT_EQ(find("diskprobe_block_flush_time_seconds_total", "nvme0n1"), 2.319);
  // vda has no queue/ directory in the fixture: those facts are absent.
  EXPECT_FALSE(find("diskprobe_block_rotational", "vda"));
  EXPECT_EQ(find("diskprobe_block_read_only", "vda"), 1.0);
  EXPECT_EQ(find("diskprobe_block_size_bytes", "mmcblk0"), 62277025792.0);
}

TEST(BlockStatCollector, VanishedDeviceIsSkippedNotAnError) {
  DeviceList devices = {Device{"sdz", Fixture("sys") + "/block/sdz", 8, 400}};
  Paths paths;
  paths.sysfs = Fixture("sys");
  BlockStatCollector c;
  auto out = Collect(c, ScrapeContext{paths, devices});
  EXPECT_TRUE(out.ok());
  EXPECT_EQ(out.text, "");
}

TEST(BlockStatCollector, UnreadableStatFailsTheCollector) {
  // A directory where the stat file should be: read() fails with EISDIR.
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("diskprobe-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "block/sdq/stat");
  DeviceList devices = {Device{"sdq", (dir / "block/sdq").string(), 8, 0}};
  Paths paths;
  paths.sysfs = dir.string();
  BlockStatCollector c;
  auto out = Collect(c, ScrapeContext{paths, devices});
  EXPECT_EQ(out.result.error, (dir / "block/sdq").string() + "/stat: Is a directory");
  EXPECT_NE(out.text.find("# HELP diskprobe_block_stat_readable 1 when the device's sysfs stat was read and "
                          "understood at this scrape, 0 when not (its I/O counters are then absent and the collector "
                          "fails with the reason).\n"
                          "# TYPE diskprobe_block_stat_readable gauge\n"
                          "diskprobe_block_stat_readable{device=\"sdq\"} 0\n"),
            std::string::npos)
      << out.text;
  // The device is still there: its identity stays (no model etc. in this bare directory).
  EXPECT_NE(out.text.find("diskprobe_block_info{device=\"sdq\",major=\"8\",minor=\"0\""), std::string::npos)
      << out.text;
  EXPECT_EQ(out.text.find("diskprobe_block_reads_completed_total"), std::string::npos) << out.text;
  fs::remove_all(dir);
}

// An eMMC has `rev` (its EXT_CSD revision, 0x8 = eMMC 5.1) and `fwrev` (the firmware): the
// revision label is the firmware, as for every other disk.
TEST(BlockStatCollector, EmmcRevisionIsFirmwareNotExtCsdRev) {
  Paths paths;
  paths.sysfs = Fixture("roots/cm4/sys");
  auto cfg = config::LoadDefault().config;
  DeviceList devices = DiscoverDevices(paths.sysfs, cfg->devices, nullptr);
  BlockStatCollector c;
  auto out = Collect(c, ScrapeContext{paths, devices});
  EXPECT_EQ(testing::FirstLabel(out.text, "diskprobe_block_info", "revision"),  // mmcblk0 sorts first
            std::optional<std::string>("0x0300000000000000"))
      << out.text;
}

// A disk that is still there but has no stat file (a driver that does not provide one, a broken
// sysfs): its counters used to vanish with collector_success 1. Now it fails the collector, and
// the device's readable gauge is 0 while the other disks' counters stay.
TEST(BlockStatCollector, MissingStatOfAPresentDiskIsAnErrorState) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("diskprobe-nostat-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "block");
  fs::copy(Fixture("sys/block/mmcblk0"), dir / "block/mmcblk0", fs::copy_options::recursive);
  fs::copy(Fixture("sys/block/mmcblk0"), dir / "block/mmcblk1", fs::copy_options::recursive);
  fs::remove(dir / "block/mmcblk1/stat");
  DeviceList devices = {Device{"mmcblk0", (dir / "block/mmcblk0").string(), 179, 0},
                        Device{"mmcblk1", (dir / "block/mmcblk1").string(), 179, 8},
                        Device{"sdx", (dir / "block/sdx").string(), 8, 96}};  // unplugged: silent
  Paths paths;
  paths.sysfs = dir.string();
  BlockStatCollector c;
  auto out = Collect(c, ScrapeContext{paths, devices});
  EXPECT_EQ(out.result.error, (dir / "block/mmcblk1").string() + "/stat: No such file or directory");
  EXPECT_NE(out.text.find("diskprobe_block_stat_readable{device=\"mmcblk0\"} 1\n"), std::string::npos);
  EXPECT_NE(out.text.find("diskprobe_block_stat_readable{device=\"mmcblk1\"} 0\n"), std::string::npos);
  EXPECT_EQ(out.text.find("device=\"sdx\""), std::string::npos);
  EXPECT_NE(out.text.find("diskprobe_block_reads_completed_total{device=\"mmcblk0\"}"), std::string::npos);
  EXPECT_EQ(out.text.find("diskprobe_block_reads_completed_total{device=\"mmcblk1\"}"), std::string::npos);
  // Only the series that come from stat are absent: identity, size, ro and the queue facts of the
  // disk stay (alerts on a gone or read-only card join on block_info).
  auto value = [&](const std::string& family, const std::string& device) {
    return testing::SampleValue(out.text, family + "{device=\"" + device + "\"}");
  };
  EXPECT_EQ(value("diskprobe_block_size_bytes", "mmcblk1"), value("diskprobe_block_size_bytes", "mmcblk0"));
  EXPECT_EQ(value("diskprobe_block_size_bytes", "mmcblk1"), 62277025792.0);
  EXPECT_TRUE(value("diskprobe_block_read_only", "mmcblk1")) << out.text;
  // mmcblk0 comes first: its model is the one copied to mmcblk1.
  const auto model = testing::FirstLabel(out.text, "diskprobe_block_info", "model");
  ASSERT_TRUE(model && !model->empty()) << out.text;
  EXPECT_NE(out.text.find("diskprobe_block_info{device=\"mmcblk1\",major=\"179\",minor=\"8\",model=\"" + *model + "\""),
            std::string::npos)
      << out.text;
  for (const char* family : {"diskprobe_block_read_bytes_total", "diskprobe_block_written_bytes_total",
                             "diskprobe_block_io_now", "diskprobe_block_io_time_seconds_total"}) {
    EXPECT_TRUE(value(family, "mmcblk0")) << family;
    EXPECT_FALSE(value(family, "mmcblk1")) << family;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace diskprobe::collectors

namespace diskprobe::collectors {
namespace {

// The slowly changing facts are cached, and re-read when the medium changes (size differs).
TEST(BlockStatCollector, FactsCachedUntilTheMediumChanges) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("diskprobe-facts-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "block");
  fs::copy(Fixture("sys/block/mmcblk0"), dir / "block/mmcblk0", fs::copy_options::recursive);
  auto write = [&](const char* rel, const char* text) { std::ofstream(dir / "block/mmcblk0" / rel) << text; };
  DeviceList devices = {Device{"mmcblk0", (dir / "block/mmcblk0").string(), 179, 0}};
  Paths paths;
  paths.sysfs = dir.string();
  BlockStatCollector c;
  auto model = [&]() {
    auto out = Collect(c, ScrapeContext{paths, devices});
    EXPECT_TRUE(out.ok());
    return testing::FirstLabel(out.text, "diskprobe_block_info", "model").value_or("<none>");
  };
  EXPECT_EQ(model(), "SD64G");
  write("device/name", "SD32G\n");
  EXPECT_EQ(model(), "SD64G") << "same medium: facts come from the cache";
  write("size", "60751872\n");
  EXPECT_EQ(model(), "SD32G") << "a new size means a new medium: facts are read again";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace diskprobe::collectors
