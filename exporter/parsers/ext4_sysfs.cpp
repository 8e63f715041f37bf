#include "parsers/ext4_sysfs.h"

#include "util/strings.h"

namespace diskprobe::parsers {
namespace {

// The attributes end in '\n' ("%u\n"); surrounding whitespace is allowed.
template <typename T>
std::optional<T> ParseNumber(std::string_view s) {
  return util::ParseNumber<T>(util::Trim(s));
}

// Value of `name` in `files`, nullopt when the file was not read.
std::optional<std::string_view> Find(const std::map<std::string, std::string, std::less<>>& files,
                                     std::string_view name) {
  auto it = files.find(name);
  if (it == files.end()) return std::nullopt;
  return std::string_view(it->second);
}

template <typename T>
std::optional<T> NonZero(std::optional<T> v) {
  if (v && *v == 0) return std::nullopt;
  return v;
}

Ext4ErrorRecord ParseRecord(const std::map<std::string, std::string, std::less<>>& files, std::string_view prefix) {
  auto attr = [&](std::string_view suffix) { return Find(files, std::string(prefix) + std::string(suffix)); };
  Ext4ErrorRecord r;
  if (auto v = attr("_time")) r.time = ParseExt4Time(*v);
  if (auto v = attr("_func")) r.function = ParseExt4String(*v);
  if (auto v = attr("_line")) r.line = NonZero(ParseNumber<std::uint32_t>(*v));
  if (auto v = attr("_ino")) r.inode = NonZero(ParseNumber<std::uint64_t>(*v));
  if (auto v = attr("_block")) r.block = NonZero(ParseNumber<std::uint64_t>(*v));
  if (auto v = attr("_errcode")) r.errcode = NonZero(ParseNumber<unsigned>(*v));
  return r;
}

}  // namespace

std::optional<std::uint64_t> ParseExt4Counter(std::string_view contents) {
  return ParseNumber<std::uint64_t>(contents);
}

std::optional<std::int64_t> ParseExt4Time(std::string_view contents) {
  return NonZero(ParseNumber<std::int64_t>(contents));
}

std::optional<std::string> ParseExt4String(std::string_view contents) {
  while (!contents.empty() && (contents.back() == '\n' || contents.back() == '\0')) contents.remove_suffix(1);
  if (contents.empty()) return std::nullopt;
  return std::string(contents);
}

std::string_view Ext4ErrcodeName(unsigned code) {
  static constexpr std::array<std::string_view, 18> kNames{
      "",      "UNKNOWN", "EIO",    "ENOMEM",    "EFSBADCRC", "EFSCORRUPTED", "ENOSPC",    "ENOKEY",    "EROFS",
      "EFBIG", "EEXIST",  "ERANGE", "EOVERFLOW", "EBUSY",     "ENOTDIR",      "ENOTEMPTY", "ESHUTDOWN", "EFAULT"};
  return code < kNames.size() ? kNames[code] : std::string_view();
}

Ext4Errors ParseExt4Errors(const std::map<std::string, std::string, std::less<>>& files) {
  Ext4Errors e;
  if (auto v = Find(files, "errors_count")) e.errors_count = ParseExt4Counter(*v);
  e.first = ParseRecord(files, "first_error");
  e.last = ParseRecord(files, "last_error");
  if (auto v = Find(files, "warning_count")) e.warning_count = ParseNumber<std::int64_t>(*v);
  if (auto v = Find(files, "msg_count")) e.msg_count = ParseNumber<std::int64_t>(*v);
  return e;
}

}  // namespace diskprobe::parsers
