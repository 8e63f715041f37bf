#pragma once
// String helpers shared by every module, the pure parsers included: no I/O, no allocation, no
// locale (the C++ <charconv> functions and fixed ASCII sets, so results do not depend on the
// process's locale). Nothing here throws.
#include <charconv>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

namespace diskprobe::util {

// Little-endian 64-bit field at p (8 bytes), the byte order of the probe file's and the capacity
// check's on-disk blocks whatever the CPU's.
inline void PutU64(unsigned char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline std::uint64_t GetU64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}

// Returns `s` without leading and trailing ASCII whitespace (space, \t, \n, \r, \v, \f): the set
// std::isspace has in the "C" locale.
std::string_view Trim(std::string_view s);

// Parses a number that makes up ALL of `s`, with std::from_chars: no surrounding whitespace (call
// Trim first where the input may have it), no '+', no "0x" prefix (see ParseHex); a '-' only for
// signed T. Integers are read in `base` (2 to 36; digits above 9 in either case). Floating-point
// T ignores `base` and reads the decimal or exponent form ("3.30", "1e3", also "inf"/"nan").
// Returns nullopt on empty input, a character that is not part of the number, or a value out of
// T's range.
template <typename T>
requires std::integral<T> || std::floating_point<T> std::optional<T> ParseNumber(std::string_view s, int base = 10) {
  T value{};
  std::from_chars_result r;
  if constexpr (std::integral<T>) {
    r = std::from_chars(s.data(), s.data() + s.size(), value, base);
  } else {
    (void)base;
    r = std::from_chars(s.data(), s.data() + s.size(), value);
  }
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

// Parses a decimal unsigned 64-bit integer that makes up all of `s` after Trim (a sysfs attribute
// such as "7812500\n"). Returns nullopt on empty input, sign, garbage or overflow.
std::optional<unsigned long long> ParseU64(std::string_view s);

// A device number "major:minor" (sysfs `dev`, mountinfo field 3: "179:2", also "179:2\n") as
// (major, minor); nullopt when a part is missing, not decimal or above UINT_MAX.
std::optional<std::pair<unsigned, unsigned>> ParseDevNumber(std::string_view s);

// `s` without one leading "0x" or "0X", when at least one character follows it ("0x" alone is
// returned unchanged, and then fails to parse as hex).
constexpr std::string_view StripHexPrefix(std::string_view s) {
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  return s;
}

// Parses hexadecimal digits that make up all of `s`, with or without a "0x"/"0X" prefix
// ("50005", "0x50005"). No whitespace, no sign. nullopt as ParseNumber.
template <std::integral T>
std::optional<T> ParseHex(std::string_view s) {
  return ParseNumber<T>(StripHexPrefix(s), 16);
}

// Value of one hexadecimal digit ('0'-'9', 'a'-'f', 'A'-'F'), or -1 for any other character.
constexpr int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace diskprobe::util
