#pragma once
// Structured logging: logfmt (default) or JSON, one line per event on stderr.
// Collectors log state changes (once), never once per scrape.
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace diskprobe::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kLogfmt, kJson };

// Parses "debug"|"info"|"warn"|"error" (and Prometheus' "warning"); nullopt-like false on others.
bool ParseLevel(std::string_view s, Level* out);
// Parses "logfmt"|"json".
bool ParseFormat(std::string_view s, Format* out);

// Process-wide settings; thread-safe to change at start-up before threads run.
void Configure(Level level, Format format);
bool Enabled(Level level);

using Field = std::pair<std::string_view, std::string>;

// Writes one line: ts=<RFC3339 UTC ms> level=<l> msg=<msg> key=value... (logfmt) or the same keys
// as a JSON object. Values are quoted/escaped as each format requires. Thread-safe (one write(2)).
void Write(Level level, std::string_view msg, std::initializer_list<Field> fields = {});

// Where lines go: stderr, or a sink given here that receives each rendered line instead (tests
// capture the log with it). An empty sink restores stderr. Thread-safe.
using Sink = std::function<void(Level level, std::string_view line)>;
void SetSink(Sink sink);

// Renders one line without writing it (for tests).
std::string Render(Format format, std::string_view ts, Level level, std::string_view msg,
                   std::initializer_list<Field> fields);

inline void Debug(std::string_view m, std::initializer_list<Field> f = {}) { Write(Level::kDebug, m, f); }
inline void Info(std::string_view m, std::initializer_list<Field> f = {}) { Write(Level::kInfo, m, f); }
inline void Warn(std::string_view m, std::initializer_list<Field> f = {}) { Write(Level::kWarn, m, f); }
inline void Error(std::string_view m, std::initializer_list<Field> f = {}) { Write(Level::kError, m, f); }

}  // namespace diskprobe::log
