#include "util/log.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>

namespace diskprobe::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kLogfmt)};
// A sink is rare (tests): the flag keeps the mutex off the normal path.
std::atomic<bool> g_has_sink{false};
std::mutex g_sink_mu;
Sink g_sink;

const char* LevelName(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

// logfmt: bare when the value has no space, quote, '=' or control character; else a quoted string
// with \" \\ \n \t escapes (the go-logfmt rules node_exporter's logs follow).
void AppendLogfmtValue(std::string& out, std::string_view v) {
  bool bare = !v.empty();
  for (unsigned char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out += v;
    return;
  }
  out += '"';
  for (unsigned char c : v) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* kHex = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string Now() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace

bool ParseLevel(std::string_view s, Level* out) {
  if (s == "debug") *out = Level::kDebug;
  else if (s == "info") *out = Level::kInfo;
  else if (s == "warn" || s == "warning") *out = Level::kWarn;
  else if (s == "error") *out = Level::kError;
  else return false;
  return true;
}

bool ParseFormat(std::string_view s, Format* out) {
  if (s == "logfmt") *out = Format::kLogfmt;
  else if (s == "json") *out = Format::kJson;
  else return false;
  return true;
}

void Configure(Level level, Format format) {
  g_level.store(static_cast<int>(level));
  g_format.store(static_cast<int>(format));
}

bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

std::string Render(Format format, std::string_view ts, Level level, std::string_view msg,
                   std::initializer_list<Field> fields) {
  if (format == Format::kJson) {
    // nlohmann::ordered_json keeps ts, level, msg first, like the logfmt line.
    nlohmann::ordered_json j;
    j["ts"] = ts;
    j["level"] = LevelName(level);
    j["msg"] = msg;
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string out;
  out.reserve(64 + msg.size());
  out += "ts=";
  out += ts;
  out += " level=";
  out += LevelName(level);
  out += " msg=";
  AppendLogfmtValue(out, msg);
  for (const auto& [k, v] : fields) {
    out += ' ';
    out += k;
    out += '=';
    AppendLogfmtValue(out, v);
  }
  out += '\n';
  return out;
}

void SetSink(Sink sink) {
  std::lock_guard<std::mutex> lock(g_sink_mu);
  g_sink = std::move(sink);
  g_has_sink.store(static_cast<bool>(g_sink), std::memory_order_release);
}

void Write(Level level, std::string_view msg, std::initializer_list<Field> fields) {
  if (!Enabled(level)) return;
  std::string line = Render(static_cast<Format>(g_format.load()), Now(), level, msg, fields);
  if (g_has_sink.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(g_sink_mu);
    if (g_sink) {
      g_sink(level, line);
      return;
    }
  }
  // One write(2) per line so concurrent threads never interleave within a line.
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace diskprobe::log
