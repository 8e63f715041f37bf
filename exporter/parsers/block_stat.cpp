#include "parsers/block_stat.h"

#include <array>

#include "util/strings.h"

namespace diskprobe::parsers {
namespace {

constexpr std::size_t kMaxFields = 17;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Splits off the next whitespace-separated token; empty when none is left.
std::string_view NextToken(std::string_view& s) {
  std::size_t i = 0;
  while (i < s.size() && IsSpace(s[i])) ++i;
  std::size_t j = i;
  while (j < s.size() && !IsSpace(s[j])) ++j;
  std::string_view tok = s.substr(i, j - i);
  s.remove_prefix(j);
  return tok;
}

}  // namespace

std::optional<BlockStat> ParseBlockStat(std::string_view text) {
  std::array<std::uint64_t, kMaxFields> f{};
  int n = 0;
  for (std::string_view tok = NextToken(text); !tok.empty(); tok = NextToken(text)) {
    auto v = util::ParseNumber<std::uint64_t>(tok);
    if (!v) return std::nullopt;
    if (n < static_cast<int>(kMaxFields)) f[static_cast<std::size_t>(n)] = *v;
    ++n;
  }
  if (n < 11 || (n > 11 && n < 15) || n == 16) return std::nullopt;
  BlockStat s;
  s.field_count = n;
  s.read_ios = f[0];
  s.read_merges = f[1];
  s.read_sectors = f[2];
  s.read_ticks_ms = f[3];
  s.write_ios = f[4];
  s.write_merges = f[5];
  s.write_sectors = f[6];
  s.write_ticks_ms = f[7];
  s.in_flight = f[8];
  s.io_ticks_ms = f[9];
  s.time_in_queue_ms = f[10];
  if (n >= 15) {
    s.discard_ios = f[11];
    s.discard_merges = f[12];
    s.discard_sectors = f[13];
    s.discard_ticks_ms = f[14];
  }
  if (n >= 17) {
    s.flush_ios = f[15];
    s.flush_ticks_ms = f[16];
  }
  return s;
}

std::optional<DiskstatsLine> ParseDiskstatsLine(std::string_view line) {
  DiskstatsLine out;
  const auto major = util::ParseNumber<std::uint64_t>(NextToken(line));
  if (!major) return std::nullopt;
  const auto minor = util::ParseNumber<std::uint64_t>(NextToken(line));
  if (!minor) return std::nullopt;
  std::string_view name = NextToken(line);
  // A kernel name never is a bare number; a number here is /proc/partitions' #blocks column.
  if (name.empty() || util::ParseNumber<std::uint64_t>(name)) return std::nullopt;
  auto stat = ParseBlockStat(line);
  if (!stat || *major > 0xffffffffu || *minor > 0xffffffffu) return std::nullopt;
  out.major = static_cast<unsigned>(*major);
  out.minor = static_cast<unsigned>(*minor);
  out.name = std::string(name);
  out.stat = *stat;
  return out;
}

}  // namespace diskprobe::parsers
