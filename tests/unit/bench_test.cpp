// The bench's pure parts: the A1/A2 verdict, percentiles, the claimed class from a fixture root, and
// the JSON document against the documented schema's shape (docs/bench-schema.json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "bench/bench.h"
#include "bench/report.h"
#include "bench/verdict.h"
#include "test_util.h"

namespace {

using namespace diskprobe::bench;
using diskprobe::testing::Fixture;
using diskprobe::testing::ReadText;

TEST(BenchVerdict, PassesA1NotA2) {
  Verdict v = Judge({2000, 600, 12e6, 1u});
  ASSERT_EQ(v.classes.size(), 2u);
  EXPECT_EQ(v.classes[0].name, "A1");
  EXPECT_EQ(v.classes[0].pass, true);
  EXPECT_EQ(v.classes[1].pass, false);
  EXPECT_EQ(v.measured_class, "A1");
  EXPECT_EQ(v.claimed_class, "A1");
  EXPECT_TRUE(v.warnings.empty());
}

TEST(BenchVerdict, ThresholdsAreInclusive) {
  EXPECT_EQ(Judge({1500, 500, 10e6, std::nullopt}).measured_class, "A1");
  EXPECT_EQ(Judge({4000, 2000, 10e6, std::nullopt}).measured_class, "A2");
  EXPECT_EQ(Judge({1499.9, 500, 10e6, std::nullopt}).measured_class, "none");
  EXPECT_EQ(Judge({1500, 500, 9.99e6, std::nullopt}).measured_class, "none");
}

TEST(BenchVerdict, ClaimedA2UnderDeliveredWarns) {
  // A card claiming A2 that does 2500 read / 300 write IOPS (a slow-writing fake).
  Verdict v = Judge({2500, 300, 20e6, 2u});
  EXPECT_EQ(v.measured_class, "none");
  EXPECT_EQ(v.claimed_class, "A2");
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_EQ(v.warnings[0],
            "the card claims A2 in its SSR but under-delivers: random read 2500 IOPS (needs 4000), random write 300 "
            "IOPS (needs 2000)");
}

TEST(BenchVerdict, MissingFigureIsUnknownUnlessAnotherFails) {
  Verdict v = Judge({std::nullopt, 5000, 30e6, std::nullopt});
  EXPECT_EQ(v.classes[0].pass, std::nullopt);
  EXPECT_EQ(v.measured_class, "unknown");
  EXPECT_EQ(v.claimed_class, "unknown");
  Verdict f = Judge({std::nullopt, 100, 30e6, 1u});
  EXPECT_EQ(f.classes[0].pass, false);
  EXPECT_EQ(f.measured_class, "none");
  ASSERT_EQ(f.warnings.size(), 1u);
  // A2 fails on write even with read unknown, A1 unknown: "unknown", not "A1".
  Verdict u = Judge({std::nullopt, 800, 30e6, std::nullopt});
  EXPECT_EQ(u.classes[1].pass, false);
  EXPECT_EQ(u.measured_class, "unknown");
}

TEST(BenchVerdict, ClaimWithMissingFiguresIsUnchecked) {
  Verdict v = Judge({std::nullopt, 5000, 30e6, 1u});
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("unchecked"), std::string::npos);
  EXPECT_EQ(Judge({5000, 5000, 30e6, 0u}).claimed_class, "none");
  EXPECT_EQ(AppClassName(3), "reserved");
}

TEST(BenchPercentile, NearestRank) {
  std::vector<double> v = {5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(v, 0.5), 5);
  EXPECT_EQ(Percentile(v, 0.99), 10);
  EXPECT_EQ(Percentile(v, 0.0), 1);
  std::vector<double> empty;
  EXPECT_EQ(Percentile(empty, 0.5), std::nullopt);
}

TEST(BenchClaim, FromThePi4FixtureSsr) {
  std::string source;
  // Kingston SD64G in the Pi 4 fixture root: A2 in its SSR.
  EXPECT_EQ(ClaimedAppClass(Fixture("roots/pi4/sys"), "mmcblk0", &source), 2u);
  EXPECT_EQ(source, Fixture("roots/pi4/sys") + "/block/mmcblk0/device/ssr");
  EXPECT_EQ(ClaimedAppClass(Fixture("roots/pi4/sys"), "sda", &source), std::nullopt);
  EXPECT_NE(source.find("no ssr in sysfs for sda"), std::string::npos);
}

Report SampleReport() {
  Report r;
  r.version = "test";
  r.options.device = "/dev/mmcblk0";
  r.options.directory = "/home/pi";
  r.device_name = "mmcblk0";
  r.directory_disk = "mmcblk0";
  r.probe_file = "/home/pi/diskprobe_bench.probe";
  r.queue_engine = "io_uring";
  TestResult ok;
  ok.name = "randread_qd1";
  ok.status = "ok";
  ok.method = "m";
  ok.block_size = 4096;
  ok.ops = 100;
  ok.bytes = 409600;
  ok.seconds = 0.05;
  ok.bytes_per_second = 8192000;
  ok.iops = 2000;
  ok.lat_mean = ok.lat_p50 = ok.lat_p99 = ok.lat_max = 0.0005;
  ok.started_unix = 1764000000.25;
  ok.wall_seconds = 0.0625;
  TestResult un;
  un.name = "seqread";
  un.status = "unavailable";
  un.reason = "cannot open /dev/mmcblk0 for reading: Operation not permitted";
  un.method = "m";
  un.block_size = 1 << 20;
  r.tests = {un, ok};
  r.claimed_class = 1;
  r.claimed_source = "/sys/block/mmcblk0/device/ssr";
  r.verdict = Judge(VerdictInputOf(r));
  return r;
}

