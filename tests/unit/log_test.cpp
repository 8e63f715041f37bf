#include "util/log.h"

#include <gtest/gtest.h>

namespace diskprobe::log {
namespace {

TEST(Log, Logfmt) {
  EXPECT_EQ(Render(Format::kLogfmt, "2026-01-02T03:04:05.678Z", Level::kInfo, "device appeared",
                   {{"device", "mmcblk0"}, {"err", "a \"quoted\" = thing\n"}, {"empty", ""}}),
            "ts=2026-01-02T03:04:05.678Z level=info msg=\"device appeared\" device=mmcblk0 "
            "err=\"a \\\"quoted\\\" = thing\\n\" empty=\"\"\n");
  EXPECT_EQ(Render(Format::kLogfmt, "t", Level::kWarn, "x", {}), "ts=t level=warn msg=x\n");
}

TEST(Log, Json) {
  EXPECT_EQ(Render(Format::kJson, "2026-01-02T03:04:05.678Z", Level::kError, "collector failed",
                   {{"collector", "block_stat"}, {"err", "tab\there \"q\""}}),
            "{\"ts\":\"2026-01-02T03:04:05.678Z\",\"level\":\"error\",\"msg\":\"collector failed\","
            "\"collector\":\"block_stat\",\"err\":\"tab\\there \\\"q\\\"\"}\n");
}

TEST(Log, ParseLevelAndFormat) {
  Level l;
  Format f;
  EXPECT_TRUE(ParseLevel("warning", &l));
  EXPECT_EQ(l, Level::kWarn);
  EXPECT_FALSE(ParseLevel("verbose", &l));
  EXPECT_TRUE(ParseFormat("json", &f));
  EXPECT_EQ(f, Format::kJson);
  EXPECT_FALSE(ParseFormat("text", &f));
}

}  // namespace
}  // namespace diskprobe::log
