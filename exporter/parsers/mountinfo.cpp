#include "parsers/mountinfo.h"

#include <tuple>

#include "util/strings.h"

namespace diskprobe::parsers {
namespace {

// Next space-separated field; mountinfo fields are separated by exactly one space, but empty
// fields are not produced by the kernel, so runs of spaces are skipped.
std::optional<std::string_view> NextField(std::string_view& s) {
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  std::size_t end = s.find(' ');
  std::string_view field = s.substr(0, end);
  s.remove_prefix(end == std::string_view::npos ? s.size() : end);
  return field;
}

bool IsOctal(char c) { return c >= '0' && c <= '7'; }

}  // namespace

std::string DecodeMountinfoEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && IsOctal(text[i + 1]) && IsOctal(text[i + 2]) &&
        IsOctal(text[i + 3])) {
      int value = (text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0');
      if (value <= 0xff) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::optional<MountInfo> ParseMountinfoLine(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  MountInfo m;
  auto id = NextField(line);
  auto parent = NextField(line);
  auto devno = NextField(line);
  auto root = NextField(line);
  auto mount_point = NextField(line);
  auto options = NextField(line);
  if (!id || !parent || !devno || !root || !mount_point || !options) return std::nullopt;
  auto mount_id = util::ParseNumber<std::uint64_t>(*id);
  auto parent_id = util::ParseNumber<std::uint64_t>(*parent);
  auto number = util::ParseDevNumber(*devno);
  if (!mount_id || !parent_id || !number) return std::nullopt;
  m.mount_id = *mount_id;
  m.parent_id = *parent_id;
  std::tie(m.major, m.minor) = *number;
  m.root = DecodeMountinfoEscapes(*root);
  m.mount_point = DecodeMountinfoEscapes(*mount_point);
  m.mount_options = std::string(*options);
  for (;;) {
    auto field = NextField(line);
    if (!field) return std::nullopt;  // no "-" separator
    if (*field == "-") break;
    m.optional_fields.emplace_back(*field);
  }
  auto fstype = NextField(line);
  auto source = NextField(line);
  auto super_options = NextField(line);
  if (!fstype || !source || !super_options) return std::nullopt;
  m.fstype = DecodeMountinfoEscapes(*fstype);
  m.source = DecodeMountinfoEscapes(*source);
  m.super_options = std::string(*super_options);
  return m;
}

std::vector<MountInfo> ParseMountinfo(std::string_view text, std::size_t* bad_lines) {
  std::vector<MountInfo> mounts;
  std::size_t bad = 0;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty()) continue;
    if (auto m = ParseMountinfoLine(line)) mounts.push_back(std::move(*m));
    else ++bad;
  }
  if (bad_lines) *bad_lines = bad;
  return mounts;
}

bool HasMountOption(std::string_view options, std::string_view name) {
  while (true) {
    std::size_t comma = options.find(',');
    if (options.substr(0, comma) == name) return true;
    if (comma == std::string_view::npos) return false;
    options.remove_prefix(comma + 1);
  }
}

bool IsReadOnly(std::string_view mount_options, std::string_view super_options) {
  return HasMountOption(mount_options, "ro") || HasMountOption(super_options, "ro") ||
         HasMountOption(super_options, "emergency_ro");
}

}  // namespace diskprobe::parsers
