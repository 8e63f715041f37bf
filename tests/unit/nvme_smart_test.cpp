// NVMe SMART / Health Information log: the parser on real bytes and on real reports, the
// background reader on a fixture sysfs with a fake device, and the collector's exposition.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "collect_util.h"
#include "collectors/nvme.h"
#include "parsers/nvme_smart.h"
#include "sources/nvme_health.h"
#include "test_util.h"

namespace diskprobe {
namespace {

namespace fs = std::filesystem;
using parsers::NvmeSmartLog;
using parsers::ParseNvmeSmartLog;

std::string Sample(const std::string& name) { return testing::Fixture("samples/nvme-smart/" + name); }

// "0020: 3a bc ..." lines of nvme-cli's hex dump into a zero-padded 512-byte page.
NvmeSmartPage PageFromHexDump(const std::string& text) {
  NvmeSmartPage page{};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < 6 || line[4] != ':' || line[0] == '#') continue;
    std::size_t off = std::stoul(line.substr(0, 4), nullptr, 16);
    std::istringstream bytes(line.substr(5));
    std::string b;
    while (bytes >> b && b.size() == 2 && b[0] != '"') page.at(off++) = static_cast<std::uint8_t>(std::stoul(b, nullptr, 16));
  }
  return page;
}

std::map<std::string, std::uint64_t> ReadExpected(const std::string& path) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(testing::ReadText(path));
  std::string key;
  std::uint64_t v;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream l(line);
    l >> key >> v;
    out[key] = v;
  }
  return out;
}

TEST(NvmeSmartParser, RealDeviceBytesFromAHexDump) {
  NvmeSmartPage page = PageFromHexDump(testing::ReadText(Sample("01-get-log-hexdump-real-bytes.txt")));
  auto r = ParseNvmeSmartLog(page);
  ASSERT_TRUE(r) << r.error;
  auto want = ReadExpected(Sample("01-get-log-hexdump-real-bytes.expected"));
  ASSERT_EQ(want.size(), 10u);
  EXPECT_EQ(r->critical_warning, want["critical_warning"]);
  EXPECT_EQ(r->composite_temperature_kelvin, want["composite_temperature_kelvin"]);
  EXPECT_EQ(r->available_spare, want["available_spare"]);
  EXPECT_EQ(r->available_spare_threshold, want["available_spare_threshold"]);
  EXPECT_EQ(r->percentage_used, want["percentage_used"]);
  EXPECT_EQ(r->data_units_read.lo, want["data_units_read"]);
  EXPECT_EQ(r->data_units_written.lo, want["data_units_written"]);
  EXPECT_EQ(r->host_read_commands.lo, want["host_read_commands"]);
  EXPECT_EQ(r->host_write_commands.lo, want["host_write_commands"]);
  EXPECT_EQ(r->controller_busy_time_minutes.lo, want["controller_busy_time_minutes"]);
  EXPECT_EQ(r->data_units_read.hi, 0u);
  // 312 K is the 39 C nvme-cli would print (K - 273); exported as K - 273.15.
  EXPECT_DOUBLE_EQ(NvmeSmartLog::Celsius(r->composite_temperature_kelvin), 38.85);
  EXPECT_DOUBLE_EQ(r->data_units_read.Times(512000.0), 136887354.0 * 512000.0);
}

