// SATA/USB disk SMART health through smartctl: the JSON parser on recorded reports of real drives
// (SAT and JMicron USB), the bounded child-process runner on /bin/sh, the background reader on a
// fixture sysfs with a fake smartctl, and the collector's exposition.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <optional>

#include "collect_util.h"
#include "collectors/smart.h"
#include "config/config.h"
#include "parsers/smartctl_json.h"
#include "sources/child_process.h"
#include "sources/smart_health.h"
#include "test_util.h"

namespace diskprobe {
namespace {

namespace fs = std::filesystem;
using parsers::ParseSmartctlJson;
using parsers::SmartctlReport;

// A recorded report without its leading "# source:" comment lines (smartctl writes none).
std::string Recorded(const std::string& name) {
  std::ifstream in(testing::Fixture("samples/smartctl/" + name));
  std::string line, out;
  while (std::getline(in, line))
    if (!line.starts_with("#")) out += line + "\n";
  return out;
}

TEST(SmartctlJson, RealSataSsdThroughSat) {
  auto r = ParseSmartctlJson(Recorded("01-sat-intel-s3520-m2-ssd.json"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->exit_status, 0);
  EXPECT_EQ(r->device_type, "sat");
  EXPECT_EQ(r->protocol, "ATA");
  EXPECT_EQ(r->model_family, "Dell Certified Intel S3520 Series SSDs");
  EXPECT_EQ(r->model_name, "SSDSCKJB240G7R");
  EXPECT_EQ(r->smart_passed, true);
  EXPECT_EQ(r->temperature_celsius, 47);
  EXPECT_EQ(r->power_on_hours, 21213u);
  EXPECT_EQ(r->power_cycles, 186u);
  ASSERT_EQ(r->attributes.size(), 29u);
  const parsers::SmartAttribute* plc = r->Attribute(201);
  ASSERT_NE(plc, nullptr);
  EXPECT_EQ(plc->name, "Power_Loss_Cap_Test");
  EXPECT_EQ(plc->raw, 1331519965652u);  // 48-bit raw as smartctl gives it, not its decoding
  EXPECT_EQ(plc->raw_string, "18900 (310 1222)");
  EXPECT_TRUE(plc->prefailure);
  EXPECT_EQ(r->Attribute(194)->worst, 92);
  EXPECT_EQ(r->Attribute(170)->thresh, 10);
  EXPECT_FALSE(r->nvme);
  // Writes: the attribute named with its unit wins over this drive's Total_LBAs_Written, which
  // counts 32 MiB units too (same raw as 225).
  std::string src;
  EXPECT_EQ(parsers::SmartWrittenBytes(*r, &src), 129493.0 * 32 * 1024 * 1024);
  EXPECT_EQ(src, "Host_Writes_32MiB");
  EXPECT_EQ(parsers::SmartLifeRemaining(*r, &src), 1.0);
  EXPECT_EQ(src, "Percent_Life_Remaining");
}

TEST(SmartctlJson, RealFailingDiskBehindJMicronBridge) {
  auto r = ParseSmartctlJson(Recorded("02-usbjmicron-wdc-scorpio-failing.json"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->exit_status, 216);
  EXPECT_EQ(r->device_type, "usbjmicron");
  EXPECT_EQ(r->smart_passed, false);
  EXPECT_EQ(r->Attribute(5)->raw, 535u);
  EXPECT_EQ(r->Attribute(5)->when_failed, "now");
  EXPECT_EQ(r->Attribute(5)->value, 133);
  EXPECT_EQ(r->Attribute(5)->thresh, 140);
  EXPECT_EQ(r->Attribute(190)->when_failed, "past");
  EXPECT_EQ(r->Attribute(197)->raw, 1u);
  EXPECT_EQ(r->temperature_celsius, 27);
  EXPECT_EQ(r->power_on_hours, 16402u);
  std::string src;
  EXPECT_FALSE(parsers::SmartWrittenBytes(*r, &src));  // a disk without a writes attribute
  EXPECT_FALSE(parsers::SmartLifeRemaining(*r, &src));
  // A failing drive's report is a successful read: bits 3-7 are data.
  bool standby = true;
  ChildResult run;
  run.exited = true;
  run.exit_status = 216;
  EXPECT_EQ(SmartFailureReason(run, r, &standby), "");
  EXPECT_FALSE(standby);
}

TEST(SmartctlJson, RealJMicronNvmeBridgeThatRefusedThePassThrough) {
  auto r = ParseSmartctlJson(Recorded("03-sntjmicron-jms583-identify-failed.json"));
  ASSERT_TRUE(r) << r.error;  // a failed run is a report too: its reason is in it
  EXPECT_EQ(r->exit_status, 2);
  EXPECT_EQ(r->device_type, "sntjmicron");
  EXPECT_EQ(r->protocol, "NVMe");
  ASSERT_EQ(r->messages.size(), 1u);
  EXPECT_EQ(r->messages[0], "Read NVMe Identify Controller failed: IOCTL_SCSI_PASS_THROUGH_DIRECT failed, Error=1117");
  EXPECT_FALSE(r->smart_passed);
  EXPECT_FALSE(r->nvme);
  EXPECT_TRUE(r->attributes.empty());
  EXPECT_EQ(r->model_name, "");
  ChildResult run;
  run.exited = true;
  run.exit_status = 2;
  bool standby = true;
  EXPECT_EQ(SmartFailureReason(run, r, &standby), "open");
  EXPECT_FALSE(standby);
}

TEST(SmartctlJson, RealScsiDiskGrownDefectsAndErrorCounters) {
  auto r = ParseSmartctlJson(Recorded("04-scsi-seagate-st373453lc.json"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->device_type, "scsi");
  EXPECT_EQ(r->protocol, "SCSI");
  EXPECT_EQ(r->model_name, "SEAGATE ST373453LC");  // scsi_model_name
  EXPECT_EQ(r->smart_passed, true);
  EXPECT_EQ(r->temperature_celsius, 33);
  EXPECT_EQ(r->power_on_hours, 102880u);
  EXPECT_FALSE(r->power_cycles);
  EXPECT_TRUE(r->attributes.empty());
  EXPECT_EQ(r->scsi_grown_defects, 260u);
  EXPECT_EQ(r->scsi_errors, (std::vector<parsers::SmartScsiErrorCounter>{{"read", 1}, {"write", 535}}));
  std::string src;
  EXPECT_FALSE(parsers::SmartWrittenBytes(*r, &src));
  EXPECT_FALSE(parsers::SmartLifeRemaining(*r, &src));
  auto bad = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},
    "scsi_error_counter_log":{"read":{"total_uncorrected_errors":-1}}})");
  EXPECT_EQ(bad.error, "scsi_error_counter_log.<kind>.total_uncorrected_errors: not a non-negative integer");
}

TEST(SmartctlJson, NvmeBehindABridgeAndWearOrder) {
  auto r = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},
    "device":{"name":"/dev/sda","type":"sntrealtek","protocol":"NVMe"},
    "nvme_smart_health_information_log":{"critical_warning":0,"percentage_used":3,"available_spare":100,
      "data_units_written":1000,"data_units_read":2000,"media_errors":0,"unsafe_shutdowns":12}})");
  ASSERT_TRUE(r) << r.error;
  ASSERT_TRUE(r->nvme);
  std::string src;
  EXPECT_EQ(parsers::SmartWrittenBytes(*r, &src), 1000 * 512000.0);
  EXPECT_EQ(src, "data_units_written");
  EXPECT_DOUBLE_EQ(*parsers::SmartLifeRemaining(*r, &src), 0.97);
  SmartctlReport worn = *r;
  worn.nvme->percentage_used = 120;  // past the rated endurance
  EXPECT_EQ(parsers::SmartLifeRemaining(worn, &src), 0.0);
  SmartctlReport ssd;
  ssd.attributes = {{177, "Wear_Leveling_Count", 91, 91, 0, "", true, 104, "104"},
                    {202, "Percent_Lifetime_Remain", 87, 87, 1, "", false, 13, "13"}};
  EXPECT_DOUBLE_EQ(*parsers::SmartLifeRemaining(ssd, &src), 0.87);
  EXPECT_EQ(src, "Percent_Lifetime_Remain");
}

