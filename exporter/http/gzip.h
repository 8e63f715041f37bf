#pragma once
// Response compression for the metrics endpoint: Prometheus asks for it
// ("Accept-Encoding: gzip"), and node_exporter's users expect it (promhttp compresses by default).
// The page shrinks about 6.5x (25 KB -> 3.9 KB on a VM with 3 disks), which counts across a fleet.
//
// Compression is libdeflate's gzip at level 1 (libdeflate-dev, a whole-buffer compressor): on the
// exposition page it is 2-3x faster than zlib's level 1 and 5 % smaller (tests/bench/scrape_cost
// prints the cost beside node_exporter's). One compressor (about 200 KiB) is allocated at the first
// compressed response and kept; responses compress one at a time under its mutex (tens of
// microseconds each).
#include <string>
#include <string_view>

namespace diskprobe::http {

// True when an Accept-Encoding header value accepts gzip (RFC 9110 section 12.5.3): a "gzip" or
// "x-gzip" coding, or "*", with a weight (";q=") above 0. "gzip;q=0" refuses gzip even with "*".
// Codings are case-insensitive; a malformed weight counts as refusal. An empty value accepts
// nothing (identity only).
bool AcceptsGzip(std::string_view accept_encoding);

// `data` as one gzip member (RFC 1952: header, deflate data, CRC-32, size). Returns false and
// sets *error only when the compressor cannot be allocated; *out is then unspecified.
bool GzipCompress(std::string_view data, std::string* out, std::string* error);

}  // namespace diskprobe::http
