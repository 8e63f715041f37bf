#include "util/strings.h"

namespace diskprobe::util {

std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\n\r\v\f";
  auto b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(kSpace);
  return s.substr(b, e - b + 1);
}

std::optional<unsigned long long> ParseU64(std::string_view s) { return ParseNumber<unsigned long long>(Trim(s)); }

std::optional<std::pair<unsigned, unsigned>> ParseDevNumber(std::string_view s) {
  s = Trim(s);
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto major = ParseNumber<unsigned>(s.substr(0, colon));
  auto minor = ParseNumber<unsigned>(s.substr(colon + 1));
  if (!major || !minor) return std::nullopt;
  return std::make_pair(*major, *minor);
}

}  // namespace diskprobe::util