// Seen while writing the smartctl_json fuzz target's invariant (a life left is 0-1), which traps on
// this input: a wear attribute whose normalized value is not a percentage (253, the ATA "not
// measured yet" value, or anything above 100) was exported as a life left of 2.53.
TEST(SmartctlJson, WearAttributeOutsideZeroToHundredIsNotALifeLeft) {
  auto r = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},
    "ata_smart_attributes":{"table":[{"id":231,"name":"SSD_Life_Left","value":253,"worst":253,"thresh":0},
      {"id":177,"name":"Wear_Leveling_Count","value":96,"worst":96,"thresh":0}]}})");
  ASSERT_TRUE(r) << r.error;
  std::string src;
  EXPECT_DOUBLE_EQ(*parsers::SmartLifeRemaining(*r, &src), 0.96);  // the next attribute in the order
  EXPECT_EQ(src, "Wear_Leveling_Count");
  SmartctlReport one = *r;
  one.attributes.pop_back();
  EXPECT_FALSE(parsers::SmartLifeRemaining(one, &src));
  one.attributes[0].value = -1;
  EXPECT_FALSE(parsers::SmartLifeRemaining(one, &src));
  one.attributes[0].value = 100;
  EXPECT_EQ(parsers::SmartLifeRemaining(one, &src), 1.0);
}

