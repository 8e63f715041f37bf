// config/: the embedded default, loading files on top of it, and every kind of bad input with the
// exact message an operator sees.
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace diskprobe::config {
namespace {

using namespace std::chrono_literals;
using testing::Fixture;
using testing::ReadText;

std::vector<std::string> Messages(const LoadResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.errors) out.push_back(e.ToString());
  return out;
}

TEST(Config, EmbeddedDefaultIsConfigDefaultYml) {
  // One source of truth: the binary embeds config/default.yml byte for byte.
  EXPECT_EQ(std::string(kDefaultConfigYaml), ReadText(std::string(DISKPROBE_SOURCE_DIR) + "/config/default.yml"));
}

TEST(Config, DefaultValues) {
  LoadResult r = LoadDefault();
  ASSERT_TRUE(r.config) << ::testing::PrintToString(Messages(r));
  const Config& c = *r.config;
  EXPECT_EQ(c.source, kDefaultConfigName);
  EXPECT_TRUE(c.devices.include.empty());
  ASSERT_EQ(c.devices.exclude.size(), 2u);
  EXPECT_EQ(c.devices.exclude[0].source, "ram[0-9]+");
  EXPECT_EQ(c.devices.discovery_interval, 30s);
  EXPECT_TRUE(c.devices.Selects("mmcblk0"));
  EXPECT_TRUE(c.devices.Selects("loop3"));
  EXPECT_FALSE(c.devices.Selects("zram0"));
  EXPECT_FALSE(c.devices.Selects("ram15"));
  EXPECT_TRUE(c.devices.Selects("ramdisk")) << "patterns are anchored: ram[0-9]+ does not match ramdisk";
}

TEST(Config, GoodFileOverridesOnlyWhatItNames) {
  LoadResult r = LoadFile(Fixture("config/good.yml"));
  ASSERT_TRUE(r.config) << ::testing::PrintToString(Messages(r));
  EXPECT_EQ(r.config->devices.discovery_interval, 60s);
  ASSERT_EQ(r.config->devices.include.size(), 2u);
  EXPECT_EQ(r.config->devices.exclude.size(), 2u) << "exclude keeps its default";
  EXPECT_TRUE(r.config->devices.Selects("mmcblk1"));
  EXPECT_TRUE(r.config->devices.Selects("sdb"));
  EXPECT_FALSE(r.config->devices.Selects("vda"));
  EXPECT_FALSE(r.config->devices.Selects("sdb1x1"));
}

TEST(Config, EmptyFileIsTheDefault) {
  LoadResult r = LoadString("", "empty.yml");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->devices.discovery_interval, 30s);
  LoadResult comments = LoadString("# nothing\n", "c.yml");
  ASSERT_TRUE(comments.config);
}

TEST(Config, EveryBadInputReportedWithPosition) {
  const std::string f = Fixture("config/bad-all.yml");
  LoadResult r = LoadFile(f);
  EXPECT_FALSE(r.config);
  std::vector<std::string> got = Messages(r);
  ASSERT_EQ(got.size(), 5u) << ::testing::PrintToString(got);
  // In document order. The regex error's tail comes from libstdc++; assert position and our wording.
  EXPECT_EQ(got[0].rfind(f + ":3:13: devices.include[0]: invalid regular expression \"mmcblk[0-9\": ", 0), 0u)
      << got[0];
  EXPECT_EQ(got[1], f + ":4:12: devices.exclude: must be a list of regular expressions, got a scalar");
  EXPECT_EQ(got[2], f + ":5:23: devices.discovery_interval: invalid duration \"30\": want an integer and a unit "
                        "(ms, s, m, h, d, w), largest first, e.g. 30s, 5m, 1h30m");
  EXPECT_EQ(got[3], f + ":6:3: devices.discovery_intervall: unknown key (known keys: include, exclude, discovery_interval)");
  EXPECT_EQ(got[4], f + ":7:1: probez: unknown key (known keys: devices, probes)");
}

