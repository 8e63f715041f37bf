#pragma once
// Prometheus text exposition format 0.0.4 writer for prometheus-cpp's MetricFamily.
//
// Source of truth: https://prometheus.io/docs/instrumenting/exposition_formats/ (text format).
// Why not prometheus::TextSerializer: it formats through std::ostream and printf("%.*g"), which
// was half of a scrape's CPU (tests/bench/scrape_cost), and it does not escape HELP text
// (prometheus-cpp 1.0.1). This writer appends to one string, formats numbers with
// std::to_chars (shortest text that reads back to the same double; integers below 2^53 as
// integers), and escapes HELP (\\ and \n) and label values (\\, \" and \n) as the format requires.
#include <prometheus/metric_family.h>

#include <deque>
#include <initializer_list>
#include <string>
#include <string_view>

namespace diskprobe {

// A deque, not a vector: collectors hold references to several families while appending more,
// and a deque's push_back never moves existing elements.
using FamilyList = std::deque<prometheus::MetricFamily>;

// Appends the exposition of `families` to *out, in order. Families without samples are skipped
// (no lone HELP/TYPE lines). Counter, gauge, untyped and histogram are supported; a histogram
// whose last bucket is not +Inf gets one with the sample count.
void WriteExposition(const FamilyList& families, std::string* out);

// A label as a pair of views, for writing samples without building prometheus::ClientMetric.
struct LabelView {
  std::string_view name, value;
};

// Appends the two header lines of a family: "# HELP name help" (help escaped) and
// "# TYPE name type". WriteExposition writes its families with this and AppendSample, so text
// written with them directly is the same as that of the equivalent family.
void AppendFamilyHeader(std::string_view name, std::string_view help, prometheus::MetricType type, std::string* out);

// Appends one sample line "name{l1="v1",...} value" (label values escaped and made valid UTF-8).
void AppendSample(std::string_view name, std::initializer_list<LabelView> labels, double value, std::string* out);

// Appends a sample value as the text format writes it: "+Inf", "-Inf", "NaN", an integer, or
// the shortest round-trip decimal/exponent form.
void AppendValue(double v, std::string* out);

}  // namespace diskprobe