// A fresh-user trial's stand-in smartctl printed 1 MiB of '[' (within the output bound): the JSON
// parser's node per bracket grew the exporter from 6 to 84 MB. The depth is checked first.
TEST(SmartctlJson, DeepNestingIsRefusedBeforeParsing) {
  const std::string deep(1 << 20, '[');
  auto r = ParseSmartctlJson(deep);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "arrays and objects nested more than 32 deep: not smartctl --json output");
  // Brackets inside strings (escaped quotes too) are not nesting; 32 levels are accepted.
  std::string ok = R"({"json_format_version":[1,0],"smartctl":{"exit_status":0,"messages":[{"string":"[[[\"{{{"}]}, "x":)";
  ok += std::string(29, '[') + std::string(29, ']') + "}";
  r = ParseSmartctlJson(ok);
  EXPECT_TRUE(r) << r.error;
  std::string too_deep = R"({"json_format_version":[1,0],"smartctl":{"exit_status":0}, "x":)";
  too_deep += std::string(32, '[') + std::string(32, ']') + "}";
  EXPECT_FALSE(ParseSmartctlJson(too_deep));
}

// The same trial: a table listing id 5 twice exported two samples of one series (Prometheus kept
// one silently). The first row stays, as Attribute() reads it.
TEST(SmartctlJson, ARepeatedAttributeIdKeepsItsFirstRow) {
  auto r = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},
    "ata_smart_attributes":{"table":[{"id":5,"name":"Reallocated_Sector_Ct","value":100,"raw":{"value":1}},
      {"id":9,"name":"Power_On_Hours","value":99,"raw":{"value":7}},
      {"id":5,"name":"Reallocated_Sector_Ct","value":90,"raw":{"value":2}}]}})");
  ASSERT_TRUE(r) << r.error;
  ASSERT_EQ(r->attributes.size(), 2u);
  EXPECT_EQ(r->attributes[0].raw, 1u);
  EXPECT_EQ(r->attributes[1].id, 9);
  EXPECT_EQ(r->Attribute(5)->value, 100);
}

TEST(SmartctlJson, RefusesWhatIsNotSmartctlOutput) {
  auto r = ParseSmartctlJson("{\"json_format_version\": [1, 0], \"smartctl\": ");
  EXPECT_FALSE(r);
  EXPECT_TRUE(r.error.starts_with("not JSON: ")) << r.error;
  EXPECT_NE(r.error.find("line 1, column 45"), std::string::npos) << r.error;
  r = ParseSmartctlJson("[]");
  EXPECT_EQ(r.error, "not a JSON object");
  r = ParseSmartctlJson(R"({"json_format_version":[2,0],"smartctl":{"exit_status":0}})");
  EXPECT_EQ(r.error, "json_format_version is not [1, ...]: not smartctl --json output");
  r = ParseSmartctlJson(R"({"json_format_version":[1,0]})");
  EXPECT_EQ(r.error, "smartctl.exit_status missing");
  r = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},"temperature":{"current":"hot"}})");
  EXPECT_EQ(r.error, "temperature.current: not a number");
  r = ParseSmartctlJson(
      R"({"json_format_version":[1,0],"smartctl":{"exit_status":0},"ata_smart_attributes":{"table":[{"id":0}]}})");
  EXPECT_EQ(r.error, "ata_smart_attributes.table[].id: 0 is not 1-255");
  r = ParseSmartctlJson(R"({"json_format_version":[1,0],"smartctl":{"exit_status":2,
    "messages":[{"string":"Smartctl open device: /dev/sda failed: Permission denied","severity":"error"}]}})");
  ASSERT_TRUE(r) << r.error;  // a failed run is still a report: the reason comes from it
  EXPECT_FALSE(r->smart_passed);
  ChildResult run;
  run.exited = true;
  run.exit_status = 2;
  bool standby;
  EXPECT_EQ(SmartFailureReason(run, r, &standby), "permission");
}

