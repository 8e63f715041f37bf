#pragma once
// The request head of HTTP/1.x: where it ends in the bytes a connection has buffered, and what it
// says. Pure functions over a buffer (no socket, no clock), so that the server's event loop
// (http/server.h) and a fuzzer run exactly the same code. Source of truth: RFC 9112 (message
// syntax: sections 2.2, 3, 5, 9.3) and RFC 3986 (percent-encoding of the path).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace diskprobe::http {

struct Request {
  std::string method;  // "GET", "HEAD", ... (case-sensitive, as sent)
  std::string path;    // URL-decoded path without the query, e.g. "/metrics"
  std::string query;   // after '?', without it; empty when none
  std::vector<std::pair<std::string, std::string>> headers;
  // Client address, "192.0.2.7" or "2001:db8::7" (an IPv4 client of a dual-stack [::] listener:
  // its IPv4 form); empty when not from a socket.
  std::string remote_addr;
  // Value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

// Where the head ends in `in`: `end` is the offset just past the '\n' of the last header line
// (the head is in[0, end)), `skip` the length of the empty line after it (1 for "\n", 2 for
// "\r\n"), so in[0, end + skip) is consumed. `end` is std::string_view::npos when no empty line
// was found among the lines that start within the first max_head_bytes + 1 bytes (more may
// still arrive, or the head is too large: the caller decides by the buffer's size).
struct HeadEnd {
  std::size_t end = std::string_view::npos;
  std::size_t skip = 0;
};
HeadEnd FindHeadEnd(std::string_view in, std::size_t max_head_bytes);

struct ParsedHead {
  Request req;  // remote_addr is left empty
  bool http11 = false;
  bool keep_alive = false;
  bool has_body = false;  // Content-Length > 0 or Transfer-Encoding: the body is not read
  int error = 0;          // a status to answer with, then close: 400, 431 (over 100 headers), 505
};

// Parses a head as FindHeadEnd delimits it (request line, then "name: value" lines; CRLF or bare
// LF). Leading empty lines are skipped (RFC 9112 2.2); obsolete line folding is refused (400) as
// the RFC allows; the path is percent-decoded, and a malformed escape or a decoded NUL is 400.
// Keep-alive as RFC 9112 section 9.3: a Connection header with "close" closes, one with
// "keep-alive" keeps an HTTP/1.0 connection, otherwise 1.1 keeps and 1.0 closes. An invalid
// Content-Length (RFC 9112 section 6.3: not 1*DIGIT, over 2^64, or differing values in a list
// or in repeated fields) is 400. Never throws
// but std::bad_alloc.
ParsedHead ParseRequestHead(std::string_view head);

}  // namespace diskprobe::http
