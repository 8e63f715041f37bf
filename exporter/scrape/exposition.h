#pragma once
// Prometheus text exposition format 0.0.4 writer.
//
// Source of truth: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format).
// Why not prometheus::TextSerializer: it formats through std::ostream and printf("%.*g"), which
// was half of a scrape's CPU (tests/bench/scrape_cost), and it does not escape HELP text
// (prometheus-cpp 1.0.1). This writer appends to one string, formats numbers with
// std::to_chars (shortest text that reads back to the same double; integers below 2^53 as
// integers), and escapes HELP (\\ and \n) and label values (\\, \" and \n) as the format requires.
#include <prometheus/metric_type.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace diskprobe {

// A label as a pair of views, for writing samples without building label vectors.
struct LabelView {
  std::string_view name, value;
};

// Writes metric families as exposition text, appended to one string: the only way collectors
// and the scraper produce output, so a page is written once, in order, without building an
// intermediate tree. A family's HELP/TYPE lines are written at its first sample, so a family
// without samples leaves no lone header lines (its absence is the "absent, not 0" rule).
// Label names and metric names are not checked (they are literals in the collectors); label
// values are escaped and made valid UTF-8; HELP is escaped.
class FamilySink {
 public:
  explicit FamilySink(std::string* out) : out_(out) {}

  // Starts a family of counters, gauges or histograms. name and help must stay valid until the
  // next Family or Text call.
  void Family(std::string_view name, std::string_view help, prometheus::MetricType type);
  // One counter, gauge or untyped sample of the current family: name{labels} value.
  void Sample(std::initializer_list<LabelView> labels, double value);
  // The same with labels built at run time.
  void Sample(std::span<const LabelView> labels, double value);
  // One histogram of the current family: a _bucket line per upper bound in `le` (ascending,
  // seconds or whatever the family's unit is) with the cumulative count of the same index
  // (`cumulative` has le.size() entries), then le="+Inf" with `count` unless the last bound is
  // +Inf already, then _sum and _count. `count` may exceed the last cumulative count: operations
  // beyond the last finite bound are only in +Inf.
  void Histogram(std::initializer_list<LabelView> labels, std::span<const double> le,
                 std::span<const std::uint64_t> cumulative, double sum, std::uint64_t count);
  // Appends exposition text written by another FamilySink (a collector's cache of families that
  // did not change since the last scrape). Ends the current family.
  void Text(std::string_view exposition);

 private:
  void Header();

  std::string* out_;
  std::string_view name_, help_;
  prometheus::MetricType type_ = prometheus::MetricType::Untyped;
  bool header_written_ = true;  // no family started yet
};

// Appends a sample value as the text format writes it: "+Inf", "-Inf", "NaN", an integer, or
// the shortest round-trip decimal/exponent form.
void AppendValue(double v, std::string* out);

}  // namespace diskprobe