TEST(SmartFailureReason, EachOutcome) {
  auto report = [](int status, const char* message) {
    return ParseSmartctlJson(std::string(R"({"json_format_version":[1,0],"smartctl":{"exit_status":)") +
                             std::to_string(status) + R"(,"messages":[{"string":")" + message + R"("}]}})");
  };
  auto exited = [](int status) {
    ChildResult r;
    r.exited = true;
    r.exit_status = status;
    return r;
  };
  bool standby = false;
  ChildResult timeout;
  timeout.timed_out = true;
  EXPECT_EQ(SmartFailureReason(timeout, report(0, ""), &standby), "timeout");
  ChildResult big;
  big.output_overflow = true;
  EXPECT_EQ(SmartFailureReason(big, report(0, ""), &standby), "output_too_large");
  ChildResult killed;
  killed.signal = 9;
  EXPECT_EQ(SmartFailureReason(killed, report(0, ""), &standby), "killed");
  EXPECT_EQ(SmartFailureReason(exited(3), report(3, "Device is in STANDBY mode, exit(3)"), &standby), "");
  EXPECT_TRUE(standby);
  // 3 without smartctl's word for it: the two bits it is made of.
  EXPECT_EQ(SmartFailureReason(exited(3), report(3, "/dev/sdz: Unable to detect device type"), &standby),
            "command_line");
  EXPECT_FALSE(standby);
  EXPECT_EQ(SmartFailureReason(exited(0), ParseSmartctlJson("garbage"), &standby), "parse");
  EXPECT_FALSE(standby);
  EXPECT_EQ(SmartFailureReason(exited(1), report(1, "/dev/sda: Unknown USB bridge [0x0634:0x5604 (0x5604)]"), &standby),
            "unknown_usb_bridge");
  EXPECT_EQ(SmartFailureReason(exited(1), report(1, "=======> UNRECOGNIZED OPTION"), &standby), "command_line");
  EXPECT_EQ(SmartFailureReason(exited(2), report(2, "Read Device Identity failed: Operation not permitted"), &standby),
            "permission");
  EXPECT_EQ(SmartFailureReason(exited(2), report(2, "Smartctl open device: /dev/sdb failed: No such device"), &standby),
            "open");
  EXPECT_EQ(SmartFailureReason(exited(4), report(4, "SMART Status command failed"), &standby), "");
}

// RunChild on /bin/sh: exit status, stdout, the bounds. Timing margins are wide: a busy 2-core
// machine delays a spawn by tens of milliseconds, the bounds asserted are seconds.
TEST(RunChild, ExitStatusOutputAndBounds) {
  ChildResult r = RunChild({"/bin/sh", "-c", "echo hello; echo err >&2; exit 7"}, std::chrono::seconds(30), 1024);
  EXPECT_EQ(r.spawn_error, 0);
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_status, 7);
  EXPECT_EQ(r.output, "hello\n");  // stderr is not captured
  EXPECT_GE(r.cpu_seconds, 0);

  r = RunChild({"/bin/sh", "-c", "echo \"$PATH|$LC_ALL|$HOME\""}, std::chrono::seconds(30), 1024);
  EXPECT_EQ(r.output, "/usr/sbin:/usr/bin:/sbin:/bin|C|\n");  // only the environment it is given

  const auto t0 = std::chrono::steady_clock::now();
  r = RunChild({"/bin/sh", "-c", "echo started; exec sleep 30"}, std::chrono::milliseconds(300), 1024);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.output, "started\n");
  EXPECT_LT(took, 10.0);  // not the child's 30 s

  r = RunChild({"/bin/sh", "-c", "while :; do echo 0123456789; done"}, std::chrono::seconds(30), 5000);
  EXPECT_TRUE(r.output_overflow);
  EXPECT_EQ(r.output.size(), 5000u);
  EXPECT_EQ(r.signal, SIGKILL);

  r = RunChild({"/nonexistent/smartctl", "-j"}, std::chrono::seconds(5), 1024);
  // Under qemu-user (the cross builds' unit tests, DISKPROBE_EMULATOR set) posix_spawn's vfork
  // is a fork and the exec failure comes back as the child's exit status 127, as from a shell.
  if (std::getenv("DISKPROBE_EMULATOR") != nullptr && r.spawn_error == 0) {
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.exit_status, 127);
  } else {
    EXPECT_EQ(r.spawn_error, ENOENT);
    EXPECT_FALSE(r.exited);
  }
}

// A child that closes its stdout and runs on (a wrapper, a smartctl stuck exiting on a hung
// bridge) is timed out too: the deadline bounds the wait for its exit, not only the reading.
TEST(RunChild, AChildThatClosesStdoutAndRunsOnIsTimedOut) {
  const auto t0 = std::chrono::steady_clock::now();
  ChildResult r = RunChild({"/bin/sh", "-c", "echo partial; exec >&-; exec sleep 30"}, std::chrono::milliseconds(300), 1024);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exited);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(r.output, "partial\n");
  EXPECT_LT(took, 10.0);  // not the child's 30 s
}

