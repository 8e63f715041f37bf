#pragma once
// Runs one collector as a scrape does (scrape/collector.h): its families as exposition text and
// the result, for comparing with golden files.
#include <cstdlib>
#include <optional>
#include <string>

#include "scrape/collector.h"

namespace diskprobe::testing {

struct Collected {
  std::string text;
  collectors::CollectResult result;
  bool ok() const { return result.ok(); }
};

inline Collected Collect(collectors::Collector& c, const collectors::ScrapeContext& ctx) {
  Collected out;
  FamilySink sink(&out.text);
  out.result = c.Collect(ctx, sink);
  return out;
}

// Value of the sample whose line is "<series> <value>", series being "name" or "name{labels}"
// exactly as written; nullopt when there is no such line.
inline std::optional<double> SampleValue(const std::string& text, const std::string& series) {
  const std::string key = series + " ";
  for (std::size_t pos = 0; (pos = text.find(key, pos)) != std::string::npos; pos += key.size())
    if (pos == 0 || text[pos - 1] == '\n') return std::strtod(text.c_str() + pos + key.size(), nullptr);
  return std::nullopt;
}

// Value of label `label` in the first sample of family `name`; nullopt without such a sample.
inline std::optional<std::string> FirstLabel(const std::string& text, const std::string& name,
                                             const std::string& label) {
  const std::string key = name + "{";
  for (std::size_t pos = 0; (pos = text.find(key, pos)) != std::string::npos; pos += key.size()) {
    if (pos != 0 && text[pos - 1] != '\n') continue;
    const std::size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    std::size_t at = line.find("," + label + "=\"");
    if (at == std::string::npos) at = line.find("{" + label + "=\"");
    if (at == std::string::npos) return std::nullopt;
    const std::size_t start = at + 1 + label.size() + 2;  // past [,{] label ="
    return line.substr(start, line.find('"', start) - start);
  }
  return std::nullopt;
}

}  // namespace diskprobe::testing