// A report's "Name: value" lines (nvme-cli or smartctl wording) by a normalised key; digits only
// in the value (the reports group digits with ',', ' ' or '’' and add "[10.0 TB]" or " C").
std::map<std::string, std::uint64_t> ReadReport(const std::string& path) {
  static const std::map<std::string, std::string> kNames = {
      {"critical_warning", "critical_warning"}, {"critical warning", "critical_warning"},
      {"temperature", "temperature"}, {"available_spare", "spare"}, {"available spare", "spare"},
      {"available_spare_threshold", "threshold"}, {"available spare threshold", "threshold"},
      {"percentage_used", "used"}, {"percentage used", "used"}, {"data_units_read", "dur"},
      {"data units read", "dur"}, {"data_units_written", "duw"}, {"data units written", "duw"},
      {"host_read_commands", "hrc"}, {"host read commands", "hrc"}, {"host_write_commands", "hwc"},
      {"host write commands", "hwc"}, {"controller_busy_time", "busy"}, {"controller busy time", "busy"},
      {"power_cycles", "cycles"}, {"power cycles", "cycles"}, {"power_on_hours", "poh"},
      {"power on hours", "poh"}, {"unsafe_shutdowns", "unsafe"}, {"unsafe shutdowns", "unsafe"},
      {"media_errors", "media"}, {"media and data integrity errors", "media"},
      {"num_err_log_entries", "errlog"}, {"error information log entries", "errlog"},
      {"warning  comp. temperature time", "wtime"}, {"critical comp. temperature time", "ctime"},
      {"temperature sensor 1", "s1"}, {"temperature sensor 2", "s2"}, {"temperature sensor 3", "s3"}};
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(testing::ReadText(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = kNames.find(key);
    if (it == kNames.end()) continue;
    std::string value = line.substr(colon + 1);
    value = value.substr(0, value.find('['));
    std::string digits;
    bool hex = value.find("0x") != std::string::npos;
    for (char c : value.substr(hex ? value.find("0x") + 2 : 0))
      if (std::isxdigit(static_cast<unsigned char>(c)) && (hex || std::isdigit(static_cast<unsigned char>(c))))
        digits += c;
    out[it->second] = std::stoull(digits, nullptr, hex ? 16 : 10);
  }
  return out;
}

// The page a controller would have sent for a report, laid out from the specification's figure
// (offset, width) independently of the parser: what is checked is that the parser reads each
// field where the figure puts it, and that our units turn the report's figures into the same
// quantities.
NvmeSmartPage EncodeReport(std::map<std::string, std::uint64_t> r) {
  NvmeSmartPage p{};
  auto put = [&](std::size_t off, std::size_t width, std::uint64_t v) {
    for (std::size_t i = 0; i < width && i < 8; ++i) p[off + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put(0, 1, r["critical_warning"]);
  put(1, 2, r["temperature"] + 273);  // the tools print K - 273
  put(3, 1, r["spare"]);
  put(4, 1, r["threshold"]);
  put(5, 1, r["used"]);
  const std::pair<const char*, std::size_t> wide[] = {{"dur", 32},    {"duw", 48},    {"hrc", 64},   {"hwc", 80},
                                                      {"busy", 96},   {"cycles", 112}, {"poh", 128}, {"unsafe", 144},
                                                      {"media", 160}, {"errlog", 176}};
  for (auto [k, off] : wide) put(off, 16, r[k]);
  put(192, 4, r["wtime"]);
  put(196, 4, r["ctime"]);
  for (int s = 1; s <= 3; ++s)
    if (r.count("s" + std::to_string(s))) put(200 + 2 * (s - 1), 2, r["s" + std::to_string(s)] + 273);
  return p;
}

void CheckReport(const std::string& file, std::size_t fields) {
  SCOPED_TRACE(file);
  auto rep = ReadReport(Sample(file));
  ASSERT_EQ(rep.size(), fields);
  auto r = ParseNvmeSmartLog(EncodeReport(rep));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->critical_warning, rep["critical_warning"]);
  EXPECT_EQ(r->composite_temperature_kelvin - 273, static_cast<int>(rep["temperature"]));
  EXPECT_NEAR(NvmeSmartLog::Celsius(r->composite_temperature_kelvin), static_cast<double>(rep["temperature"]) - 0.15, 1e-9);
  EXPECT_EQ(r->available_spare, rep["spare"]);
  EXPECT_EQ(r->available_spare_threshold, rep["threshold"]);
  EXPECT_EQ(r->percentage_used, rep["used"]);
  // "Data Units Read: 19,683,018 [10.0 TB]": smartctl's bracket is units x 512000 bytes.
  EXPECT_DOUBLE_EQ(r->data_units_read.Times(512000.0), static_cast<double>(rep["dur"]) * 512000.0);
  EXPECT_DOUBLE_EQ(r->data_units_written.Times(512000.0), static_cast<double>(rep["duw"]) * 512000.0);
  EXPECT_EQ(r->host_read_commands.lo, rep["hrc"]);
  EXPECT_EQ(r->host_write_commands.lo, rep["hwc"]);
  EXPECT_EQ(r->controller_busy_time_minutes.lo, rep["busy"]);
  EXPECT_EQ(r->power_cycles.lo, rep["cycles"]);
  EXPECT_EQ(r->power_on_hours.lo, rep["poh"]);
  EXPECT_EQ(r->unsafe_shutdowns.lo, rep["unsafe"]);
  EXPECT_EQ(r->media_errors.lo, rep["media"]);
  EXPECT_EQ(r->error_log_entries.lo, rep["errlog"]);
  for (int s = 1; s <= 3; ++s) {
    const std::string k = "s" + std::to_string(s);
    if (rep.count(k)) EXPECT_EQ(r->temperature_sensor_kelvin[s - 1] - 273, static_cast<int>(rep[k]));
    else EXPECT_EQ(r->temperature_sensor_kelvin[s - 1], 0);
  }
}

TEST(NvmeSmartParser, ReportsOfRealDevices) {
  CheckReport("02-nvme-cli-smart-log-text.txt", 15);
  CheckReport("03-smartctl-nvme-text.txt", 20);
  CheckReport("04-smartctl-nvme-text-grouped-digits.txt", 18);
  // The figures themselves, so a wrong report reader cannot pass unnoticed.
  auto rep = ReadReport(Sample("03-smartctl-nvme-text.txt"));
  EXPECT_EQ(rep["errlog"], 4804u);
  EXPECT_EQ(rep["duw"], 64768925u);
  EXPECT_EQ(ReadReport(Sample("04-smartctl-nvme-text-grouped-digits.txt"))["poh"], 9025u);
}

TEST(NvmeSmartParser, Counters128BitAndByteFields) {
  NvmeSmartPage p{};
  p[0] = 0x2A;  // bits 1, 3, 5
  p[5] = 255;   // percentage used saturates at 255
  for (int i = 0; i < 16; ++i) p[32 + i] = 0xFF;  // data units read = 2^128 - 1
  p[48 + 8] = 1;                                  // data units written = 2^64
  p[160] = 7;
  p[192] = 0x10;
  p[193] = 0x27;  // 10000 minutes
  auto r = ParseNvmeSmartLog(p);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->critical_warning, 0x2A);
  EXPECT_EQ(r->percentage_used, 255);
  EXPECT_EQ(r->data_units_read.lo, ~0ull);
  EXPECT_EQ(r->data_units_read.hi, ~0ull);
  EXPECT_DOUBLE_EQ(r->data_units_read.AsDouble(), 340282366920938463463374607431768211455.0);
  EXPECT_DOUBLE_EQ(r->data_units_written.AsDouble(), 18446744073709551616.0);
  EXPECT_EQ(r->media_errors.lo, 7u);
  EXPECT_EQ(r->warning_temperature_time_minutes, 10000u);
}

TEST(NvmeSmartParser, RefusesWrongLengthAndEmptyPages) {
  std::vector<std::uint8_t> short_page(256, 1);
  auto r = ParseNvmeSmartLog(short_page);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "SMART log page is 256 bytes, want 512");
  NvmeSmartPage zero{};
  r = ParseNvmeSmartLog(zero);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("all bytes zero"), std::string::npos);
}