// Whatever the child started goes with it: on a timeout, and when the child exits leaving a
// background process behind.
TEST(RunChild, TheChildsProcessGroupIsKilled) {
  std::string dir = (std::filesystem::temp_directory_path() / "diskprobe-runchild-XXXXXX").string();
  ASSERT_NE(::mkdtemp(dir.data()), nullptr);
  const std::string pidfile = dir + "/grandchild.pid";
  const auto alive = [&pidfile] {
    std::ifstream f(pidfile);
    pid_t pid = 0;
    f >> pid;
    if (pid <= 0) return std::optional<bool>();
    // Reaped by init once killed; until then a zombie counts as gone (state Z).
    std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(st, line)) return std::optional<bool>(false);
    const auto close = line.rfind(')');
    return std::optional<bool>(close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z');
  };
  const auto gone_within = [&](double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      if (alive() == std::optional<bool>(false)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  // Timed out with a grandchild running.
  ChildResult r = RunChild({"/bin/sh", "-c", "sleep 30 & echo $! > " + pidfile + "; echo ok; wait"},
                           std::chrono::milliseconds(500), 1024);
  EXPECT_TRUE(r.timed_out);
  ASSERT_TRUE(alive().has_value()) << "the grandchild's pid was not written";
  EXPECT_TRUE(gone_within(10)) << "the grandchild outlived the timeout";
  // Exited normally, a background process left behind (stdout handed off to /dev/null).
  std::filesystem::remove(pidfile);
  r = RunChild({"/bin/sh", "-c", "sleep 30 >/dev/null & echo $! > " + pidfile + "; exit 0"}, std::chrono::seconds(30), 1024);
  EXPECT_TRUE(r.exited);
  EXPECT_FALSE(r.timed_out);
  ASSERT_TRUE(alive().has_value());
  EXPECT_TRUE(gone_within(10)) << "the background process outlived the run";
  std::filesystem::remove_all(dir);
}


// A sysfs tree with two sd disks and an SD card, and a fake smartctl behind the reader.
class SmartReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/diskprobe-smart-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    sysfs_ = root_ + "/sys";
    Disk("sda", "8:0");
    Disk("sdb", "8:16");
    Disk("mmcblk0", "179:0");
    RuntimeStatus("sda", "active");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Disk(const std::string& disk, const std::string& dev) {
    fs::create_directories(sysfs_ + "/block/" + disk + "/device/power");
    std::ofstream(sysfs_ + "/block/" + disk + "/dev") << dev << "\n";
  }
  void RuntimeStatus(const std::string& disk, const std::string& s) {
    std::ofstream(sysfs_ + "/block/" + disk + "/device/power/runtime_status") << s << "\n";
  }
  static ChildResult Exited(int status, std::string output) {
    ChildResult r;
    r.exited = true;
    r.exit_status = status;
    r.output = std::move(output);
    r.cpu_seconds = 0.015;
    r.wall_seconds = 0.25;
    r.input_blocks = 8;
    return r;
  }

  std::string root_, sysfs_;
};

TEST_F(SmartReaderTest, RunsSmartctlPerSdDiskSkipsSuspendedAndStandbyClearsOnFailure) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  ASSERT_EQ(reg.Snapshot()->size(), 3u);
  std::vector<std::vector<std::string>> runs;
  std::map<std::string, ChildResult> next;
  SmartHealthReader::Options opt;
  opt.smartctl_path = "/opt/smartctl";
  opt.timeout = std::chrono::seconds(42);
  SmartHealthReader reader(sysfs_, "/devfs", &reg, opt,
                           [&](const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
                             EXPECT_EQ(timeout, std::chrono::seconds(42));
                             runs.push_back(argv);
                             return next.at(argv.back());
                           },
                           [] { return true; });
  next["/devfs/sda"] = Exited(0, Recorded("01-sat-intel-s3520-m2-ssd.json"));
  next["/devfs/sdb"] = Exited(216, Recorded("02-usbjmicron-wdc-scorpio-failing.json"));
  reader.PassNow();
  ASSERT_EQ(runs.size(), 2u);  // not the SD card
  EXPECT_EQ(runs[0], (std::vector<std::string>{"/opt/smartctl", "--json=c", "--info", "--health", "--attributes",
                                                "--nocheck=standby,3", "/devfs/sda"}));
  SmartHealthSnapshot s = reader.Snapshot();
  EXPECT_TRUE(s.smartctl_available);
  ASSERT_EQ(s.disks.size(), 2u);
  ASSERT_TRUE(s.disks.at("sda").report);
  EXPECT_EQ(s.disks.at("sda").report->model_name, "SSDSCKJB240G7R");
  EXPECT_EQ(s.disks.at("sdb").report->smart_passed, false);
  EXPECT_EQ(s.disks.at("sda").reads, 1u);
  EXPECT_DOUBLE_EQ(s.disks.at("sda").read_cpu_seconds, 0.015);
  EXPECT_EQ(s.disks.at("sda").read_input_blocks, 8u);

  // sda runtime-suspended: not opened; sdb spun down: smartctl stops with 3. Both keep values.
  RuntimeStatus("sda", "suspended");
  next["/devfs/sdb"] = Exited(3, R"j({"json_format_version":[1,0],"smartctl":{"exit_status":3,"messages":[
    {"string":"Device is in STANDBY mode, exit(3)","severity":"information"}]}})j");
  reader.PassNow();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs.back().back(), "/devfs/sdb");
  s = reader.Snapshot();
  EXPECT_EQ(s.disks.at("sda").skipped.at("suspended"), 1u);
  EXPECT_EQ(s.disks.at("sdb").skipped.at("standby"), 1u);
  EXPECT_TRUE(s.disks.at("sda").report);
  EXPECT_TRUE(s.disks.at("sdb").report);
  EXPECT_EQ(s.disks.at("sdb").reads, 1u);

  // A failed run clears the values (absent, not stale).
  RuntimeStatus("sda", "active");
  ChildResult hung;
  hung.timed_out = true;
  hung.signal = SIGKILL;
  next["/devfs/sda"] = hung;
  next["/devfs/sdb"] = Exited(2, R"({"json_format_version":[1,0],"smartctl":{"exit_status":2,"messages":[
    {"string":"Read Device Identity failed: Operation not permitted","severity":"error"}]}})");
  reader.PassNow();
  s = reader.Snapshot();
  EXPECT_FALSE(s.disks.at("sda").report);
  EXPECT_EQ(s.disks.at("sda").error, "timeout");
  EXPECT_EQ(s.disks.at("sdb").failures.at("permission"), 1u);
  EXPECT_FALSE(s.disks.at("sdb").report);
  EXPECT_EQ(s.disks.at("sda").runs, 2u);

  // smartctl gone: the source is off, no per-disk entries.
  ChildResult missing;
  missing.spawn_error = ENOENT;
  next["/devfs/sda"] = missing;
  reader.PassNow();
  s = reader.Snapshot();
  EXPECT_FALSE(s.smartctl_available);
  EXPECT_TRUE(s.disks.empty());
  EXPECT_EQ(s.passes, 4u);
}

