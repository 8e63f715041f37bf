// --web.telemetry-path validation: the path is matched against requests as sent, so only paths a
// client and the landing page's link both reach unchanged are accepted.
#include <gtest/gtest.h>

#include "app/flags.h"

#include <string>
#include <vector>

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

// The offending character is quoted whole: "é" is two bytes, and its first alone printed as half
// a character (an invalid UTF-8 byte in the terminal and in a JSON log).
TEST(TelemetryPath, QuotesWholeUtf8CharactersAndEscapesBytes) {
  EXPECT_EQ(CheckTelemetryPath("/m\xc3\xa9trics"), "may contain only letters, digits and / - . _ ~, got '\xc3\xa9'");
  EXPECT_EQ(CheckTelemetryPath("/\xe2\x82\xac"), "may contain only letters, digits and / - . _ ~, got '\xe2\x82\xac'");
  EXPECT_EQ(CheckTelemetryPath("/a\x01"), "may contain only letters, digits and / - . _ ~, got '\\x01'");
  EXPECT_EQ(CheckTelemetryPath("/a\xa9"), "may contain only letters, digits and / - . _ ~, got '\\xa9'");
  EXPECT_EQ(CheckTelemetryPath("/a\xc3"), "may contain only letters, digits and / - . _ ~, got '\\xc3'");
}

// `--web.listen-address ''` used to take the next argument as its value, so the flag after it
// (here the telemetry path) silently did nothing. Now: exit status 2 and the flag named.
TEST(ParseFlags, EmptyValueDoesNotSwallowTheNextFlag) {
  Flags f;
  std::vector<std::string> args = {"diskprobe_exporter", "--web.listen-address", "", "--web.telemetry-path", "/m"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStderr();
  auto rc = ParseFlags(static_cast<int>(argv.size()), argv.data(), &f);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(rc, std::optional<int>(2));
  EXPECT_EQ(err, "--web.listen-address: empty value (give one, or leave the flag out for its default)\n");
  // A flag without a value followed by an empty argument is not affected by the check.
  Flags g;
  std::vector<std::string> ok = {"diskprobe_exporter", "--web.telemetry-path", "/m"};
  std::vector<char*> argv2;
  for (auto& a : ok) argv2.push_back(a.data());
  EXPECT_EQ(ParseFlags(static_cast<int>(argv2.size()), argv2.data(), &g), std::nullopt);
  EXPECT_EQ(g.telemetry_path, "/m");
}

}  // namespace
}  // namespace diskprobe::app