// A sysfs tree with NVMe disks, and a fake controller behind the reader.
class NvmeReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/diskprobe-nvme-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    sysfs_ = root_ + "/sys";
    Disk("nvme0n1", "nvme0", "259:0");
    Disk("sda", "", "8:0");
  }
  void TearDown() override { fs::remove_all(root_); }

  // <sysfs>/block/<disk> with dev and a device link to the controller (or to a SCSI device).
  void Disk(const std::string& disk, const std::string& controller, const std::string& dev) {
    fs::create_directories(sysfs_ + "/block/" + disk);
    std::ofstream(sysfs_ + "/block/" + disk + "/dev") << dev << "\n";
    if (!controller.empty()) {
      fs::create_directories(sysfs_ + "/class/nvme/" + controller + "/device/power");
      RuntimeStatus(controller, "active");
      fs::create_directory_symlink("../../class/nvme/" + controller, sysfs_ + "/block/" + disk + "/device");
    } else {
      fs::create_directories(sysfs_ + "/devices/0:0:0:0");
      fs::create_directory_symlink("../../devices/0:0:0:0", sysfs_ + "/block/" + disk + "/device");
    }
  }
  void RuntimeStatus(const std::string& controller, const std::string& s) {
    std::ofstream(sysfs_ + "/class/nvme/" + controller + "/device/power/runtime_status") << s << "\n";
  }

  std::string root_, sysfs_;
};