std::set<std::string> Keys(const nlohmann::json& o) {
  std::set<std::string> k;
  for (auto it = o.begin(); it != o.end(); ++it) k.insert(it.key());
  return k;
}
std::set<std::string> Required(const nlohmann::json& schema) { return schema["required"].get<std::set<std::string>>(); }

TEST(BenchJson, ShapeFollowsTheSchema) {
  nlohmann::json schema =
      nlohmann::json::parse(ReadText(std::string(DISKPROBE_SOURCE_DIR) + "/docs/bench-schema.json"));
  nlohmann::json j = ToJson(SampleReport());
  // Every object has exactly the schema's properties (additionalProperties is false everywhere).
  EXPECT_EQ(Keys(j), Required(schema));
  for (const char* o : {"limits", "device", "directory", "verdict"})
    EXPECT_EQ(Keys(j[o]), Required(schema["properties"][o])) << o;
  const auto& test_schema = schema["definitions"]["test"];
  for (const auto& t : j["tests"]) {
    EXPECT_EQ(Keys(t), Required(test_schema));
    EXPECT_EQ(Keys(t["latency_seconds"]), Required(test_schema["properties"]["latency_seconds"]));
  }
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["tests"][0]["status"], "unavailable");
  EXPECT_TRUE(j["tests"][0]["latency_seconds"]["p50"].is_null());
  EXPECT_EQ(j["tests"][1]["reason"], nullptr);
  EXPECT_DOUBLE_EQ(j["tests"][1]["mb_per_second"].get<double>(), 8.192);
  EXPECT_TRUE(j["tests"][0]["started_unix_seconds"].is_null());
  EXPECT_TRUE(j["tests"][0]["wall_seconds"].is_null());
  EXPECT_DOUBLE_EQ(j["tests"][1]["started_unix_seconds"].get<double>(), 1764000000.25);
  EXPECT_DOUBLE_EQ(j["tests"][1]["wall_seconds"].get<double>(), 0.0625);
  // Read 2000 IOPS, write and sequential write unmeasured: A1 undecided, A2 fails on read.
  EXPECT_EQ(j["verdict"]["classes"][0]["pass"], nullptr);
  EXPECT_EQ(j["verdict"]["classes"][1]["pass"], false);
  EXPECT_EQ(j["verdict"]["claimed_class"], "A1");
  EXPECT_EQ(j["verdict"]["classes"][0]["checks"][0]["measured"], 2000.0);
}

TEST(BenchTable, PrintsRowsAndVerdict) {
  std::string t = FormatTable(SampleReport());
  EXPECT_NE(t.find("randread_qd1         1       8.19      2000      0.500     0.500     0.500  ok"), std::string::npos)
      << t;
  EXPECT_NE(t.find("seqread              1          -         -"), std::string::npos) << t;
  EXPECT_NE(t.find("measured: unknown, claimed by the card (SSR): A1"), std::string::npos) << t;
}

// The note on QD1 figures standing in for the deep-queue ones was printed even when the QD1 tests
// had been skipped too (--duration 1s: nothing but one QD32 row had run).
TEST(BenchNotes, Qd1FallbackOnlyWhenAQd1FigureStandsIn) {
  Report r;
  r.options.queue_depth = 32;
  for (const char* n : {"randread_qd1", "randwrite_qd1", "randread_qd32", "randwrite_qd32"}) {
    TestResult t;
    t.name = n;
    r.tests.push_back(t);
  }
  EXPECT_EQ(Qd1FallbackNote(r), "");  // everything skipped
  r.tests[3].status = "ok";           // randwrite_qd32 only
  EXPECT_EQ(Qd1FallbackNote(r), "");
  r.tests[0].status = "ok";  // randread_qd1 stands in for randread_qd32
  EXPECT_NE(Qd1FallbackNote(r).find("the verdict's IOPS come from the QD1 tests"), std::string::npos);
  r.tests[0].status = "skipped";
  r.tests[1].status = "ok";
  r.tests[3].status = "unavailable";  // randwrite_qd1 stands in for randwrite_qd32
  EXPECT_NE(Qd1FallbackNote(r), "");
  r.tests[3].status = "ok";
  EXPECT_EQ(Qd1FallbackNote(r), "");
}

// --duration 500ms printed "(bound 0 s)".
TEST(BenchTable, PrintsSubSecondBounds) {
  Report r = SampleReport();
  for (auto [seconds, text] : {std::pair{0.5, "(bound 0.5 s)"},
                               {0.25, "(bound 0.25 s)"},
                               {60.0, "(bound 60 s)"},
                               {90.5, "(bound 90.5 s)"},
                               {3600.0, "(bound 3600 s)"}}) {
    r.options.duration_seconds = seconds;
    std::string t = FormatTable(r);
    EXPECT_NE(t.find(text), std::string::npos) << t;
  }
}

}  // namespace
