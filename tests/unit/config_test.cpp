// config/: the embedded default, loading files on top of it, and every kind of bad input with the
// exact message an operator sees.
#include "config/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "in_child.h"
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
  // Loop devices and optical drives only when an include pattern names them.
  ASSERT_EQ(c.devices.exclude_unless_included.size(), 2u);
  EXPECT_FALSE(c.devices.Selects("loop3"));
  EXPECT_FALSE(c.devices.Selects("sr0"));
  EXPECT_TRUE(c.devices.skip_empty_removable);
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
  EXPECT_EQ(got[3],
            f + ":6:3: devices.discovery_intervall: unknown key (known keys: include, exclude, exclude_unless_included, skip_empty_removable, discovery_interval)");
  EXPECT_EQ(got[4], f + ":7:1: probez: unknown key (known keys: devices, probes, health)");
}

TEST(Config, WrongTypes) {
  auto r = LoadString("devices: [1, 2]\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:1:10: devices: must be a mapping, got a list"});
  r = LoadString("devices:\n  include: {a: 1}\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             "t.yml:2:12: devices.include: must be a list of regular expressions, got a mapping"});
  r = LoadString("devices:\n  include: [[x]]\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{
                             "t.yml:2:13: devices.include[0]: must be a regular expression string, got a list"});
  r = LoadString("devices:\n  discovery_interval: [30s]\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"t.yml:2:23: devices.discovery_interval: must be a duration, got a list"});
  r = LoadString("- a\n- b\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:1:1: must be a mapping, got a list"});
}

TEST(Config, DurationBelowMinimum) {
  auto r = LoadString("devices:\n  discovery_interval: 500ms\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{
                "t.yml:2:23: devices.discovery_interval: duration \"500ms\" is below the minimum of 1000ms"});
}

// A key with no value: yaml-cpp marks the null where the next line starts (5:1 here, past the
// end); the error names the key's own line and column.
TEST(Config, KeyWithoutAValueIsReportedAtTheKey) {
  auto r = LoadString("probes:\n  defaults:\n    randread:\n      interval:\n", "t.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"t.yml:4:7: probes.defaults.randread.interval: must be a duration, got null"});
  r = LoadString("health:\n  smart_interval:\nprobes: {}\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:2:3: health.smart_interval: must be a duration, got null"});
}

// A list key with no value would replace the default list without a word (`exclude:` alone
// dropped the ram/zram excludes and monitored zram0): an error at the key, as is an empty item,
// which yaml-cpp marks where the next token starts (lines below, past comments).
TEST(Config, AListKeyWithNoValueOrAnEmptyItemIsAnError) {
  auto r = LoadString("devices:\n  exclude:\nprobes: {}\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:2:3: devices.exclude: must be a list of regular expressions, "
                                                  "got no value (write [] for an empty list)"});
  r = LoadString("devices:\n  include:\n    - mmcblk0\n    -\n\n  # sd disks too\n  discovery_interval: 2s\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:2:3: devices.include[1]: must be a regular expression "
                                                  "string, got an empty item (a '-' with nothing after it)"});
  r = LoadString("probes:\n  write_directories:\n", "t.yml");
  EXPECT_EQ(Messages(r), std::vector<std::string>{"t.yml:2:3: probes.write_directories: must be a list of strings, "
                                                  "got no value (write [] for an empty list)"});
  r = LoadString("devices:\n  exclude: []\n", "t.yml");
  ASSERT_TRUE(r.config);
  EXPECT_TRUE(r.config->devices.exclude.empty());  // the explicit empty list still clears it
}

// std::regex calls a leading quantifier "Mismatched '(' and ')'": the message says what it is.
TEST(Config, AQuantifierWithNothingToRepeatIsNamed) {
  for (const auto& [pattern, message] : std::vector<std::pair<std::string, std::string>>{
           {"*", "has a quantifier ('*') at character 1 with nothing before it to repeat"},
           {"mmc|+", "has a quantifier ('+') at character 5 with nothing before it to repeat"},
           {"(+a)", "has a quantifier ('+') at character 2 with nothing before it to repeat"},
           {"^*", "has a quantifier ('*') at character 2 with nothing before it to repeat"},
           {"{2}", "has a quantifier ('{') at character 1 with nothing before it to repeat"}}) {
    Pattern p;
    EXPECT_EQ(CompilePattern(pattern, &p, nullptr), message) << pattern;
  }
  for (const std::string ok : {"(?:sd|mmcblk)[0-9a-z]+", "(?!loop)[a-z]+[0-9]", "a{2}", "x?", "(a)*", "[*]+", "\\*"}) {
    Pattern p;
    EXPECT_EQ(CompilePattern(ok, &p, nullptr), "") << ok;
  }
}

