// The bench's command line (bench/cli.h): nonsense bounds and a bad --push URL are usage errors at parse time
// (CLI::ParseError, exit 2 in bench/main.cpp), before any I/O. Parsing only: nothing is run.
#include <gtest/gtest.h>

#include <string>

#include "bench/cli.h"
#include "bench/report.h"

namespace {

using namespace diskprobe::bench;

// "" when `args` (after "bench --device /dev/null --dir /tmp") parse, else CLI11's message.
std::string ParseError(const std::string& args) {
  CLI::App app{"test"};
  auto command = AddCommand(app);
  try {
    app.parse("bench --device /dev/null --dir /tmp " + args, false);
  } catch (const CLI::ParseError& e) {
    return std::string(e.what()).empty() ? "(empty message)" : e.what();
  }
  return "";
}

TEST(BenchCli, DefaultsAndSaneBoundsParse) {
  EXPECT_EQ(ParseError(""), "");
  EXPECT_EQ(ParseError("--duration 500ms --max-bytes 64MiB --file-size 16MiB --lock-wait 0"), "");
  EXPECT_EQ(ParseError("--file-size 256MiB"), "");  // exactly a quarter of the default 1GiB
  EXPECT_EQ(ParseError("--max-bytes 8MiB --file-size 2MiB"), "");
}

// The tester's report: 512MiB with the default 1GiB gave a 256 MiB file, and said nothing.
TEST(BenchCli, FileSizeAboveAQuarterOfMaxBytesIsAUsageError) {
  std::string e = ParseError("--file-size 512MiB");
  EXPECT_NE(e.find("--file-size: 512MiB is more than a quarter of --max-bytes 1GiB: at most 256MiB"), std::string::npos)
      << e;
  e = ParseError("--max-bytes 64MiB --file-size 17MiB");
  EXPECT_NE(e.find("a quarter of --max-bytes"), std::string::npos) << e;
}

TEST(BenchCli, NonsenseBoundsAreUsageErrors) {
  std::string e = ParseError("--max-bytes 0");
  EXPECT_NE(e.find("--max-bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 8MiB"), std::string::npos) << e;
  e = ParseError("--max-bytes 8MiB --file-size 1MiB");
  EXPECT_NE(e.find("--file-size"), std::string::npos) << e;
  EXPECT_NE(e.find("at least 2MiB"), std::string::npos) << e;
  e = ParseError("--duration 0s");
  EXPECT_NE(e.find("--duration"), std::string::npos) << e;
  EXPECT_NE(ParseError("--duration 0ms"), "");
  e = ParseError("--lock-wait -1");
  EXPECT_NE(e.find("--lock-wait"), std::string::npos) << e;
}

TEST(BenchCli, BadPushUrlIsAUsageError) {
  for (const char* bad : {"notaurl", "127.0.0.1:9091", "http://host", "http://:9091", "http://host:port",
                          "http://host:9091/metrics", "ftp://host:9091", "http://host:99999"}) {
    std::string e = ParseError(std::string("--push ") + bad);
    EXPECT_NE(e.find("--push"), std::string::npos) << bad << ": " << e;
  }
  for (const char* good :
       {"http://127.0.0.1:9091", "http://pushgateway:9091/", "https://gw.example:443", "http://[::1]:9091"}) {
#if DISKPROBE_BENCH_PUSH
    EXPECT_EQ(ParseError(std::string("--push ") + good), "") << good;
#else
    // The static ARMv6 build has no Pushgateway client: a good URL is refused before the run.
    EXPECT_EQ(ParseError(std::string("--push ") + good),
              "--push: this build has no Pushgateway client (static ARMv6 build)")
        << good;
#endif
  }
}

TEST(BenchPushUrl, SplitsSchemeHostAndPort) {
  std::string error;
  auto t = ParsePushUrl("http://pushgateway:9091/", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "http://pushgateway");
  EXPECT_EQ(t->port, "9091");
  t = ParsePushUrl("http://[::1]:9091", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->host, "http://[::1]");
  EXPECT_EQ(t->port, "9091");
  EXPECT_FALSE(ParsePushUrl("notaurl", &error));
  EXPECT_NE(error.find("http://HOST:PORT"), std::string::npos) << error;
}

TEST(BenchPushUrl, PortIsADecimalFrom1To65535) {
  std::string error;
  auto t = ParsePushUrl("http://h:65535", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->port, "65535");
  ASSERT_TRUE(ParsePushUrl("http://h:1/", &error)) << error;
  for (const char* bad : {"http://h:0", "http://h:65536", "http://h:099999", "http://h:+80", "http://h:-1",
                          "http://h:8o", "http://h:/"}) {
    error.clear();
    EXPECT_FALSE(ParsePushUrl(bad, &error)) << bad;
    EXPECT_NE(error.find("bad port"), std::string::npos) << bad << ": " << error;
  }
}

}  // namespace