TEST_F(SmartReaderTest, DeviceTypeFromTheFirstMatchingPatternIsTwoArgvElements) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  auto cfg = config::LoadString("health:\n  smart_device_types: {sdb: sntrealtek, 'sd[a-z]': 'sat,12'}\n", "t.yml");
  ASSERT_TRUE(cfg.config) << (cfg.errors.empty() ? "" : cfg.errors[0].ToString());
  SmartHealthReader::Options opt;
  opt.smartctl_path = "/opt/smartctl";
  opt.device_types = cfg.config->health.smart_device_types;
  std::map<std::string, std::vector<std::string>> runs;
  SmartHealthReader reader(sysfs_, "/devfs", &reg, opt,
                           [&](const std::vector<std::string>& argv, std::chrono::milliseconds) {
                             runs[argv.back()] = argv;
                             return Exited(0, Recorded("01-sat-intel-s3520-m2-ssd.json"));
                           },
                           [] { return true; });
  reader.PassNow();
  const std::vector<std::string> head = {"/opt/smartctl", "--json=c", "--info", "--health", "--attributes",
                                         "--nocheck=standby,3"};
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> v = head;
    v.insert(v.end(), tail.begin(), tail.end());
    return v;
  };
  EXPECT_EQ(runs.at("/devfs/sdb"), with({"-d", "sntrealtek", "/devfs/sdb"}));  // the first match, not the wider one
  EXPECT_EQ(runs.at("/devfs/sda"), with({"-d", "sat,12", "/devfs/sda"}));
  // No match: no -d at all (smartctl's own detection), as before the key existed.
  opt.device_types.clear();
  reader.SetOptions(opt);
  reader.PassNow();
  EXPECT_EQ(runs.at("/devfs/sda"), with({"/devfs/sda"}));
  EXPECT_EQ(SmartHealthReader::Command("/s", "/dev/sdz", ""), (std::vector<std::string>{
                                                                   "/s", "--json=c", "--info", "--health", "--attributes",
                                                                   "--nocheck=standby,3", "/dev/sdz"}));
}

