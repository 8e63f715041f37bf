#include "scrape/exposition.h"

#include <gtest/gtest.h>

#include <cmath>

#include "scrape/collector.h"

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
  EXPECT_EQ(V(9007199254740992.0), "9007199254740992");  // 2^53: shortest double form
  EXPECT_EQ(V(1.8446744073709552e19), "18446744073709551616");  // 2^64, exact
  EXPECT_EQ(V(INFINITY), "+Inf");
  EXPECT_EQ(V(-INFINITY), "-Inf");
  EXPECT_EQ(V(NAN), "NaN");
}

TEST(WriteExposition, EscapesAndSkipsEmptyFamilies) {
  collectors::Families f;
  collectors::AddFamily(&f, "diskprobe_empty", "never shown", MetricType::Gauge);
  auto& g = collectors::AddFamily(&f, "diskprobe_x_info", "Help with \\ and\nnewline.", MetricType::Gauge);
  collectors::AddSample(g, {{"device", "sd\"a\\b\nc"}, {"model", ""}}, 1);
  auto& c = collectors::AddFamily(&f, "diskprobe_y_total", "Counter.", MetricType::Counter);
  collectors::AddSample(c, {}, 42);
  std::string out;
  WriteExposition(f, &out);
  EXPECT_EQ(out,
            "# HELP diskprobe_x_info Help with \\\\ and\\nnewline.\n"
            "# TYPE diskprobe_x_info gauge\n"
            "diskprobe_x_info{device=\"sd\\\"a\\\\b\\nc\",model=\"\"} 1\n"
            "# HELP diskprobe_y_total Counter.\n"
            "# TYPE diskprobe_y_total counter\n"
            "diskprobe_y_total 42\n");
}

TEST(WriteExposition, Histogram) {
  collectors::Families f;
  auto& h = collectors::AddFamily(&f, "diskprobe_lat_seconds", "Latency.", MetricType::Histogram);
  prometheus::ClientMetric m;
  m.label = {{"device", "mmcblk0"}};
  m.histogram.sample_count = 3;
  m.histogram.sample_sum = 0.0125;
  m.histogram.bucket = {{1, 0.001}, {3, 0.01}};
  h.metric.push_back(m);
  std::string out;
  WriteExposition(f, &out);
  EXPECT_EQ(out,
            "# HELP diskprobe_lat_seconds Latency.\n"
            "# TYPE diskprobe_lat_seconds histogram\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"0.001\"} 1\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"0.01\"} 3\n"
            "diskprobe_lat_seconds_bucket{device=\"mmcblk0\",le=\"+Inf\"} 3\n"
            "diskprobe_lat_seconds_sum{device=\"mmcblk0\"} 0.0125\n"
            "diskprobe_lat_seconds_count{device=\"mmcblk0\"} 3\n");
}

// The same calls through both sinks: the text is what WriteExposition makes of the families,
// escapes and empty families included.
TEST(FamilySink, TextSinkWritesWhatWriteExpositionWritesOfFamiliesSink) {
  auto emit = [](collectors::FamilySink& s) {
    s.Family("diskprobe_empty", "never shown", MetricType::Gauge);
    s.Family("diskprobe_x_info", "Help with \\ and\nnewline.", MetricType::Gauge);
    s.Sample({{"device", "sd\"a\\b\nc"}, {"model", ""}}, 1);
    s.Sample({{"device", "SD\xff caf\xc3\xa9"}, {"model", "m"}}, 0.25);
    s.Family("diskprobe_y_total", "Counter.", MetricType::Counter);
    s.Sample({}, 42);
    s.Family("diskprobe_z", "Untyped.", MetricType::Untyped);
    s.Sample({{"a", "b"}}, -INFINITY);
    s.Family("diskprobe_empty_at_end", "never shown either", MetricType::Counter);
  };
  collectors::Families f;
  collectors::FamiliesSink families(&f);
  emit(families);
  ASSERT_EQ(f.size(), 3u);
  std::string expected;
  WriteExposition(f, &expected);
  std::string text;
  collectors::TextSink sink(&text);
  emit(sink);
  EXPECT_EQ(text, expected);
}

}  // namespace
}  // namespace diskprobe

namespace diskprobe {
namespace {

// A card's product name is bytes from the card; Prometheus rejects a scrape with invalid UTF-8.
TEST(WriteExposition, InvalidUtf8InLabelValuesBecomesReplacementCharacter) {
  collectors::Families f;
  auto& g = collectors::AddFamily(&f, "diskprobe_x_info", "x", prometheus::MetricType::Gauge);
  collectors::AddSample(g, {{"name", std::string("SD\xff\xfe caf\xc3\xa9 \xe2\x82\xac \xed\xa0\x80 \xc0\xaf")}}, 1);
  std::string out;
  WriteExposition(f, &out);
  EXPECT_NE(out.find("name=\"SD\xef\xbf\xbd\xef\xbf\xbd caf\xc3\xa9 \xe2\x82\xac \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                     "\xef\xbf\xbd\xef\xbf\xbd\""),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace diskprobe
