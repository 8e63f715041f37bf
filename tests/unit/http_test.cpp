// http/: listen address translation and the exporter's routes (no sockets; the e2e test covers
// the server on a real port).
#include <gtest/gtest.h>

#include "http/routes.h"
#include "http/server.h"
#include "test_util.h"

namespace diskprobe::http {
namespace {

std::string Port(const char* a) {
  std::string err;
  auto p = ToListeningPort(a, &err);
  return p ? *p : "ERR " + err;
}

TEST(ToListeningPort, PrometheusSyntax) {
  EXPECT_EQ(Port(":29100"), "0.0.0.0:29100");
  EXPECT_EQ(Port("127.0.0.1:0"), "127.0.0.1:0");
  EXPECT_EQ(Port("10.1.2.3:8080"), "10.1.2.3:8080");
  EXPECT_EQ(Port("localhost:29100"), "127.0.0.1:29100");
  EXPECT_EQ(Port("[::]:29100"), "[::]:29100");
  EXPECT_EQ(Port("[::1]:0"), "[::1]:0");
  EXPECT_EQ(Port("[2001:DB8:0:0::7]:80"), "[2001:db8::7]:80");
  EXPECT_EQ(Port("::1:29100"), "ERR listen address \"::1:29100\": an IPv6 address needs brackets: [::1]:29100");
  EXPECT_EQ(Port("[::1]29100"), "ERR listen address \"[::1]29100\": want [IPV6]:PORT");
  EXPECT_EQ(Port("[::1"), "ERR listen address \"[::1\": want [IPV6]:PORT");
  EXPECT_EQ(Port("[127.0.0.1]:1"), "ERR listen address \"[127.0.0.1]:1\": \"127.0.0.1\" is not an IPv6 address");
  EXPECT_EQ(Port("[::1]:65536"), "ERR listen address \"[::1]:65536\": port must be a number from 0 to 65535");
  EXPECT_EQ(Port("29100"), "ERR listen address \"29100\": want HOST:PORT, [IPV6]:PORT or :PORT");
  EXPECT_EQ(Port(":65536"), "ERR listen address \":65536\": port must be a number from 0 to 65535");
  EXPECT_EQ(Port(":"), "ERR listen address \":\": port must be a number from 0 to 65535");
  EXPECT_EQ(Port("host.invalid:1").rfind("ERR listen address \"host.invalid:1\": cannot resolve", 0), 0u);
}

TEST(SplitAddresses, CommasAndRepeats) {
  EXPECT_EQ(SplitAddresses({":1,127.0.0.1:2", " :3 ", ""}), (std::vector<std::string>{":1", "127.0.0.1:2", ":3"}));
}

TEST(HtmlEscape, Escapes) { EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"); }

collectors::Paths SysfsOnly(const std::string& sysfs) {
  collectors::Paths p;
  p.sysfs = sysfs;
  return p;
}

class Routes : public ::testing::Test {
 protected:
  Routes()
      : devices_(testing::Fixture("sys"), config::LoadDefault().config->devices),
        scraper_(SysfsOnly(testing::Fixture("sys")), &devices_, {}) {
    devices_.Refresh();
    handler_ = MakeExporterHandler(&scraper_, &devices_, "/probe-metrics", &ready_);
  }
  Response Get(const std::string& path, const std::string& method = "GET") {
    Request r;
    r.method = method;
    r.path = path;
    return handler_(r);
  }
  DeviceRegistry devices_;
  Scraper scraper_;
  std::atomic<bool> ready_{false};
  Handler handler_;
};

TEST_F(Routes, Endpoints) {
  Response m = Get("/probe-metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m.body.find("diskprobe_build_info{revision=\""), std::string::npos);
  EXPECT_NE(m.body.find("diskprobe_config_last_reload_successful 1\n"), std::string::npos);
  EXPECT_EQ(Get("/metrics").status, 404) << "the telemetry path is configurable";
  EXPECT_EQ(Get("/nope").status, 404);
  EXPECT_EQ(Get("/-/healthy").status, 200);
  EXPECT_EQ(Get("/-/ready").status, 503);
  ready_ = true;
  EXPECT_EQ(Get("/-/ready").status, 200);
  Response post = Get("/probe-metrics", "POST");
  EXPECT_EQ(post.status, 405);
  Response landing = Get("/");
  EXPECT_EQ(landing.status, 200);
  EXPECT_NE(landing.body.find("<a href=\"/probe-metrics\">Metrics</a>"), std::string::npos);
  EXPECT_NE(landing.body.find("<td>mmcblk0</td><td>179:0</td>"), std::string::npos);
}

TEST_F(Routes, ReloadFailureIsExported) {
  scraper_.SetReloadResult(true, 1700000000);
  scraper_.SetReloadResult(false, 0);
  std::string body = Get("/probe-metrics").body;
  EXPECT_NE(body.find("diskprobe_config_last_reload_successful 0\n"), std::string::npos);
  EXPECT_NE(body.find("diskprobe_config_last_reload_success_timestamp_seconds 1700000000\n"), std::string::npos)
      << "a failed reload keeps the time of the last success";
}

}  // namespace
}  // namespace diskprobe::http
