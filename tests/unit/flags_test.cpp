// --web.telemetry-path validation: the path is matched against requests as sent, so only paths a
// client and the landing page's link both reach unchanged are accepted.
#include <gtest/gtest.h>

#include "app/flags.h"

namespace diskprobe::app {
namespace {

TEST(TelemetryPath, AcceptsPlainPaths) {
  for (const char* p : {"/metrics", "/probe/metrics", "/a.b_c~d-e", "/metrics/", "/.well-known/x", "/..x"})
    EXPECT_EQ(CheckTelemetryPath(p), "") << p;
}

TEST(TelemetryPath, RefusesWhatRequestsCannotReachAsWritten) {
  EXPECT_EQ(CheckTelemetryPath("metrics"), "must start with /");
  EXPECT_EQ(CheckTelemetryPath(""), "must start with /");
  EXPECT_EQ(CheckTelemetryPath("//metrics"), "may not contain an empty segment (//)");
  EXPECT_EQ(CheckTelemetryPath("/a//metrics"), "may not contain an empty segment (//)");
  EXPECT_EQ(CheckTelemetryPath("/metrics/../x"), "may not contain a . or .. segment");
  EXPECT_EQ(CheckTelemetryPath("/./metrics"), "may not contain a . or .. segment");
  EXPECT_EQ(CheckTelemetryPath("/metrics/.."), "may not contain a . or .. segment");
  EXPECT_EQ(CheckTelemetryPath("/metrics/."), "may not contain a . or .. segment");
  EXPECT_NE(CheckTelemetryPath("/metrics?x=1"), "");
  EXPECT_EQ(CheckTelemetryPath("/-/ready"), "/-/ready is another endpoint");
}

}  // namespace
}  // namespace diskprobe::app
