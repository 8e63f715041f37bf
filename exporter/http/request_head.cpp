#include "http/request_head.h"

#include <strings.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "util/strings.h"

namespace diskprobe::http {

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return std::string_view(v);
  return std::nullopt;
}

HeadEnd FindHeadEnd(std::string_view in, std::size_t max_head_bytes) {
  HeadEnd h;
  for (std::size_t i = in.find('\n'); i != std::string_view::npos; i = in.find('\n', i + 1)) {
    if (i + 1 < in.size() && in[i + 1] == '\n') {
      h.end = i + 1, h.skip = 1;
      break;
    }
    if (i + 2 < in.size() && in[i + 1] == '\r' && in[i + 2] == '\n') {
      h.end = i + 1, h.skip = 2;
      break;
    }
    if (i > max_head_bytes) break;
  }
  return h;
}

namespace {

// RFC 3986 percent-decoding of the path ("/a%20b" -> "/a b"); nullopt for a malformed escape or
// a decoded NUL.
std::optional<std::string> DecodePath(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = util::HexDigitValue(in[i + 1]), lo = util::HexDigitValue(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return std::nullopt;
    out += c;
    i += 2;
  }
  return out;
}

// RFC 9110 section 5.6.2: a field name is a token, one or more tchar.
bool IsTchar(char c) {
  // (strchr would find a NUL: the terminator of its own string.)
  return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr("!#$%&'*+-.^_`|~", c) != nullptr);
}

}  // namespace

ParsedHead ParseRequestHead(std::string_view head) {
  ParsedHead p;
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  while (!lines.empty() && lines.front().empty()) lines.erase(lines.begin());  // RFC 9112 2.2
  if (lines.empty()) {
    p.error = 400;
    return p;
  }
  const std::string_view rl = lines[0];
  const auto sp1 = rl.find(' '), sp2 = rl.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 == sp1 || sp1 == 0) {
    p.error = 400;
    return p;
  }
  p.req.method = std::string(rl.substr(0, sp1));
  const std::string_view target = rl.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = rl.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    p.http11 = true;
  } else if (version != "HTTP/1.0") {
    p.error = version.substr(0, 5) == "HTTP/" ? 505 : 400;
    return p;
  }
  if (target.empty() || target.front() != '/' || target.find(' ') != std::string_view::npos) {
    p.error = 400;
    return p;
  }
  const auto q = target.find('?');
  auto path = DecodePath(target.substr(0, q));
  if (!path) {
    p.error = 400;
    return p;
  }
  p.req.path = std::move(*path);
  if (q != std::string_view::npos) p.req.query = std::string(target.substr(q + 1));
  std::optional<bool> conn_keep;
  std::optional<std::uint64_t> content_length;  // from every Content-Length field seen
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      p.error = 400;
      return p;
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = util::Trim(line.substr(colon + 1));
    // A name that is not a token (a NUL, a space, a control byte) and a value with a NUL or a bare
    // CR are invalid (RFC 9110 sections 5.1 and 5.5): rejected, not passed on to a handler that
    // compares names as C strings.
    bool bad = false;
    for (char c : name) bad = bad || !IsTchar(c);
    for (char c : value) bad = bad || c == '\0' || c == '\r';
    if (bad) {
      p.error = 400;
      return p;
    }
    if (p.req.headers.size() >= 100) {
      p.error = 431;
      return p;
    }
    p.req.headers.emplace_back(std::string(name), std::string(value));
    if (strncasecmp(name.data(), "Connection", name.size()) == 0 && name.size() == 10) {
      std::string_view rest = value;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view opt = util::Trim(rest.substr(0, comma));
        if (opt.size() == 5 && strncasecmp(opt.data(), "close", 5) == 0) conn_keep = false;
        if (opt.size() == 10 && strncasecmp(opt.data(), "keep-alive", 10) == 0 && !conn_keep.has_value())
          conn_keep = true;
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    } else if (name.size() == 17 && strncasecmp(name.data(), "Transfer-Encoding", 17) == 0) {
      p.has_body = true;
    } else if (name.size() == 14 && strncasecmp(name.data(), "Content-Length", 14) == 0) {
      // RFC 9112 section 6.3: an invalid Content-Length (not 1*DIGIT, a sign, too large for any
      // body, differing values in a list or in repeated fields) is unrecoverable framing: 400.
      // A list of identical values ("5, 5") is the same length, as the RFC allows.
      std::string_view rest = value;
      do {
        const auto comma = rest.find(',');
        const std::string_view elem = util::Trim(rest.substr(0, comma));
        std::uint64_t n = 0;
        bool valid = !elem.empty();
        for (char c : elem) {
          if (c < '0' || c > '9' || n > (UINT64_MAX - 9) / 10) {
            valid = false;
            break;
          }
          n = n * 10 + static_cast<std::uint64_t>(c - '0');
        }
        if (!valid || (content_length && *content_length != n)) {
          p.error = 400;
          return p;
        }
        content_length = n;
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        if (comma != std::string_view::npos && rest.empty()) rest = " ";  // "5," has an empty element
      } while (!rest.empty());
      if (*content_length != 0) p.has_body = true;
    }
  }
  p.keep_alive = conn_keep.value_or(p.http11);
  return p;
}

}  // namespace diskprobe::http