TEST(Config, WrongTypes) {
  auto r = LoadString("devices: [1, 2]\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:1:10: devices: must be a mapping, got a list"});
  r = LoadString("devices:\n  include: {a: 1}\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"t.yml:2:12: devices.include: must be a list of regular expressions, got a mapping"});
  r = LoadString("devices:\n  include: [[x]]\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"t.yml:2:13: devices.include[0]: must be a regular expression string, got a list"});
  r = LoadString("devices:\n  discovery_interval: [30s]\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"t.yml:2:23: devices.discovery_interval: must be a duration, got a list"});
  r = LoadString("- a\n- b\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:1:1: must be a mapping, got a list"});
}

TEST(Config, DurationBelowMinimum) {
  auto r = LoadString("devices:\n  discovery_interval: 500ms\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             "t.yml:2:23: devices.discovery_interval: duration \"500ms\" is below the minimum of 1000ms"});
}

TEST(Config, DuplicateKey) {
  auto r = LoadString("devices:\n  include: []\n  include: ['sda']\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:3:3: devices.include: duplicate key"});
}

TEST(Config, SyntaxError) {
  auto r = LoadString("devices:\n  include: [a, b\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "t.yml");
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].message.rfind("YAML syntax error: ", 0), 0u) << r.errors[0].message;
}

TEST(Config, UnreadableFile) {
  auto r = LoadFile("/nonexistent/diskprobe.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"/nonexistent/diskprobe.yml:0:0: cannot read: No such file or directory"});
}

TEST(ParseDuration, Accepts) {
  EXPECT_EQ(ParseDuration("30s"), 30s);
  EXPECT_EQ(ParseDuration("5m"), 5min);
  EXPECT_EQ(ParseDuration("500ms"), 500ms);
  EXPECT_EQ(ParseDuration("1h30m"), 90min);
  EXPECT_EQ(ParseDuration("1d"), 24h);
  EXPECT_EQ(ParseDuration("2w"), 336h);
  EXPECT_EQ(ParseDuration("1m500ms"), 60500ms);
  EXPECT_EQ(ParseDuration("0s"), 0ms);
}

TEST(ParseDuration, Rejects) {
  for (const char* s : {"", "30", "s", "30S", "1.5s", "-1s", "30 s", "1m1h", "1s1s", "5mm", "1y", "30sec",
                        "99999999999999999999s", "9999999999999999w"}) {
    EXPECT_FALSE(ParseDuration(s).has_value()) << s;
  }
}

TEST(ParseSize, AcceptsAndRejects) {
  EXPECT_EQ(ParseSize("4096"), 4096u);
  EXPECT_EQ(ParseSize("512B"), 512u);
  EXPECT_EQ(ParseSize("4KiB"), 4096u);
  EXPECT_EQ(ParseSize("16MiB"), 16u << 20);
  EXPECT_EQ(ParseSize("128MiB"), 128u << 20);
  EXPECT_EQ(ParseSize("1GiB"), 1u << 30);
  EXPECT_EQ(ParseSize("2TiB"), 2ull << 40);
  EXPECT_EQ(ParseSize("4kB"), 4000u);
  EXPECT_EQ(ParseSize("10MB"), 10000000u);
  for (const char* s : {"", "KiB", "4 KiB", "4kib", "4KB", "4K", "1.5MiB", "-1", "4iB", "16777216TiB",
                        "18446744073709551616"}) {
    EXPECT_FALSE(ParseSize(s).has_value()) << s;
  }
}

// The reader's size accessor, with the messages the probe settings will show.
TEST(YamlReader, SizeErrors) {
  std::vector<Error> errors;
  YamlReader r("s.yml", &errors);
  YAML::Node doc = YAML::Load("a: 16MiB\nb: 16MB\nc: 4KB\nd: 1KiB\ne: [1]\n");
  std::uint64_t a = 0, b = 0, c = 7, d = 7, e = 7;
  r.ReadSize(doc, "probe", "a", &a, 4096, 1ull << 30);
  r.ReadSize(doc, "probe", "b", &b, 4096, 1ull << 30);
  r.ReadSize(doc, "probe", "c", &c, 4096, 1ull << 30);
  r.ReadSize(doc, "probe", "d", &d, 4096, 1ull << 30);
  r.ReadSize(doc, "probe", "e", &e, 4096, 1ull << 30);
  EXPECT_EQ(a, 16u << 20);
  EXPECT_EQ(b, 16000000u);
  EXPECT_EQ(c, 7u) << "left untouched on error";
  EXPECT_EQ(d, 7u);
  std::vector<std::string> got;
  for (const auto& err : errors) got.push_back(err.ToString());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "s.yml:3:4: probe.c: invalid size \"4KB\": want bytes or an integer with B, KiB, MiB, GiB, TiB, "
                     "kB, MB, GB or TB, e.g. 4KiB, 16MiB",
                     "s.yml:4:4: probe.d: size \"1KiB\" is outside 4096..1073741824 bytes",
                     "s.yml:5:4: probe.e: must be a size, got a list"}));
}

