#include "scrape/exposition.h"

#include <charconv>
#include <cmath>

namespace diskprobe {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricType;

void AppendHelp(std::string_view s, std::string* out) {
  // find() is memchr: two vectorised scans instead of a test per character (HELP texts are most
  // of the bytes written per scrape).
  if (s.find('\\') == std::string_view::npos && s.find('\n') == std::string_view::npos) {
    out->append(s);  // the common case: nothing to escape
    return;
  }
  for (char c : s) {
    if (c == '\\') *out += "\\\\";
    else if (c == '\n') *out += "\\n";
    else *out += c;
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one (RFC 3629: no overlongs,
// no surrogates, nothing above U+10FFFF).
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
  if (n == 0 || c > 0xf4 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xc0) != 0x80) return 0;
  if (n == 3 && ((c == 0xe0 && b(i + 1) < 0xa0) || (c == 0xed && b(i + 1) >= 0xa0))) return 0;
  if (n == 4 && ((c == 0xf0 && b(i + 1) < 0x90) || (c == 0xf4 && b(i + 1) >= 0x90))) return 0;
  return n;
}

// Label values must be UTF-8 (Prometheus rejects the whole scrape otherwise); strings read from
// devices (a card's product name) may not be, so invalid bytes become U+FFFD.
void AppendLabelValue(std::string_view s, std::string* out) {
  bool plain = true;
  for (char c : s) {
    if (c == '\\' || c == '"' || c == '\n' || static_cast<unsigned char>(c) >= 0x80) {
      plain = false;
      break;
    }
  }
  if (plain) {
    out->append(s);  // the common case: ASCII, nothing to escape
    return;
  }
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '\\') *out += "\\\\";
    else if (c == '"') *out += "\\\"";
    else if (c == '\n') *out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x80) *out += c;
    else {
      std::size_t n = Utf8Length(s, i);
      if (n == 0) {
        *out += "\xef\xbf\xbd";
        ++i;
      } else {
        out->append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    ++i;
  }
}

std::string_view LabelName(const ClientMetric::Label& l) { return l.name; }
std::string_view LabelValue(const ClientMetric::Label& l) { return l.value; }
std::string_view LabelName(const LabelView& l) { return l.name; }
std::string_view LabelValue(const LabelView& l) { return l.value; }

// name{l1="v1",...[,extra_name="extra_value"]} value\n
template <typename LabelRange>
void AppendSampleLine(std::string_view name, std::string_view suffix, const LabelRange& labels, const char* extra_name,
                      double extra_value, double value, std::string* out) {
  out->append(name);
  out->append(suffix);
  if (labels.size() != 0 || extra_name != nullptr) {
    *out += '{';
    bool first = true;
    for (const auto& l : labels) {
      if (!first) *out += ',';
      first = false;
      out->append(LabelName(l));
      out->append("=\"", 2);
      AppendLabelValue(LabelValue(l), out);
      *out += '"';
    }
    if (extra_name != nullptr) {
      if (!first) *out += ',';
      out->append(extra_name);
      out->append("=\"", 2);
      AppendValue(extra_value, out);
      *out += '"';
    }
    *out += '}';
  }
  *out += ' ';
  AppendValue(value, out);
  *out += '\n';
}

void AppendMetricSample(std::string_view name, std::string_view suffix, const std::vector<ClientMetric::Label>& labels,
                        const char* extra_name, double extra_value, double value, std::string* out) {
  AppendSampleLine(name, suffix, labels, extra_name, extra_value, value, out);
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    default: return "untyped";
  }
}

}  // namespace

void AppendValue(double v, std::string* out) {
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[32];
  std::to_chars_result r;
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) {  // 2^53: every integer exact
    r = std::to_chars(buf, buf + sizeof buf, static_cast<long long>(v));
  } else {
    r = std::to_chars(buf, buf + sizeof buf, v);
  }
  out->append(buf, r.ptr);
}

void AppendFamilyHeader(std::string_view name, std::string_view help, MetricType type, std::string* out) {
  out->append("# HELP ", 7);
  out->append(name);
  *out += ' ';
  AppendHelp(help, out);
  out->append("\n# TYPE ", 8);
  out->append(name);
  *out += ' ';
  out->append(TypeName(type));
  *out += '\n';
}

void AppendSample(std::string_view name, std::initializer_list<LabelView> labels, double value, std::string* out) {
  AppendSampleLine(name, "", labels, nullptr, 0, value, out);
}

void WriteExposition(const FamilyList& families, std::string* out) {
  for (const auto& f : families) {
    if (f.metric.empty()) continue;
    AppendFamilyHeader(f.name, f.help, f.type, out);
    for (const auto& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter: AppendMetricSample(f.name, "", m.label, nullptr, 0, m.counter.value, out); break;
        case MetricType::Gauge: AppendMetricSample(f.name, "", m.label, nullptr, 0, m.gauge.value, out); break;
        case MetricType::Histogram: {
          const auto& h = m.histogram;
          bool has_inf = false;
          for (const auto& b : h.bucket) {
            has_inf = has_inf || std::isinf(b.upper_bound);
            AppendMetricSample(f.name, "_bucket", m.label, "le", b.upper_bound, static_cast<double>(b.cumulative_count), out);
          }
          if (!has_inf)
            AppendMetricSample(f.name, "_bucket", m.label, "le", INFINITY, static_cast<double>(h.sample_count), out);
          AppendMetricSample(f.name, "_sum", m.label, nullptr, 0, h.sample_sum, out);
          AppendMetricSample(f.name, "_count", m.label, nullptr, 0, static_cast<double>(h.sample_count), out);
          break;
        }
        case MetricType::Summary: {
          const auto& s = m.summary;
          for (const auto& q : s.quantile) AppendMetricSample(f.name, "", m.label, "quantile", q.quantile, q.value, out);
          AppendMetricSample(f.name, "_sum", m.label, nullptr, 0, s.sample_sum, out);
          AppendMetricSample(f.name, "_count", m.label, nullptr, 0, static_cast<double>(s.sample_count), out);
          break;
        }
        default: AppendMetricSample(f.name, "", m.label, nullptr, 0, m.untyped.value, out); break;
      }
    }
  }
}

}  // namespace diskprobe
