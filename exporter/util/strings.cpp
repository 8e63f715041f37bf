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

}  // namespace diskprobe::util
