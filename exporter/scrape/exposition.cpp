#include "scrape/exposition.h"

#include <charconv>
#include <cmath>

namespace diskprobe {
namespace {

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

// name{l1="v1",...[,extra_name="extra_value"]} value\n
void AppendSampleLine(std::string_view name, std::string_view suffix, std::span<const LabelView> labels,
                      const char* extra_name, double extra_value, double value, std::string* out) {
  out->append(name);
  out->append(suffix);
  if (!labels.empty() || extra_name != nullptr) {
    *out += '{';
    bool first = true;
    for (const auto& l : labels) {
      if (!first) *out += ',';
      first = false;
      out->append(l.name);
      out->append("=\"", 2);
      AppendLabelValue(l.value, out);
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

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::Counter: return "counter";
    case MetricType::Gauge: return "gauge";
    case MetricType::Histogram: return "histogram";
    case MetricType::Summary: return "summary";
    case MetricType::Untyped: return "untyped";
  }
  return "untyped";
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

void FamilySink::Family(std::string_view name, std::string_view help, MetricType type) {
  name_ = name;
  help_ = help;
  type_ = type;
  header_written_ = false;
}

void FamilySink::Header() {
  if (header_written_) return;
  out_->append("# HELP ", 7);
  out_->append(name_);
  *out_ += ' ';
  AppendHelp(help_, out_);
  out_->append("\n# TYPE ", 8);
  out_->append(name_);
  *out_ += ' ';
  out_->append(TypeName(type_));
  *out_ += '\n';
  header_written_ = true;
}

void FamilySink::Sample(std::initializer_list<LabelView> labels, double value) {
  Sample(std::span<const LabelView>(labels.begin(), labels.size()), value);
}

void FamilySink::Sample(std::span<const LabelView> labels, double value) {
  Header();
  AppendSampleLine(name_, "", labels, nullptr, 0, value, out_);
}

void FamilySink::Histogram(std::initializer_list<LabelView> labels, std::span<const double> le,
                           std::span<const std::uint64_t> cumulative, double sum, std::uint64_t count) {
  Header();
  const std::span<const LabelView> l(labels.begin(), labels.size());
  bool has_inf = false;
  for (std::size_t i = 0; i < le.size(); ++i) {
    has_inf = has_inf || std::isinf(le[i]);
    const double n = i < cumulative.size() ? static_cast<double>(cumulative[i]) : static_cast<double>(count);
    AppendSampleLine(name_, "_bucket", l, "le", le[i], n, out_);
  }
  if (!has_inf) AppendSampleLine(name_, "_bucket", l, "le", INFINITY, static_cast<double>(count), out_);
  AppendSampleLine(name_, "_sum", l, nullptr, 0, sum, out_);
  AppendSampleLine(name_, "_count", l, nullptr, 0, static_cast<double>(count), out_);
}

void FamilySink::Text(std::string_view exposition) {
  header_written_ = true;  // the current family ends here, written or not
  out_->append(exposition);
}

}  // namespace diskprobe