// A tab in the indentation: yaml-cpp says "illegal map value" at the end of the line; the error
// names the tab, where it is.
TEST(Config, ATabInTheIndentationIsNamedAtTheTab) {
  auto r = LoadString("devices:\n\tinclude: []\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString().rfind("t.yml:2:1: YAML syntax error: a tab in the indentation (YAML indents with "
                                         "spaces only; yaml-cpp: ",
                                         0),
            0u)
      << r.errors[0].ToString();
  r = LoadString("devices:\n  include: []\n  \texclude: []\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].column, 3);
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

// Seen while fuzzing the configuration (tests/fuzz/config_fuzz.cpp checks that no duration is
// negative, with this input as its reproducer): a sum of milliseconds between 2^63 and 2^64 passed the
// overflow check (in signed-minus-unsigned arithmetic it wrapped) and came back negative.
TEST(ParseDuration, RejectsTotalsAboveInt64) {
  EXPECT_FALSE(ParseDuration("10000000000000000000ms").has_value());  // > 2^63 - 1, < 2^64
  EXPECT_FALSE(ParseDuration("18446744073709551615ms").has_value());  // 2^64 - 1
  EXPECT_FALSE(ParseDuration("9223372036854775s9223372036854775ms").has_value());
  EXPECT_EQ(ParseDuration("9223372036854775807ms"), std::chrono::milliseconds::max());
}

// Found by tests/fuzz (web_config target, coverage-only build, 268 k executions; the
// configuration file goes through the same LoadDocument): yaml-cpp placed the token after the
// first document past the end of the text (NUL bytes in it), and comparing the text there with
// "---" threw std::out_of_range, uncaught: --config.check, start-up and SIGHUP would abort.
TEST(LoadString, AMarkPastTheEndOfTheTextIsAnErrorNotAnAbort) {
  static const unsigned char kCrash[] = {0x27, 0x00, 0x00, 0x7d, 0x92, 0x0a, 0x2c, 0x0e, 0x68, 0x65, 0x61,
                                         0x40, 0x64, 0x65, 0x72, 0x73, 0x6b, 0x65, 0x79, 0x5f, 0x66, 0x49,
                                         0x27, 0x00, 0x00, 0x7d, 0x64};
  const std::string_view text(reinterpret_cast<const char*>(kCrash), sizeof kCrash);
  const LoadResult r = LoadString(text, "crash.yml");
  EXPECT_EQ(r.config, nullptr);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors[0].file, "crash.yml");
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
  for (const char* s :
       {"", "KiB", "4 KiB", "4kib", "4KB", "4K", "1.5MiB", "-1", "4iB", "16777216TiB", "18446744073709551616"}) {
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
  EXPECT_EQ(got[2],
            "p.yml:4:19: probes.busy_threshold: must be a number from 0 to 1 (a fraction: 0.5 = 50 %), got \"50\"");
  EXPECT_EQ(got[3],
            "p.yml:5:25: probes.write_budget_per_day: invalid size \"128M\": want bytes or an integer with B, KiB, "
            "MiB, GiB, TiB, kB, MB, GB or TB, e.g. 4KiB, 16MiB");
  EXPECT_EQ(got[4], "p.yml:7:21: probes.defaults.randread.ops: must be an integer from 1 to 4096, got \"0\"");
  EXPECT_EQ(got[5],
            "p.yml:7:42: probes.defaults.randread.size: unknown key (known keys: enabled, interval, ops, block_size)");
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
  EXPECT_EQ(got[0],
            "p.yml:2:39: probes.write_directories[2]: \"/srv/a/\" is listed twice (also at write_directories[0])");
  EXPECT_EQ(got[1], "p.yml:4:28: probes.defaults.randread.block_size: must be a multiple of 512, got 5000");
  EXPECT_EQ(got[2], "p.yml:5:25: probes.defaults.write.block_size: must be a multiple of 4KiB, got 1000");
  EXPECT_EQ(got[3], "p.yml:6:25: probes.defaults.fsync.block_size: must be a multiple of 4KiB, got 6144");
  EXPECT_EQ(got[4], "p.yml:7:41: probes.defaults.seqread.request_size: must not exceed size (1048576), got 4194304");
  // A device override is checked with the values it inherits, reported where it is written.
  EXPECT_EQ(
      got[5],
      "p.yml:10:17: probes.devices.sd[a-z]+.seqwrite.size: must be a multiple of request_size (3145728), got 8388608");
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
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{
                "t.yml:2:23: devices.discovery_interval: duration \"20000w\" is above the maximum of 86400s"});
}

TEST(Config, OneDocumentOnly) {
  // At the "---" that starts the second document.
  auto r = LoadString("---\ndevices: {discovery_interval: 5s}\n---\ndevices: {bogus: 1}\n", "m.yml");
  EXPECT_EQ(Messages(r),
            std::vector<std::string>{"m.yml:3:1: more than one YAML document; a configuration is a single document"});
}

TEST(Config, HugeFileIsRefusedNotTruncated) {
  std::string path = ::testing::TempDir() + "/huge.yml";
  {
    std::ofstream out(path);
    for (int i = 0; i < 60000; ++i) out << "# padding line to make the file larger than one MiB\n";
    out << "bogus_key: 1\n";
  }
  auto r = LoadFile(path);
  EXPECT_EQ(Messages(r), std::vector<std::string>{path + ":0:0: file is larger than 65536 bytes"});
  ::unlink(path.c_str());
}

// --- Hostile input: every case runs in a child with 256 MiB of address space and 60 s, so the old
// behaviour (an endless loop allocating, a stack overflow, a blocked open) fails the test with how
// the child died instead of taking the test binary down.

// The outcome of `load`, one line per error ("loaded" first when a configuration came out),
// computed in a bounded child.
std::string Bounded(const std::function<LoadResult()>& load) {
  return diskprobe::testing::InBoundedChild([&] {
    LoadResult r = load();
    std::string out = r.config ? "loaded\n" : "";
    for (const auto& e : r.errors) out += e.ToString() + "\n";
    return out;
  });
}
std::string BoundedString(const std::string& yaml) {
  return Bounded([&] { return LoadString(yaml, "t.yml"); });
}

TEST(HostileConfig, StrayCommaIsAnErrorNotAnEndlessLoop) {
  // yaml-cpp's LoadAll (0.7 and 0.8) loops forever on these, allocating an empty document each
  // turn: 2.8 GB in 10 s, an OOM kill under the unit's MemoryMax.
  EXPECT_EQ(BoundedString(",\n"), "t.yml:1:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(BoundedString("---\n,\n"), "t.yml:2:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(BoundedString("# c\n,\n"), "t.yml:2:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(BoundedString("devices: {}\n,\n"), "t.yml:2:1: YAML syntax error: end of map not found\n");
  EXPECT_EQ(BoundedString("[a], b\n"), "t.yml:1:4: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(BoundedString("devices: {}\n...\nprobes: {}\n"),
            "t.yml:3:1: YAML syntax error: unexpected 'p' after the end of the document; a configuration is a "
            "single document\n");
  // Still a configuration: a document that only ends with "..." or is only comments.
  EXPECT_EQ(BoundedString("devices: {}\n...\n"), "loaded\n");
  EXPECT_EQ(BoundedString("# nothing\n"), "loaded\n");
}

TEST(HostileConfig, DeepNestingIsRefusedWhereItGoesTooDeep) {
  EXPECT_EQ(BoundedString(std::string(60000, '[')), "t.yml:1:33: lists and mappings nested more than 32 deep\n");
  EXPECT_EQ(BoundedString(std::string(100000, '[')),
            "t.yml:0:0: document is larger than 65536 bytes; a configuration is a few KiB\n");
  std::string block;  // "- - - ... x": block sequences, counted by the parser pass
  for (int i = 0; i < 1000; ++i) block += "- ";
  EXPECT_EQ(BoundedString(block + "x\n"), "t.yml:1:65: lists and mappings nested more than 32 deep\n");
  std::string maps;  // k0:\n k1:\n  k2: ... one more column each
  for (int i = 0; i < 40; ++i) maps += std::string(static_cast<std::size_t>(i), ' ') + "k" + std::to_string(i) + ":\n";
  EXPECT_EQ(BoundedString(maps), "t.yml:33:33: lists and mappings nested more than 32 deep\n");
}

TEST(HostileConfig, NestingBoundIsExact) {
  auto nested = [](int n) {
    return std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']');
  };
  YAML::Node root;
  std::vector<Error> errors;
  EXPECT_TRUE(LoadDocument(nested(kMaxDocumentDepth), "t.yml", &root, &errors));
  EXPECT_TRUE(errors.empty());
  EXPECT_TRUE(root.IsSequence());
  EXPECT_FALSE(LoadDocument(nested(kMaxDocumentDepth + 1), "t.yml", &root, &errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(), "t.yml:1:33: lists and mappings nested more than 32 deep");
  // Brackets in comments and quoted scalars are not nesting.
  errors.clear();
  EXPECT_TRUE(LoadDocument(
      "# " + std::string(40, '[') + "\na: '" + std::string(40, '[') + "'\nb: \"" + std::string(40, '{') + "\\\"\"\n",
      "t.yml", &root, &errors));
  EXPECT_TRUE(errors.empty()) << errors[0].ToString();
  EXPECT_EQ(root["a"].Scalar(), std::string(40, '['));
}

// Billion laughs: level i is a list of ten aliases of level i-1, so level 11 stands for 10^12
// scalars. yaml-cpp shares an aliased node rather than copying it, and nothing walks the tree
// beyond the keys it knows, so the bound on aliases is a second line of defence.
std::string AliasBomb(int levels) {
  std::string s = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    s += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) s += (j ? ", *l" : "*l") + std::to_string(i - 1);
    s += "]\n";
  }
  return s + "devices: {include: *l" + std::to_string(levels - 1) + "}\n";
}

TEST(HostileConfig, AliasBombs) {
  // 9 levels, 81 aliases: within the bound, walked without expanding (the include list's items
  // are lists: refused at the first).
  const std::string nine = BoundedString(AliasBomb(9));
  EXPECT_NE(nine.find("t.yml:1:1: l0: unknown key"), std::string::npos) << nine;
  EXPECT_NE(nine.find("devices.include[0]: must be a regular expression string, got a list"), std::string::npos)
      << nine;
  // 12 levels, 110 aliases: the 101st (line 12, the first alias) is refused.
  EXPECT_EQ(BoundedString(AliasBomb(12)),
            "t.yml:12:12: more than 100 aliases (*name); a configuration needs few, and each one repeats its anchor's "
            "tree for whoever walks it\n");
}

TEST(HostileConfig, TooManyNodes) {
  std::string list;
  for (int i = 0; i < 16000; ++i) list += "- a\n";  // 64,000 bytes: within the size bound
  EXPECT_EQ(BoundedString(list),
            "t.yml:10000:3: more than 10000 YAML nodes; a diskprobe_exporter configuration has a few hundred\n");
  EXPECT_EQ(BoundedString(list + list),
            "t.yml:0:0: document is larger than 65536 bytes; a configuration is a few KiB\n");
}

TEST(HostileConfig, OnlyRegularFiles) {
  const std::string dir = ::testing::TempDir() + "/hostile-config." + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  // A FIFO with no writer: open(2) without O_NONBLOCK waits for one forever (the old loader
  // blocked the main thread there, and SIGTERM with it).
  const std::string fifo = dir + "/fifo.yml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(Bounded([&] { return LoadFile(fifo); }), fifo + ":0:0: not a regular file (fifo)\n");
  const std::string link = dir + "/link.yml";  // followed, then refused for what it points at
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  EXPECT_EQ(Bounded([&] { return LoadFile(link); }), link + ":0:0: not a regular file (fifo)\n");
  EXPECT_EQ(Bounded([&] { return LoadFile(dir); }), dir + ":0:0: not a regular file (directory)\n");
  EXPECT_EQ(Bounded([] { return LoadFile("/dev/zero"); }), "/dev/zero:0:0: not a regular file (character device)\n");
  EXPECT_EQ(Bounded([] { return LoadFile("/dev/null"); }), "/dev/null:0:0: not a regular file (character device)\n");
  // Kernel pseudo-files say S_IFREG; reading /proc/kmsg consumes the syslog records it hands out,
  // so `--config.check --config.file=/proc/kmsg` used to eat the kernel log. Refused unread (a
  // harmless procfs and sysfs file stand in for it: a failing test must not consume the log).
  EXPECT_EQ(Bounded([] { return LoadFile("/proc/self/status"); }),
            "/proc/self/status:0:0: not a regular file (a procfs file; not read)\n");
  EXPECT_EQ(Bounded([] { return LoadFile("/sys/kernel/uevent_seqnum"); }),
            "/sys/kernel/uevent_seqnum:0:0: not a regular file (a sysfs file; not read)\n");
  const std::string good = dir + "/good.yml";
  std::ofstream(good) << "devices: {discovery_interval: 5s}\n";
  EXPECT_EQ(Bounded([&] { return LoadFile(good); }), "loaded\n");
  for (const std::string& f : {good, link, fifo}) ::unlink(f.c_str());
  ::rmdir(dir.c_str());
}

TEST(HostileConfig, RegexesWithinBoundsOrRefusedAtTheirKey) {
  const std::string groups = std::string(20000, '(') + "a" + std::string(20000, ')');  // 40 KB: SIGSEGV before
  const std::string excerpt = "\"" + std::string(64, '(') + "...\" (40001 characters)";
  EXPECT_EQ(BoundedString("devices:\n  include: ['" + groups + "']\n"),
            "t.yml:2:13: devices.include[0]: invalid regular expression " + excerpt +
                ": is 40001 characters long; a pattern for device names (at most 31 characters) may have 1024\n");
  EXPECT_EQ(BoundedString("devices:\n  exclude: ['" + std::string(40000, 'a') + "']\n"),
            "t.yml:2:13: devices.exclude[0]: invalid regular expression \"" + std::string(64, 'a') +
                "...\" (40000 characters): is 40000 characters long; a pattern for device names (at most 31 "
                "characters) may have 1024\n");
  // A per-device key is a pattern too; an explicit key, as an implicit one may not pass 1024.
  EXPECT_EQ(BoundedString("probes:\n  devices:\n    ? '" + groups + "'\n    : {}\n"),
            "t.yml:3:7: probes.devices." + std::string(64, '(') + "...: invalid regular expression " + excerpt +
                ": is 40001 characters long; a pattern for device names (at most 31 characters) may have 1024\n");
  const std::string deep17 = std::string(17, '(') + "a" + std::string(17, ')');
  EXPECT_EQ(BoundedString("devices:\n  include: ['" + deep17 + "']\n"),
            "t.yml:2:13: devices.include[0]: invalid regular expression \"" + deep17 +
                "\": has groups nested more than 16 deep\n");
  const std::string deep16 = std::string(16, '(') + "sda" + std::string(16, ')');
  EXPECT_EQ(BoundedString("devices:\n  include: ['" + deep16 + "']\n"), "loaded\n");
}

TEST(HostileConfig, RepetitionsCountAsWrittenOut) {
  // 15 characters, 27,000 states (2 MB) once libstdc++ writes the copies out.
  EXPECT_EQ(BoundedString("devices:\n  include: ['((a{30}){30}){30}']\n"),
            "t.yml:2:13: devices.include[0]: invalid regular expression \"((a{30}){30}){30}\": repeats to more than "
            "1024 characters once its {n,m} repetitions are written out (std::regex builds each copy)\n");
  // Each within the bound, together over the file's budget (16 KiB): the 17th and later are refused.
  std::string list = "devices:\n  include:\n";
  for (int i = 0; i < 20; ++i) list += "    - 'a{1000}'\n";
  std::string want;
  for (int i = 16; i < 20; ++i)
    want += "t.yml:" + std::to_string(i + 3) + ":7: devices.include[" + std::to_string(i) +
            "]: invalid regular expression \"a{1000}\": the patterns of this file together repeat to more than "
            "16384 characters once their {n,m} repetitions are written out\n";
  EXPECT_EQ(BoundedString(list), want);
  EXPECT_EQ(BoundedString("devices:\n  include: ['sd[a-z]{1,2}', 'mmcblk[0-9]{1,2}(boot[01])?']\n"), "loaded\n");
}

TEST(HostileConfig, BackReferencesAreRefused) {
  EXPECT_EQ(BoundedString("devices:\n  include: ['(sd)\\1']\n"),
            "t.yml:2:13: devices.include[0]: invalid regular expression \"(sd)\\1\": back-references (\\1 ...) are "
            "not supported: matching stays linear in the name without them\n");
}

TEST(Pattern, MatchingTakesLinearTimeNotExponential) {
  // Backtracking takes 2^n steps on these for a name of n "a" (with libstdc++'s default executor,
  // sixteen took longer than 20 s here); a kernel disk name has up to 31 characters.
  const std::string name(31, 'a');
  EXPECT_EQ(diskprobe::testing::InBoundedChild([&] {
              std::string out;
              for (const char* src : {"(a*)*b", "(a|a)*b", "(a|aa)*b", "a*a*a*a*a*a*a*a*b"}) {
                Pattern p;
                std::string why = CompilePattern(src, &p);
                out += std::string(src) + (why.empty() ? (p.FullMatch(name) ? " matches" : " no match") : ": " + why) +
                       "\n";
              }
              return out;
            }),
            "(a*)*b no match\n(a|a)*b no match\n(a|aa)*b no match\na*a*a*a*a*a*a*a*b no match\n");
  // The same executor still gives the ordinary answers.
  Pattern p;
  ASSERT_EQ(CompilePattern("mmcblk[0-9]+|sd[a-z]+|(nvme[0-9]+n[0-9]+)", &p), "");
  EXPECT_TRUE(p.FullMatch("mmcblk0"));
  EXPECT_TRUE(p.FullMatch("nvme0n1"));
  EXPECT_FALSE(p.FullMatch("mmcblk0p1"));
  EXPECT_FALSE(p.FullMatch("sd"));
}

TEST(ConfigHealth, NvmeIntervalDefaultOverrideAndBounds) {
  EXPECT_EQ(LoadDefault().config->health.nvme_interval, std::chrono::minutes(10));
  auto r = LoadString("health:\n  nvme_interval: 1h\n", "t.yml");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->health.nvme_interval, std::chrono::hours(1));
  r = LoadString("health:\n  nvme_interval: 100ms\n", "t.yml");
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString().rfind("t.yml:2:18: health.nvme_interval:", 0), 0u) << r.errors[0].ToString();
  r = LoadString("health:\n  smart: 1h\n", "t.yml");
  ASSERT_FALSE(r.config);
  EXPECT_EQ(r.errors[0].ToString(), "t.yml:2:3: health.smart: unknown key (known keys: nvme_interval, sd_vendor, smart_interval, "
            "smartctl_timeout, smartctl_path, smart_device_types)");
}