NvmeSmartPage FixturePage() { return EncodeReport(ReadReport(Sample("03-smartctl-nvme-text.txt"))); }

TEST_F(NvmeReaderTest, ControllerOfADiskPlainAndMultipath) {
  EXPECT_EQ(NvmeControllerOf(sysfs_, "nvme0n1"), "nvme0");
  EXPECT_EQ(NvmeControllerOf(sysfs_, "sda"), "");
  // Native multipath: the head's device link names the subsystem.
  fs::create_directories(sysfs_ + "/block/nvme1n1");
  fs::create_directories(sysfs_ + "/class/nvme-subsystem/nvme-subsys1/nvme3");
  fs::create_directories(sysfs_ + "/class/nvme-subsystem/nvme-subsys1/nvme12");
  fs::create_directories(sysfs_ + "/class/nvme-subsystem/nvme-subsys1/nvme1n1");
  fs::create_directory_symlink("../../class/nvme-subsystem/nvme-subsys1", sysfs_ + "/block/nvme1n1/device");
  EXPECT_EQ(NvmeControllerOf(sysfs_, "nvme1n1"), "nvme3");
}

TEST_F(NvmeReaderTest, ReadsOncePerPassSkipsSuspendedAndClearsValuesOnFailure) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  ASSERT_EQ(reg.Snapshot()->size(), 2u);
  std::vector<std::string> opened;
  NvmeReadOutcome next;
  NvmeHealthReader reader(sysfs_, "/devfs", &reg, std::chrono::minutes(10),
                          [&](const std::string& path, NvmeSmartPage* page) {
                            opened.push_back(path);
                            if (next.ok()) *page = FixturePage();
                            return next;
                          });
  reader.PassNow();
  ASSERT_EQ(opened, std::vector<std::string>{"/devfs/nvme0"});
  NvmeHealthSnapshot s = reader.Snapshot();
  ASSERT_EQ(s.disks.size(), 1u);  // sda is not NVMe
  const NvmeHealthEntry& e = s.disks.at("nvme0n1");
  EXPECT_EQ(e.controller, "nvme0");
  ASSERT_TRUE(e.log);
  EXPECT_EQ(e.log->error_log_entries.lo, 4804u);
  EXPECT_EQ(e.reads, 1u);
  EXPECT_GT(e.last_success_unix, 1e9);

  RuntimeStatus("nvme0", "suspended");
  reader.PassNow();
  EXPECT_EQ(opened.size(), 1u);  // not woken
  s = reader.Snapshot();
  EXPECT_EQ(s.disks.at("nvme0n1").skipped_suspended, 1u);
  EXPECT_TRUE(s.disks.at("nvme0n1").log);  // the last values stay: nothing failed

  RuntimeStatus("nvme0", "active");
  next.error = EACCES;
  reader.PassNow();
  s = reader.Snapshot();
  EXPECT_FALSE(s.disks.at("nvme0n1").log);
  EXPECT_EQ(s.disks.at("nvme0n1").error, "permission");
  EXPECT_EQ(s.disks.at("nvme0n1").failures.at("permission"), 1u);

  next = {};
  next.nvme_status = 0x4002;
  reader.PassNow();
  EXPECT_EQ(reader.Snapshot().disks.at("nvme0n1").failures.at("nvme_status"), 1u);
}