TEST(YamlReader, Bools) {
  std::vector<Error> errors;
  YamlReader r("b.yml", &errors);
  YAML::Node doc = YAML::Load("x: true\ny: yes\nz: True\nw: FALSE\nq: \"true\"\n");
  bool x = false, y = false, z = false, w = true, q = false;
  r.ReadBool(doc, "", "x", &x);
  r.ReadBool(doc, "", "y", &y);
  r.ReadBool(doc, "", "z", &z);  // YAML 1.2 core schema spellings
  r.ReadBool(doc, "", "w", &w);
  r.ReadBool(doc, "", "q", &q);
  EXPECT_TRUE(x);
  EXPECT_FALSE(y);
  EXPECT_TRUE(z);
  EXPECT_FALSE(w);
  EXPECT_FALSE(q) << "a quoted \"true\" is a string";
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].ToString(), "b.yml:2:4: y: must be true or false, got \"yes\"");
  EXPECT_EQ(errors[1].ToString(), "b.yml:5:4: q: must be true or false, got the string \"true\" (remove the quotes)");
}

}  // namespace
}  // namespace diskprobe::config

namespace diskprobe::config {
namespace {

TEST(ProbesConfig, Defaults) {
  auto r = LoadDefault();
  ASSERT_TRUE(r.config);
  const ProbesConfig& p = r.config->probes;
  EXPECT_TRUE(p.enabled);
  EXPECT_EQ(p.state_directory, "/var/lib/diskprobe_exporter");
  EXPECT_EQ(p.WriteDirectories(), std::vector<std::string>{"/var/lib/diskprobe_exporter"});
  EXPECT_EQ(p.probe_file_size, 16u << 20);
  EXPECT_EQ(p.io_priority, IoPriority::kIdle);
  EXPECT_DOUBLE_EQ(p.busy_threshold, 0.5);
  EXPECT_EQ(p.op_deadline, std::chrono::seconds(10));
  EXPECT_EQ(p.write_budget_per_day, 128u << 20);
  const ProbeSet& d = p.defaults;
  EXPECT_TRUE(d[ProbeKind::kRandRead].enabled);
  EXPECT_EQ(d[ProbeKind::kRandRead].ops, 16u);
  EXPECT_EQ(d[ProbeKind::kRandRead].block_size, 4096u);
  EXPECT_EQ(d[ProbeKind::kSeqRead].size, 8u << 20);
  EXPECT_EQ(d[ProbeKind::kSeqRead].request_size, 1u << 20);
  EXPECT_EQ(d[ProbeKind::kWrite].ops, 8u);
  EXPECT_EQ(d[ProbeKind::kFsync].ops, 4u);
  EXPECT_FALSE(d[ProbeKind::kSeqWrite].enabled);
}

TEST(ProbesConfig, DefaultDailyWritesStayFarUnderTheBudget) {
  // The arithmetic config/default.yml documents: per run, ops x block + one 4 KiB header.
  auto r = LoadDefault();
  const ProbesConfig& p = r.config->probes;
  double per_day = 0;
  for (ProbeKind k : {ProbeKind::kWrite, ProbeKind::kFsync, ProbeKind::kSeqWrite}) {
    const ProbeSettings& s = p.defaults[k];
    if (!s.enabled) continue;
    double runs = 86400000.0 / static_cast<double>(s.interval.count());
    double bytes = k == ProbeKind::kSeqWrite ? double(s.size) : double(s.ops) * double(s.block_size);
    per_day += runs * (bytes + 4096);
  }
  EXPECT_NEAR(per_day / (1 << 20), 15.75, 0.01);
  EXPECT_LT(per_day + double(p.probe_file_size), double(p.write_budget_per_day) / 4) << "room to spare";
}

TEST(ProbesConfig, OverridesPerDevice) {
  auto r = LoadString(
      "probes:\n"
      "  defaults:\n"
      "    randread: {interval: 2m}\n"
      "  devices:\n"
      "    'mmcblk[0-9]+': {randread: {interval: 30s}, seqread: {enabled: false}}\n",
      "o.yml");
  ASSERT_TRUE(r.config) << ::testing::PrintToString(Messages(r));
  const ProbesConfig& p = r.config->probes;
  EXPECT_EQ(p.For("mmcblk0")[ProbeKind::kRandRead].interval, std::chrono::seconds(30));
  EXPECT_FALSE(p.For("mmcblk0")[ProbeKind::kSeqRead].enabled);
  EXPECT_EQ(p.For("mmcblk0")[ProbeKind::kRandRead].ops, 16u) << "unnamed settings come from the defaults";
  EXPECT_EQ(p.For("sda")[ProbeKind::kRandRead].interval, std::chrono::minutes(2));
  EXPECT_TRUE(p.For("sda")[ProbeKind::kSeqRead].enabled);
}

TEST(ProbesConfig, BadValues) {
  auto r = LoadString(
      "probes:\n"
      "  state_directory: relative/dir\n"
      "  io_priority: realtime\n"
      "  busy_threshold: 50\n"
      "  write_budget_per_day: 128M\n"
      "  defaults:\n"
      "    randread: {ops: 0, block_size: 4KiB, size: 8MiB}\n"
      "  devices:\n"
      "    'mmc[': {}\n",
      "p.yml");
  EXPECT_FALSE(r.config);
  auto got = Messages(r);
  ASSERT_EQ(got.size(), 7u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0], "p.yml:2:20: probes.state_directory: must be an absolute path");
  EXPECT_EQ(got[1], "p.yml:3:16: probes.io_priority: must be idle, best-effort or none, got \"realtime\"");
  EXPECT_EQ(got[2], "p.yml:4:19: probes.busy_threshold: must be a number from 0 to 1 (a fraction: 0.5 = 50 %), got \"50\"");
  EXPECT_EQ(got[3], "p.yml:5:25: probes.write_budget_per_day: invalid size \"128M\": want bytes or an integer with B, KiB, "
                    "MiB, GiB, TiB, kB, MB, GB or TB, e.g. 4KiB, 16MiB");
  EXPECT_EQ(got[4], "p.yml:7:21: probes.defaults.randread.ops: must be an integer from 1 to 4096, got \"0\"");
  EXPECT_EQ(got[5], "p.yml:7:42: probes.defaults.randread.size: unknown key (known keys: enabled, interval, ops, block_size)");
  EXPECT_EQ(got[6].rfind("p.yml:9:5: probes.devices.mmc[: invalid regular expression \"mmc[\": ", 0), 0u) << got[6];
}

// Sizes the probes cannot run as written: each was accepted before and then failed every run
// (randread 5000: EINVAL), was silently changed (write 1000 -> 4096), did nothing while counting
// ok runs (seqread 1 MiB in 4 MiB requests), or exported one series twice (the same directory).
TEST(ProbesConfig, SizesTheProbesCannotRun) {
  auto r = LoadString(
      "probes:\n"
      "  write_directories: [/srv/a, /srv/b, /srv/a/]\n"
      "  defaults:\n"
      "    randread: {block_size: 5000}\n"
      "    write: {block_size: 1000}\n"
      "    fsync: {block_size: 6KiB}\n"
      "    seqread: {size: 1MiB, request_size: 4MiB}\n"
      "  devices:\n"
      "    'sd[a-z]+':\n"
      "      seqwrite: {request_size: 3MiB}\n"
      "      seqread: {request_size: 6000}\n",
      "p.yml");
  EXPECT_FALSE(r.config);
  auto got = Messages(r);
  ASSERT_EQ(got.size(), 7u) << ::testing::PrintToString(got);
  EXPECT_EQ(got[0], "p.yml:2:39: probes.write_directories[2]: \"/srv/a/\" is listed twice (also at write_directories[0])");
  EXPECT_EQ(got[1], "p.yml:4:28: probes.defaults.randread.block_size: must be a multiple of 512, got 5000");
  EXPECT_EQ(got[2], "p.yml:5:25: probes.defaults.write.block_size: must be a multiple of 4KiB, got 1000");
  EXPECT_EQ(got[3], "p.yml:6:25: probes.defaults.fsync.block_size: must be a multiple of 4KiB, got 6144");
  EXPECT_EQ(got[4], "p.yml:7:41: probes.defaults.seqread.request_size: must not exceed size (1048576), got 4194304");
  // A device override is checked with the values it inherits, reported where it is written.
  EXPECT_EQ(got[5], "p.yml:10:17: probes.devices.sd[a-z]+.seqwrite.size: must be a multiple of request_size (3145728), got 8388608");
  EXPECT_EQ(got[6], "p.yml:11:31: probes.devices.sd[a-z]+.seqread.request_size: must be a multiple of 4KiB, got 6000");

  // Valid: randread in whole sectors, writes in whole 4 KiB blocks, sizes filled by requests.
  auto ok = LoadString(
      "probes:\n"
      "  write_directories: [/srv/a, /srv/b]\n"
      "  defaults:\n"
      "    randread: {block_size: 1536}\n"
      "    write: {block_size: 8KiB}\n"
      "    seqread: {size: 4MiB, request_size: 4MiB}\n",
      "ok.yml");
  EXPECT_TRUE(ok.config) << ::testing::PrintToString(Messages(ok));
}

}  // namespace
}  // namespace diskprobe::config

namespace diskprobe::config {
namespace {

TEST(Config, DurationAboveMaximum) {
  // 20000w would overflow the discovery thread's timer (found by review: 100 % CPU).
  auto r = LoadString("devices:\n  discovery_interval: 20000w\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             "t.yml:2:23: devices.discovery_interval: duration \"20000w\" is above the maximum of 86400s"});
}

TEST(Config, OneDocumentOnly) {
  auto r = LoadString("---\ndevices: {discovery_interval: 5s}\n---\ndevices: {bogus: 1}\n", "m.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             "m.yml:4:1: more than one YAML document; a configuration is a single document"});
}

TEST(Config, HugeFileIsRefusedNotTruncated) {
  std::string path = ::testing::TempDir() + "/huge.yml";
  {
    std::ofstream out(path);
    for (int i = 0; i < 60000; ++i) out << "# padding line to make the file larger than one MiB\n";
    out << "bogus_key: 1\n";
  }
  auto r = LoadFile(path);
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             path + ":0:0: file is larger than 1 MiB; not a diskprobe_exporter configuration"});
}

}  // namespace
}  // namespace diskprobe::config
