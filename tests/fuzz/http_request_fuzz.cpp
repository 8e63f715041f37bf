// The HTTP request path up to the handler: the bytes a client sent, delimited as the server's
// event loop delimits them (FindHeadEnd with the default 8 KiB head limit) and parsed as it
// parses them (ParseRequestHead), then what the handlers parse of it: the Authorization header's
// base64 (basic auth, before any password check) and Accept-Encoding (gzip).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/auth.h"
#include "http/gzip.h"
#include "http/request_head.h"
#include "http/server.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::http;
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t max_head = Limits{}.max_head_bytes;
  const HeadEnd h = FindHeadEnd(in, max_head);
  if (h.end != std::string_view::npos && (h.end + h.skip > in.size() || (h.skip != 1 && h.skip != 2))) __builtin_trap();
  // A head the server would parse; else the whole input, as if it were a complete head.
  const std::string_view head = h.end != std::string_view::npos && h.end <= max_head ? in.substr(0, h.end) : in;
  const ParsedHead p = ParseRequestHead(head);
  if (p.error == 0) {
    if (p.req.path.empty() || p.req.path.front() != '/') __builtin_trap();
    if (const auto a = p.req.Header("Authorization"); a && a->size() >= 6) (void)DecodeBase64(a->substr(6));
    if (const auto ae = p.req.Header("Accept-Encoding")) (void)AcceptsGzip(*ae);
    (void)p.req.Header("connection");
  }
  return 0;
}
