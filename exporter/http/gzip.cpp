#include "http/gzip.h"

#include <libdeflate.h>
#include <strings.h>

#include <algorithm>
#include <mutex>

#include "util/strings.h"

namespace diskprobe::http {

namespace {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The weight of one element's parameters ("q=0.5", RFC 9110 12.4.2: "0" to "1" with up to three
// decimals); 1 without a q parameter, -1 when malformed.
double Weight(std::string_view params) {
  double q = 1;
  while (!params.empty()) {
    std::size_t semi = params.find(';');
    std::string_view p = util::Trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view{} : params.substr(semi + 1);
    if (p.size() < 2 || (p[0] != 'q' && p[0] != 'Q') || p[1] != '=') continue;
    const std::optional<double> v = util::ParseNumber<double>(util::Trim(p.substr(2)));
    if (!v || !(*v >= 0 && *v <= 1)) return -1;
    q = *v;
  }
  return q;
}

}  // namespace

bool AcceptsGzip(std::string_view accept_encoding) {
  double gzip = -2, star = -2;  // -2: not named
  while (!accept_encoding.empty()) {
    std::size_t comma = accept_encoding.find(',');
    std::string_view element = accept_encoding.substr(0, comma);
    accept_encoding = comma == std::string_view::npos ? std::string_view{} : accept_encoding.substr(comma + 1);
    std::size_t semi = element.find(';');
    std::string_view coding = util::Trim(element.substr(0, semi));
    double q = semi == std::string_view::npos ? 1 : Weight(element.substr(semi + 1));
    if (EqualsNoCase(coding, "gzip") || EqualsNoCase(coding, "x-gzip")) gzip = std::max(gzip, q);
    else if (coding == "*") star = std::max(star, q);
  }
  if (gzip != -2) return gzip > 0;
  return star > 0;
}

bool GzipCompress(std::string_view data, std::string* out, std::string* error) {
  static std::mutex mu;
  static libdeflate_compressor* compressor = nullptr;  // kept for the process's life
  std::lock_guard lock(mu);
  if (compressor == nullptr && (compressor = libdeflate_alloc_compressor(1)) == nullptr) {
    *error = "cannot allocate the gzip compressor";
    return false;
  }
  out->resize(libdeflate_gzip_compress_bound(compressor, data.size()));
  // With a buffer of the bound's size the compression cannot run out of space (libdeflate.h).
  std::size_t n = libdeflate_gzip_compress(compressor, data.data(), data.size(), out->data(), out->size());
  if (n == 0) {
    *error = "gzip output larger than its bound";
    return false;
  }
  out->resize(n);
  return true;
}

}  // namespace diskprobe::http
