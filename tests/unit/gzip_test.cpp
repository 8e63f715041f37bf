// http/gzip.h: Accept-Encoding negotiation (RFC 9110 12.5.3) and the gzip member (RFC 1952),
// checked by decompressing with zlib's inflate.
#include "http/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>

#include "config/config.h"
#include "sources/device_registry.h"
#include "http/routes.h"
#include "scrape/scraper.h"
#include "test_util.h"

namespace diskprobe::http {
namespace {

std::string Gunzip(const std::string& gz) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);  // gzip wrapper only
  std::string out(1 << 20, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  zs.avail_in = static_cast<uInt>(gz.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  int rc = inflate(&zs, Z_FINISH);
  EXPECT_EQ(rc, Z_STREAM_END) << (zs.msg ? zs.msg : "");
  EXPECT_EQ(zs.avail_in, 0u) << "one gzip member, nothing after it";
  out.resize(zs.total_out);
  inflateEnd(&zs);
  return out;
}

TEST(AcceptsGzip, Negotiation) {
  EXPECT_TRUE(AcceptsGzip("gzip"));                          // Prometheus
  EXPECT_TRUE(AcceptsGzip("deflate, gzip;q=1.0, *;q=0.5"));  // curl --compressed style lists
  EXPECT_TRUE(AcceptsGzip("GZIP"));                          // codings are case-insensitive
  EXPECT_TRUE(AcceptsGzip("x-gzip"));
  EXPECT_TRUE(AcceptsGzip(" br ,  gzip ; q=0.001 "));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));  // identity only
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("deflate, br"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0.000"));
  EXPECT_FALSE(AcceptsGzip("*, gzip;q=0")) << "an explicit refusal beats the wildcard";
  EXPECT_FALSE(AcceptsGzip("*;q=0"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=2")) << "weights are 0 to 1";
  EXPECT_FALSE(AcceptsGzip("gzip;q=abc"));
  EXPECT_FALSE(AcceptsGzip("gzipped"));
}

TEST(GzipCompress, RoundTrip) {
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "diskprobe_block_read_bytes_total{device=\"mmcblk" + std::to_string(i % 7) + "\"} " +
            std::to_string(i * 4096) + "\n";
  std::string gz, err;
  ASSERT_TRUE(GzipCompress(text, &gz, &err)) << err;
  ASSERT_GE(gz.size(), 18u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // RFC 1952 ID1 ID2, CM = 8 (deflate)
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(gz[2], 8);
  EXPECT_LT(gz.size() * 4, text.size()) << "repetitive exposition text compresses well";
  EXPECT_EQ(Gunzip(gz), text);

  ASSERT_TRUE(GzipCompress("", &gz, &err)) << err;
  EXPECT_EQ(Gunzip(gz), "");
}

collectors::Paths SysfsOnly(const std::string& sysfs) {
  collectors::Paths p;
  p.sysfs = sysfs;
  return p;
}

TEST(MetricsEndpoint, GzipWhenAccepted) {
  DeviceRegistry devices(testing::Fixture("sys"), config::LoadDefault().config->devices);
  devices.Refresh();
  Scraper scraper(SysfsOnly(testing::Fixture("sys")), &devices, {});
  std::atomic<bool> ready{true};
  Handler handler = MakeExporterHandler(&scraper, &devices, "/metrics", &ready);
  auto header = [](const Response& r, std::string_view name) -> std::string {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return "(none)";
  };
  Request req;
  req.method = "GET";
  req.path = "/metrics";
  Response plain = handler(req);
  EXPECT_EQ(header(plain, "Content-Encoding"), "(none)");
  EXPECT_EQ(header(plain, "Vary"), "Accept-Encoding") << "caches must key on Accept-Encoding";

  req.headers.emplace_back("Accept-Encoding", "gzip");
  Response gz = handler(req);
  EXPECT_EQ(gz.status, 200);
  EXPECT_EQ(header(gz, "Content-Encoding"), "gzip");
  EXPECT_EQ(header(gz, "Vary"), "Accept-Encoding");
  std::string body = Gunzip(gz.body);
  EXPECT_NE(body.find("diskprobe_build_info{"), std::string::npos);
  EXPECT_LT(gz.body.size(), body.size());

  req.headers.back().second = "gzip;q=0, identity";
  EXPECT_EQ(header(handler(req), "Content-Encoding"), "(none)");
  req.method = "HEAD";
  req.headers.back().second = "gzip";
  EXPECT_EQ(header(handler(req), "Content-Encoding"), "gzip") << "HEAD answers as GET would";
}

}  // namespace
}  // namespace diskprobe::http