TEST_F(NvmeReaderTest, ThreadReadsAtStartAndStops) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  std::atomic<int> calls{0};
  NvmeHealthReader reader(sysfs_, "/devfs", &reg, std::chrono::hours(1), [&](const std::string&, NvmeSmartPage* p) {
    ++calls;
    *p = FixturePage();
    return NvmeReadOutcome{};
  });
  reader.Start();
  for (int i = 0; i < 2000 && reader.Snapshot().passes == 0; ++i) ::usleep(1000);
  EXPECT_EQ(reader.Snapshot().passes, 1u);
  EXPECT_TRUE(reader.Stop(std::chrono::seconds(30)));  // wakes the hour-long wait
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(NvmeReaderTest, CollectorExportsThePageAndOnlyReadStateAfterAFailure) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  NvmeReadOutcome next;
  NvmeHealthReader reader(sysfs_, "/devfs", &reg, std::chrono::minutes(10), [&](const std::string&, NvmeSmartPage* p) {
    if (next.ok()) {
      *p = FixturePage();
      (*p)[0] = 0x02;  // temperature warning
    }
    return next;
  });
  collectors::NvmeCollector c(&reader);
  collectors::Paths paths;
  paths.sysfs = sysfs_;
  std::shared_ptr<const DeviceList> devices = reg.Snapshot();
  collectors::ScrapeContext ctx{paths, *devices};
  auto before = testing::Collect(c, ctx);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before.text.find("diskprobe_nvme_smart_up"), std::string::npos);  // nothing read yet
  reader.PassNow();
  auto got = testing::Collect(c, ctx);
  ASSERT_TRUE(got.ok()) << got.result.error;
  const std::string l = "{controller=\"nvme0\",device=\"nvme0n1\"}";
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_smart_up" + l), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_temperature_celsius" + l), 303 - 273.15);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_data_written_bytes_total" + l), 64768925.0 * 512000);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_error_log_entries_total" + l), 4804);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_power_on_seconds_total" + l), 6726.0 * 3600);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_controller_busy_seconds_total" + l), 1302.0 * 60);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_available_spare_ratio" + l), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_nvme_percentage_used_ratio" + l), 0);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_nvme_critical_warning{controller=\"nvme0\",device=\"nvme0n1\",kind=\"temperature\"}"),
            1);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_nvme_critical_warning{controller=\"nvme0\",device=\"nvme0n1\",kind=\"read_only\"}"),
            0);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_nvme_temperature_sensor_celsius{controller=\"nvme0\",device=\"nvme0n1\",sensor=\"3\"}"),
            320 - 273.15);
  EXPECT_EQ(got.text.find("sensor=\"4\""), std::string::npos);  // not implemented: absent

  next.error = EIO;
  reader.PassNow();
  auto failed = testing::Collect(c, ctx);
  EXPECT_EQ(testing::SampleValue(failed.text, "diskprobe_nvme_smart_up" + l), 0);
  EXPECT_EQ(testing::SampleValue(
                failed.text,
                "diskprobe_nvme_smart_read_failures_total{controller=\"nvme0\",device=\"nvme0n1\",reason=\"ioctl\"}"),
            1);
  EXPECT_EQ(failed.text.find("diskprobe_nvme_temperature_celsius"), std::string::npos);
  EXPECT_EQ(failed.text.find("diskprobe_nvme_data_written_bytes_total"), std::string::npos);
  EXPECT_EQ(failed.text.find("diskprobe_nvme_critical_warning"), std::string::npos);

  collectors::NvmeCollector none(nullptr);
  EXPECT_FALSE(testing::Collect(none, ctx).ok());
}

}  // namespace
}  // namespace diskprobe
