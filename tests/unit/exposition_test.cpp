#include "scrape/exposition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace diskprobe {
namespace {

using prometheus::MetricType;

std::string V(double v) {
  std::string s;
  AppendValue(v, &s);
  return s;
}

TEST(AppendValue, Numbers) {
  EXPECT_EQ(V(0), "0");
  EXPECT_EQ(V(2422917286912.0), "2422917286912");
  EXPECT_EQ(V(-3), "-3");
  EXPECT_EQ(V(0.084), "0.084");
  EXPECT_EQ(V(60730 / 1000.0), "60.73");
  EXPECT_EQ(V(1e-5), "1e-05");
  EXPECT_EQ(V(9007199254740992.0), "9007199254740992");         // 2^53: shortest double form
  EXPECT_EQ(V(1.8446744073709552e19), "18446744073709551616");  // 2^64, exact
  EXPECT_EQ(V(INFINITY), "+Inf");
  EXPECT_EQ(V(-INFINITY), "-Inf");
  EXPECT_EQ(V(NAN), "NaN");
}

TEST(FamilySink, EscapesAndSkipsEmptyFamilies) {
  std::string out;
  FamilySink s(&out);
  s.Family("diskprobe_empty", "never shown", MetricType::Gauge);
  s.Family("diskprobe_x_info", "Help with \\ and\nnewline.", MetricType::Gauge);
  s.Sample({{"device", "sd\"a\\b\nc"}, {"model", ""}}, 1);
  s.Sample({{"device", "b"}, {"model", "m"}}, 0.25);
  s.Family("diskprobe_y_total", "Counter.", MetricType::Counter);
  s.Sample({}, 42);
  s.Family("diskprobe_z", "Untyped.", MetricType::Untyped);
  s.Sample({{"a", "b"}}, -INFINITY);
  s.Family("diskprobe_empty_at_end", "never shown either", MetricType::Counter);
  EXPECT_EQ(out,
            "# HELP diskprobe_x_info Help with \\\\ and\\nnewline.\n"
            "# TYPE diskprobe_x_info gauge\n"
            "diskprobe_x_info{device=\"sd\\\"a\\\\b\\nc\",model=\"\"} 1\n"
            "diskprobe_x_info{device=\"b\",model=\"m\"} 0.25\n"
            "# HELP diskprobe_y_total Counter.\n"
            "# TYPE diskprobe_y_total counter\n"
            "diskprobe_y_total 42\n"
            "# HELP diskprobe_z Untyped.\n"
            "# TYPE diskprobe_z untyped\n"
            "diskprobe_z{a=\"b\"} -Inf\n");
}

TEST(FamilySink, Histogram) {
  std::string out;
  FamilySink s(&out);
  s.Family("diskprobe_lat_seconds", "Latency.", MetricType::Histogram);
  const double le[] = {0.001, 0.01};
  const std::uint64_t cumulative[] = {1, 3};
  // One operation beyond the last bound: only in +Inf and the count.
  s.Histogram({{"device", "mmcblk0"}}, le, cumulative, 0.0125, 4);
  s.Histogram({{"device", "sda"}}, le, std::vector<std::uint64_t>{0, 0}, 0, 0);
  EXPECT_EQ(out,
            "# HELP diskprobe_lat_seconds Latency.\n"
            "# TYPE diskprobe_lat_seconds histogram\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"0.001\"} 1\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"0.01\"} 3\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"+Inf\"} 4\n"
            "diskprobe_lat_seconds_sum{device=\"mmcblk0\"} 0.0125\n"
            "diskprobe_lat_seconds_count{device=\"mmcblk0\"} 4\n"
            "diskprobe_lat_seconds_bucket{device=\"sda\",le=\"0.001\"} 0\n"
            "diskprobe_lat_seconds_bucket{device=\"sda\",le=\"0.01\"} 0\n"
            "diskprobe_lat_seconds_bucket{device=\"sda\",le=\"+Inf\"} 0\n"
            "diskprobe_lat_seconds_sum{device=\"sda\"} 0\n"
            "diskprobe_lat_seconds_count{device=\"sda\"} 0\n");
  // A last bound of +Inf is not written twice.
  std::string inf;
  FamilySink t(&inf);
  t.Family("diskprobe_h", "H.", MetricType::Histogram);
  const double le_inf[] = {1, INFINITY};
  t.Histogram({}, le_inf, std::vector<std::uint64_t>{2, 5}, 7, 5);
  EXPECT_EQ(inf,
            "# HELP diskprobe_h H.\n# TYPE diskprobe_h histogram\n"
            "diskprobe_h_bucket{le=\"1\"} 2\ndiskprobe_h_bucket{le=\"+Inf\"} 5\n"
            "diskprobe_h_sum 7\ndiskprobe_h_count 5\n");
}

// Pre-rendered text (a collector's cache) goes in as it is and ends the family before it: a
// family started but without samples leaves no header, and samples after it need a new Family.
TEST(FamilySink, TextBlocksAndRuntimeLabels) {
  std::string cache;
  FamilySink c(&cache);
  c.Family("diskprobe_cached", "Cached.", MetricType::Gauge);
  c.Sample({{"device", "sda"}}, 1);
  std::string out;
  FamilySink s(&out);
  s.Family("diskprobe_unused", "no samples", MetricType::Gauge);
  s.Text(cache);
  s.Family("diskprobe_after", "After.", MetricType::Gauge);
  const std::vector<LabelView> labels = {{"a", "1"}, {"b", "2"}};
  s.Sample(labels, 3);
  EXPECT_EQ(out,
            "# HELP diskprobe_cached Cached.\n# TYPE diskprobe_cached gauge\ndiskprobe_cached{device=\"sda\"} 1\n"
            "# HELP diskprobe_after After.\n# TYPE diskprobe_after gauge\ndiskprobe_after{a=\"1\",b=\"2\"} 3\n");
}

}  // namespace
}  // namespace diskprobe

namespace diskprobe {
namespace {

// A card's product name is bytes from the card; Prometheus rejects a scrape with invalid UTF-8.
TEST(FamilySink, InvalidUtf8InLabelValuesBecomesReplacementCharacter) {
  std::string out;
  FamilySink s(&out);
  s.Family("diskprobe_x_info", "x", MetricType::Gauge);
  s.Sample({{"name", "SD\xff\xfe caf\xc3\xa9 \xe2\x82\xac \xed\xa0\x80 \xc0\xaf"}}, 1);
  EXPECT_NE(out.find("name=\"SD\xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9 \xe2\x82\xac \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                     "\xef\xbf\xbd\xef\xbf\xbd\""),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace diskprobe
