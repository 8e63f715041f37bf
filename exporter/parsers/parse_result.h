// Shared result type for the pure parsers in exporter/parsers/.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace diskprobe::parsers {

// Either a value or a one-line reason why there is none. Parsers never throw
// for bad input; they return an empty value and set `error`.
template <typename T>
struct ParseResult {
  std::optional<T> value;
  std::string error;  // empty when value is set

  explicit operator bool() const { return value.has_value(); }
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }

  static ParseResult Ok(T v) { return ParseResult{std::move(v), {}}; }
  static ParseResult Fail(std::string why) { return ParseResult{std::nullopt, std::move(why)}; }
};

}  // namespace diskprobe::parsers
