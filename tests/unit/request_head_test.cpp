// http/request_head: the request head as the server delimits and parses it, without a socket
// (http_server_test.cpp drives the same code over loopback).
#include "http/request_head.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace diskprobe::http {
namespace {

TEST(FindHeadEnd, CrlfLfAndIncomplete) {
  const std::string crlf = "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
  HeadEnd h = FindHeadEnd(crlf, 8192);
  EXPECT_EQ(h.end, crlf.find("\r\n\r\n") + 2);
  EXPECT_EQ(h.skip, 2u);
  EXPECT_EQ(crlf.substr(h.end + h.skip), "GET /next");

  const std::string lf = "GET / HTTP/1.0\nHost: x\n\nrest";
  h = FindHeadEnd(lf, 8192);
  EXPECT_EQ(h.end, lf.find("\n\n") + 1);
  EXPECT_EQ(h.skip, 1u);

  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\nHost: x\r\n", 8192).end, std::string_view::npos);
  EXPECT_EQ(FindHeadEnd("GET / HTTP/1.1\r\n\r", 8192).end, std::string_view::npos);  // "\n" not yet here
  EXPECT_EQ(FindHeadEnd("", 8192).end, std::string_view::npos);
}

TEST(FindHeadEnd, StopsLookingPastTheLimit) {
  // The empty line is there, but only after a line that starts beyond max_head_bytes.
  const std::string big = "GET / HTTP/1.1\r\nX: " + std::string(100, 'a') + "\r\n\r\n";
  EXPECT_EQ(FindHeadEnd(big, 10).end, std::string_view::npos);
  EXPECT_NE(FindHeadEnd(big, 8192).end, std::string_view::npos);
}

TEST(ParseRequestHead, RequestLineHeadersAndKeepAlive) {
  ParsedHead p = ParseRequestHead("\r\nGET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\nAccept-Encoding:  gzip \r\n");
  ASSERT_EQ(p.error, 0);
  EXPECT_EQ(p.req.method, "GET");
  EXPECT_EQ(p.req.path, "/a b");
  EXPECT_EQ(p.req.query, "x=1");
  EXPECT_EQ(p.req.Header("accept-encoding"), "gzip");
  EXPECT_TRUE(p.http11);
  EXPECT_TRUE(p.keep_alive);
  EXPECT_FALSE(p.has_body);

  EXPECT_FALSE(ParseRequestHead("GET / HTTP/1.0\r\n").keep_alive);
  EXPECT_TRUE(ParseRequestHead("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n").keep_alive);
  EXPECT_FALSE(ParseRequestHead("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n").keep_alive);
  EXPECT_TRUE(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 3\r\n").has_body);
  EXPECT_FALSE(ParseRequestHead("POST / HTTP/1.1\r\nContent-Length: 0\r\n").has_body);
}

TEST(ParseRequestHead, Errors) {
  EXPECT_EQ(ParseRequestHead("").error, 400);
  EXPECT_EQ(ParseRequestHead("GET /\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/2.0\r\n").error, 505);
  EXPECT_EQ(ParseRequestHead("GET metrics HTTP/1.1\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET /%zz HTTP/1.1\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET /%00 HTTP/1.1\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nA: b\r\n folded\r\n").error, 400);
  // Field names are tokens: a NUL (it ends the name for anything comparing C strings), a space
  // before the colon, a control byte: 400. A NUL or a bare CR in a value: 400 too.
  using namespace std::string_literals;
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nAuthorization\0X: Basic x\r\n"s).error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\n\0: x\r\n"s).error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost : x\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHo\x01st: x\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: a\0b\r\n"s).error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nHost: a\rb\r\n").error, 400);
  EXPECT_EQ(ParseRequestHead("GET / HTTP/1.1\r\nX-Odd_Name.1~: a\r\n").error, 0);
  // Percent-encoded unreserved characters are the same path (RFC 3986 section 6.2.2.2), as Go's
  // net/http (exporter-toolkit) decodes before routing: /%6detrics is /metrics.
  EXPECT_EQ(ParseRequestHead("GET /%6detrics HTTP/1.1\r\n").req.path, "/metrics");
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) many += "X: y\r\n";
  EXPECT_EQ(ParseRequestHead(many).error, 431);
}

// RFC 9112 section 6.3: an invalid Content-Length cannot frame the message, the answer is 400.
TEST(ParseRequestHead, InvalidContentLengthIs400) {
  auto cl = [](const std::string& fields) { return ParseRequestHead("POST / HTTP/1.1\r\n" + fields); };
  for (const char* bad :
       {"Content-Length: -1\r\n", "Content-Length: 99999999999999999999\r\n", "Content-Length: +3\r\n",
        "Content-Length: 3a\r\n", "Content-Length: 0x10\r\n", "Content-Length: 1 2\r\n", "Content-Length:\r\n",
        "Content-Length: \r\n", "content-length: 3\r\nContent-Length: 4\r\n", "Content-Length: 3, 4\r\n",
        "Content-Length: 3,\r\n", "Content-Length: ,3\r\n", "Content-Length: 18446744073709551616\r\n"})
    EXPECT_EQ(cl(bad).error, 400) << bad;
  // Valid ones: digits, a repeated identical value, a list of identical values (the RFC allows
  // either); a body is announced unless the length is 0.
  for (const char* good : {"Content-Length: 3\r\n", "Content-Length: 3\r\nContent-Length: 3\r\n",
                           "Content-Length: 3, 3\r\n", "Content-Length: 003\r\n"}) {
    EXPECT_EQ(cl(good).error, 0) << good;
    EXPECT_TRUE(cl(good).has_body) << good;
  }
  EXPECT_EQ(cl("Content-Length: 00\r\n").error, 0);
  EXPECT_FALSE(cl("Content-Length: 00\r\n").has_body);
  EXPECT_EQ(cl("Content-Length: 1000000000000\r\n").error, 0);
}

}  // namespace
}  // namespace diskprobe::http