TEST(ConfigHealth, SdVendorOffByDefaultAndValidated) {
  const auto& d = LoadDefault().config->health.sd_vendor;
  EXPECT_TRUE(d.devices.empty());  // no card gets a vendor command unless listed
  EXPECT_EQ(d.layout, "auto");
  EXPECT_EQ(d.interval, std::chrono::hours(6));
  EXPECT_EQ(d.timeout, std::chrono::seconds(5));
  auto r = LoadString("health:\n  sd_vendor: {devices: [mmcblk0, mmcblk1], layout: swissbit, interval: 1h, timeout: 2s}\n",
                      "t.yml");
  ASSERT_TRUE(r.config) << r.errors[0].ToString();
  EXPECT_EQ(r.config->health.sd_vendor.devices, (std::vector<std::string>{"mmcblk0", "mmcblk1"}));
  EXPECT_EQ(r.config->health.sd_vendor.layout, "swissbit");
  EXPECT_EQ(r.config->health.sd_vendor.interval, std::chrono::hours(1));
  // Every problem at once, each at its place.
  r = LoadString("health:\n  sd_vendor:\n    devices: [mmcblk0, ../sda]\n    layout: kingston\n    timeout: 10m\n"
                 "    intervall: 1h\n",
                 "t.yml");
  ASSERT_FALSE(r.config);
  ASSERT_EQ(r.errors.size(), 4u);
  std::string all;
  for (const auto& e : r.errors) all += e.ToString() + "\n";
  EXPECT_NE(all.find("t.yml:6:5: health.sd_vendor.intervall: unknown key"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:3:24: health.sd_vendor.devices: \"../sda\" is not a kernel disk name"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:4:13: health.sd_vendor.layout: unknown layout \"kingston\" (known: auto, sandisk, longsys"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.yml:5:14: health.sd_vendor.timeout:"), std::string::npos) << all;
}

// A partition or a card listed twice would be asked CMD56 in vain (the kernel refuses
// partitions) or twice per pass: refused when the file is checked.
TEST(ConfigHealth, SdVendorPartitionsAndDuplicatesAreRefused) {
  auto r = LoadString("health:\n  sd_vendor: {devices: [mmcblk0p1, mmcblk1, mmcblk1, mmcblk10]}\n", "t.yml");
  ASSERT_EQ(r.config, nullptr);
  std::string all;
  for (const auto& e : r.errors) all += e.ToString() + "\n";
  EXPECT_NE(all.find("t.yml:2:25: health.sd_vendor.devices: \"mmcblk0p1\" is a partition: CMD56 goes to the whole card "
                     "(mmcblk0)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("t.yml:2:45: health.sd_vendor.devices: \"mmcblk1\" is listed twice"), std::string::npos) << all;
  EXPECT_EQ(r.errors.size(), 2u) << all;  // mmcblk10 is a card, not a partition
}

TEST(ConfigHealth, SmartDefaultsOverrideAndAbsolutePath) {
  const auto& d = LoadDefault().config->health;
  EXPECT_EQ(d.smart_interval, std::chrono::minutes(30));
  EXPECT_EQ(d.smartctl_timeout, std::chrono::seconds(60));
  EXPECT_EQ(d.smartctl_path, "/usr/sbin/smartctl");
  auto r = LoadString("health:\n  smart_interval: 2h\n  smartctl_timeout: 5s\n  smartctl_path: /opt/sbin/smartctl\n", "t.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].ToString());
  EXPECT_EQ(r.config->health.smart_interval, std::chrono::hours(2));
  EXPECT_EQ(r.config->health.smartctl_timeout, std::chrono::seconds(5));
  EXPECT_EQ(r.config->health.smartctl_path, "/opt/sbin/smartctl");
  r = LoadString("health:\n  smartctl_path: smartctl\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(), "t.yml:2:18: health.smartctl_path: must be an absolute path, got \"smartctl\"");
  r = LoadString("health:\n  smartctl_timeout: 20m\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
}

TEST(ConfigHealth, SmartDeviceTypesInFileOrderWithSafeTypes) {
  EXPECT_TRUE(LoadDefault().config->health.smart_device_types.empty());
  auto r = LoadString("health:\n  smart_device_types:\n    sda: sat,12\n    'sd[b-z]': sntrealtek\n"
                      "    'sd.*': usbjmicron,x,0\n",
                      "t.yml");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].ToString());
  const auto& t = r.config->health.smart_device_types;
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].first.source, "sda");
  EXPECT_EQ(t[0].second, "sat,12");
  EXPECT_EQ(t[1].second, "sntrealtek");
  EXPECT_TRUE(t[1].first.FullMatch("sdc"));
  EXPECT_FALSE(t[1].first.FullMatch("sdaa"));  // anchored
  EXPECT_EQ(t[2].second, "usbjmicron,x,0");

  // Every problem at once, each at its place: an option, a path, a shell word, upper case, an
  // empty type, a list, a duplicate, a bad pattern.
  r = LoadString("health:\n  smart_device_types:\n    sda: -T permissive\n    sdb: /dev/sda\n    sdc: 'sat;reboot'\n"
                 "    sdd: SAT\n    sde: ''\n    sdf: [sat]\n    sda: sat\n    'sd(': sat\n",
                 "t.yml");
  EXPECT_FALSE(r.config);
  std::string all;
  for (const auto& e : r.errors) all += e.ToString() + "\n";
  EXPECT_EQ(r.errors.size(), 8u) << all;
  EXPECT_NE(all.find("t.yml:3:10: health.smart_device_types.sda: \"-T permissive\" is not a smartctl device type"),
            std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:4:10: health.smart_device_types.sdb: \"/dev/sda\" is not a smartctl device type"),
            std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:5:10: health.smart_device_types.sdc: \"sat;reboot\" is not"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:6:10: health.smart_device_types.sdd: \"SAT\" is not"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:7:10: health.smart_device_types.sde: \"\" is not"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:8:10: health.smart_device_types.sdf: must be a smartctl device type"), std::string::npos)
      << all;
  EXPECT_NE(all.find("t.yml:9:5: health.smart_device_types.sda: duplicate key"), std::string::npos) << all;
  EXPECT_NE(all.find("t.yml:10:5: health.smart_device_types.sd(:"), std::string::npos) << all;

  r = LoadString("health:\n  smart_device_types: [sat]\n", "t.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(),
            "t.yml:2:23: health.smart_device_types: must be a mapping from a device-name pattern to a smartctl -d type");
}

}  // namespace
}  // namespace diskprobe::config