TEST_F(SmartReaderTest, WithoutRawioSmartctlIsNotRunAndEveryDiskSaysPermission) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  int runs = 0;
  SmartHealthReader::Options opt;
  opt.smartctl_path = "/bin/sh";  // exists and is executable
  SmartHealthReader reader(sysfs_, "/devfs", &reg, opt,
                           [&](const std::vector<std::string>&, std::chrono::milliseconds) {
                             ++runs;
                             return Exited(0, Recorded("01-sat-intel-s3520-m2-ssd.json"));
                           },
                           [] { return false; });
  reader.PassNow();
  EXPECT_EQ(runs, 0);
  SmartHealthSnapshot s = reader.Snapshot();
  EXPECT_TRUE(s.smartctl_available);
  ASSERT_EQ(s.disks.size(), 2u);
  EXPECT_EQ(s.disks.at("sda").failures.at("permission"), 1u);
  EXPECT_FALSE(s.disks.at("sdb").report);
  // And smartctl missing still reads as missing, not as permission.
  opt.smartctl_path = "/nonexistent/smartctl";
  reader.SetOptions(opt);
  reader.PassNow();
  EXPECT_FALSE(reader.Snapshot().smartctl_available);
}

// No sd disk at all (a Pi booting from its SD card): nothing is run, and smartctl_up still tells
// whether smartctl could be (it read 1 with smartmontools not installed).
TEST_F(SmartReaderTest, WithoutSdDisksAvailabilityIsStillTheExecutablesOwn) {
  fs::remove_all(sysfs_ + "/block/sda");
  fs::remove_all(sysfs_ + "/block/sdb");
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  ASSERT_EQ(reg.Snapshot()->size(), 1u);
  int runs = 0;
  SmartHealthReader::Options opt;
  opt.smartctl_path = "/nonexistent/smartctl";
  SmartHealthReader reader(
      sysfs_, "/devfs", &reg, opt,
      [&](const std::vector<std::string>&, std::chrono::milliseconds) {
        ++runs;
        return Exited(0, "");
      },
      [] { return true; });
  reader.PassNow();
  EXPECT_FALSE(reader.Snapshot().smartctl_available);
  opt.smartctl_path = "/bin/sh";  // exists and is executable
  reader.SetOptions(opt);
  reader.PassNow();
  EXPECT_TRUE(reader.Snapshot().smartctl_available);
  EXPECT_EQ(runs, 0);
}

TEST_F(SmartReaderTest, ThreadReadsAtStartAndStops) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  std::atomic<int> calls{0};
  SmartHealthReader::Options opt;
  opt.interval = std::chrono::hours(1);
  SmartHealthReader reader(sysfs_, "/devfs", &reg, opt, [&](const std::vector<std::string>&, std::chrono::milliseconds) {
    ++calls;
    return Exited(0, Recorded("01-sat-intel-s3520-m2-ssd.json"));
  }, [] { return true; });
  reader.Start();
  for (int i = 0; i < 5000 && reader.Snapshot().passes == 0; ++i) ::usleep(1000);
  EXPECT_EQ(reader.Snapshot().passes, 1u);
  EXPECT_TRUE(reader.Stop(std::chrono::seconds(30)));  // wakes the hour-long wait
  EXPECT_EQ(calls.load(), 2);  // sda and sdb, once
}

TEST_F(SmartReaderTest, CollectorExportsTheDrivesReportAndOnlyReadStateAfterAFailure) {
  DeviceRegistry reg(sysfs_, {});
  reg.Refresh();
  std::map<std::string, ChildResult> next;
  SmartHealthReader reader(sysfs_, "/devfs", &reg, {},
                           [&](const std::vector<std::string>& argv, std::chrono::milliseconds) {
                             return next.at(argv.back());
                           },
                           [] { return true; });
  collectors::SmartCollector c(&reader);
  collectors::Paths paths;
  paths.sysfs = sysfs_;
  std::shared_ptr<const DeviceList> devices = reg.Snapshot();
  collectors::ScrapeContext ctx{paths, *devices};
  auto before = testing::Collect(c, ctx);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before.text.find("diskprobe_smart_smartctl_up "), std::string::npos);  // no pass yet
  EXPECT_EQ(before.text.find("diskprobe_smart_up{"), std::string::npos);

  next["/devfs/sda"] = Exited(0, Recorded("01-sat-intel-s3520-m2-ssd.json"));
  next["/devfs/sdb"] = Exited(216, Recorded("02-usbjmicron-wdc-scorpio-failing.json"));
  reader.PassNow();
  auto got = testing::Collect(c, ctx);
  ASSERT_TRUE(got.ok()) << got.result.error;
  const std::string a = "{device=\"sda\"}", b = "{device=\"sdb\"}";
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_smartctl_up"), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_up" + a), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_health_passed" + a), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_health_passed" + b), 0);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_temperature_celsius" + a), 47);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_power_on_seconds_total" + a), 21213.0 * 3600);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_power_cycles_total" + b), 3440);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_reallocated_sectors_total" + b), 535);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_pending_sectors" + b), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_offline_uncorrectable_sectors" + a), 0);
  EXPECT_EQ(testing::SampleValue(got.text,
                                 "diskprobe_smart_written_bytes_total{attribute=\"Host_Writes_32MiB\",device=\"sda\"}"),
            129493.0 * 32 * 1024 * 1024);
  EXPECT_EQ(got.text.find("diskprobe_smart_written_bytes_total{attribute=\"Host_Writes_32MiB\",device=\"sdb\"}"),
            std::string::npos);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_smart_life_remaining_ratio{attribute=\"Percent_Life_Remaining\",device=\"sda\"}"),
            1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_status_bit{device=\"sdb\",kind=\"disk_failing\"}"), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_status_bit{device=\"sdb\",kind=\"command_failed\"}"), 0);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_status_bit{device=\"sdb\",kind=\"self_test_errors\"}"), 1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_status_bit{device=\"sda\",kind=\"disk_failing\"}"), 0);
  EXPECT_EQ(testing::SampleValue(got.text,
                                 "diskprobe_smart_attribute_value{device=\"sdb\",id=\"5\",name=\"Reallocated_Sector_Ct\"}"),
            133);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_smart_attribute_threshold{device=\"sdb\",id=\"5\",name=\"Reallocated_Sector_Ct\"}"),
            140);
  EXPECT_EQ(testing::SampleValue(got.text,
                                 "diskprobe_smart_attribute_raw{device=\"sda\",id=\"201\",name=\"Power_Loss_Cap_Test\"}"),
            1331519965652.0);
  EXPECT_EQ(testing::SampleValue(
                got.text,
                "diskprobe_smart_info{device=\"sdb\",firmware=\"12.01A12\",model=\"WDC WD3200BEVT-60ZCT0\","
                "model_family=\"Western Digital Scorpio Blue Serial ATA\",protocol=\"ATA\",type=\"usbjmicron\"}"),
            1);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_read_cpu_seconds_total" + a), 0.015);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_smart_read_input_bytes_total" + a), 8 * 512);
  EXPECT_EQ(got.text.find("mmcblk0"), std::string::npos);

  next["/devfs/sda"] = Exited(2, R"({"json_format_version":[1,0],"smartctl":{"exit_status":2,"messages":[
    {"string":"Smartctl open device: /dev/sda failed: Permission denied","severity":"error"}]}})");
  reader.PassNow();
  auto failed = testing::Collect(c, ctx);
  EXPECT_EQ(testing::SampleValue(failed.text, "diskprobe_smart_up" + a), 0);
  EXPECT_EQ(testing::SampleValue(failed.text, "diskprobe_smart_read_failures_total{device=\"sda\",reason=\"permission\"}"),
            1);
  for (const char* fam : {"diskprobe_smart_temperature_celsius", "diskprobe_smart_info", "diskprobe_smart_attribute_value",
                          "diskprobe_smart_status_bit", "diskprobe_smart_written_bytes_total"})
    EXPECT_EQ(failed.text.find(std::string(fam) + "{device=\"sda\""), std::string::npos) << fam;
  EXPECT_EQ(testing::SampleValue(failed.text, "diskprobe_smart_temperature_celsius" + b), 27);  // sdb still read

  ChildResult missing;
  missing.spawn_error = ENOENT;
  next["/devfs/sda"] = missing;
  reader.PassNow();
  auto off = testing::Collect(c, ctx);
  EXPECT_EQ(testing::SampleValue(off.text, "diskprobe_smart_smartctl_up"), 0);
  EXPECT_EQ(off.text.find("diskprobe_smart_up{"), std::string::npos);

  collectors::SmartCollector none(nullptr);
  EXPECT_FALSE(testing::Collect(none, ctx).ok());
}

}  // namespace
}  // namespace diskprobe
