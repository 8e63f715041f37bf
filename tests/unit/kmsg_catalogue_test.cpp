// The classifier against the kernel-message catalogue (tests/fixtures/kernel-messages/*.tsv, made by
// scripts/kernel-catalogue.py from kernel source trees): a line is synthesised from every
// catalogued format, with the prefix the kernel prints before it and a plausible value for each
// conversion, and must classify as the row says - its kind and the device, host or controller it
// names - while every `benign` row must count nothing. Coverage is printed per series, kind and area.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "parsers/kmsg.h"

#ifndef DISKPROBE_FIXTURES_DIR
#error "DISKPROBE_FIXTURES_DIR must name tests/fixtures"
#endif

namespace diskprobe::parsers {
namespace {

struct Row {
  std::string file_line;  // for failure messages: catalogue file and line
  std::string series, area, source, function, call, prefix, format, suffix, kind, expect;
  std::vector<std::string> values;
};

// The script's escapes: \\ \t \n.
std::string Unescape(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      char c = s[++i];
      out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::vector<Row> LoadCatalogue() {
  std::vector<Row> rows;
  const std::filesystem::path dir = std::filesystem::path(DISKPROBE_FIXTURES_DIR) / "kernel-messages";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".tsv") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    std::string line;
    std::vector<std::string> header;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> f = Split(line, '\t');
      if (header.empty()) {
        header = f;
        continue;
      }
      EXPECT_EQ(f.size(), header.size()) << path << ":" << n;
      if (f.size() != header.size()) continue;
      std::map<std::string, std::string> col;
      for (std::size_t i = 0; i < f.size(); ++i) col[header[i]] = f[i];
      Row r;
      r.file_line = path.filename().string() + ":" + std::to_string(n);
      r.series = col["series"];
      r.area = col["area"];
      r.source = col["file"];
      r.function = col["function"];
      r.call = col["call"];
      r.prefix = Unescape(col["prefix"]);
      r.format = Unescape(col["format"]);
      r.suffix = Unescape(col["suffix"]);
      r.kind = col["kind"];
      r.expect = col["expect"];
      // "<empty>": an argument that prints nothing (a KERN_ level passed to %s).
      for (const std::string& v : Split(col["values"], '|')) r.values.push_back(v == "<empty>" ? "\x01" : Unescape(v));
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

bool EndsWithWord(const std::string& text, const std::vector<std::string>& words) {
  std::string lower;
  for (char c : text) lower.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  for (const std::string& w : words)
    if (lower.size() >= w.size() && lower.compare(lower.size() - w.size(), w.size(), w) == 0) return true;
  return false;
}

// A plausible value for one printf conversion. An int right after "error"/"err" is an errno
// (-110, ETIMEDOUT: the catalogue maps mmc errno rows on that value), other numbers small ones.
std::string DefaultValue(char conv, const std::string& ext, bool alt, const std::string& before) {
  switch (conv) {
    case 'd':
    case 'i':
      return EndsWithWord(before, {"error ", "err ", "err=", "error=", "err:", "errno=", "error: ", "error -"}) ? "-110"
                                                                                                                : "7";
    case 'u':
    case 'o': return "7";
    case 'x':
    case 'X': return alt ? "0x1f" : "1f";
    case 'c': return "c";
    case 's': return "foo";
    case 'f':
    case 'e':
    case 'E':
    case 'g':
    case 'G': return "1.5";
    case 'n': return "";
    case 'p':
      if (ext == "V") return "msg";
      if (ext == "g") return "sda1";
      return "00000000deadbeef";
  }
  return "?";
}

// The format with its conversions filled in: values[i] for the i-th conversion that takes no '*'
// argument (as the script counts them), the default where the value is empty.
std::string Synthesise(const Row& r) {
  const std::string& f = r.format;
  std::string out = r.prefix;
  std::size_t value_index = 0;
  for (std::size_t i = 0; i < f.size(); ++i) {
    if (f[i] != '%') {
      out.push_back(f[i]);
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '%') {
      out.push_back('%');
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    bool alt = false, zero = false, star = false;
    while (j < f.size() && std::string_view("-+ #0").find(f[j]) != std::string_view::npos) {
      alt |= f[j] == '#';
      zero |= f[j] == '0';
      ++j;
    }
    std::size_t width = 0;
    if (j < f.size() && f[j] == '*') {
      star = true;
      ++j;
    }
    while (j < f.size() && f[j] >= '0' && f[j] <= '9') width = width * 10 + (f[j++] - '0');
    if (j < f.size() && f[j] == '.') {
      ++j;
      if (j < f.size() && f[j] == '*') {
        star = true;
        ++j;
      }
      while (j < f.size() && f[j] >= '0' && f[j] <= '9') ++j;
    }
    while (j < f.size() && std::string_view("hlLzjt").find(f[j]) != std::string_view::npos) ++j;
    if (j >= f.size()) {
      out.append(f, i, std::string::npos);
      break;
    }
    char conv = f[j];
    std::string ext;
    if (conv == 'p') {
      std::size_t k = j + 1;
      while (k < f.size() && ((f[k] >= 'A' && f[k] <= 'Z') || (f[k] >= 'a' && f[k] <= 'z'))) ext.push_back(f[k++]);
      j = k - 1;
    }
    std::string value;
    if (!star && value_index < r.values.size() && !r.values[value_index].empty()) value = r.values[value_index];
    if (!star) ++value_index;
    if (value.empty()) value = DefaultValue(conv, ext, alt, out);
    if (value == "\x01") value.clear();
    if (value.size() < width) value.insert(0, width - value.size(), zero ? '0' : ' ');
    out += value;
    i = j;
  }
  return out + r.suffix;
}

std::string Attribution(const KmsgEvent& e) {
  if (!e.device.empty()) return "device=" + e.device;
  if (!e.host.empty()) return "host=" + e.host;
  if (!e.controller.empty()) return "controller=" + e.controller;
  return "";
}

// What the row says the line must give, and what it gave; "" when they agree.
std::string Check(const Row& r, const std::string& line) {
  std::optional<KmsgEvent> e = ClassifyKmsg(line);
  std::string got = !e ? "none"
                    : e->suppressed ? "suppressed"
                                    : std::string(ToString(e->kind)) + (Attribution(*e).empty() ? "" : " " + Attribution(*e));
  std::string want = r.kind == "benign" || r.kind == "suppressed" ? (r.kind == "benign" ? "none" : "suppressed")
                                                                 : r.kind + (r.expect.empty() ? "" : " " + r.expect);
  if (r.kind == "benign" && e && e->suppressed) got = "suppressed";  // a benign row must count nothing at all
  return got == want ? "" : "want " + want + ", got " + got;
}

TEST(KmsgCatalogue, EveryFormatClassifiesAsCatalogued) {
  const std::vector<Row> rows = LoadCatalogue();
  ASSERT_GT(rows.size(), 1000u) << "the catalogue is missing";
  std::map<std::string, std::pair<int, int>> per_series, per_kind, per_area;  // rows, passed
  int passed = 0, benign = 0, failures = 0;
  for (const Row& r : rows) {
    const std::string line = Synthesise(r);
    const std::string problem = Check(r, line);
    const bool ok = problem.empty();
    passed += ok;
    benign += r.kind == "benign";
    for (auto* m : {&per_series, &per_kind, &per_area}) {
      const std::string& key = m == &per_series ? r.series : m == &per_kind ? r.kind : r.area;
      (*m)[key].first += 1;
      (*m)[key].second += ok;
    }
    if (!ok && ++failures <= 60)
      ADD_FAILURE() << r.file_line << " " << r.source << " " << r.function << " " << r.call << ": \"" << line
                    << "\": " << problem;
  }
  std::ostringstream report;
  report << "kernel-message catalogue: " << rows.size() << " rows, " << passed << " pass, " << benign
         << " benign (must count nothing)\n";
  for (const auto& [title, m] : {std::pair{"series", &per_series}, {"kind", &per_kind}, {"area", &per_area}}) {
    report << "  per " << title << ":";
    for (const auto& [k, v] : *m) report << " " << k << " " << v.second << "/" << v.first;
    report << "\n";
  }
  std::cout << report.str();
  EXPECT_EQ(failures, 0);
}

// The synthesiser must be able to tell a wrong classification: a line from a counted row whose
// text is changed no longer classifies as the row says.
TEST(KmsgCatalogue, CheckCatchesAWrongKind) {
  Row r;
  r.prefix = "";
  r.format = "%s: %s transfer error - HSTS %x";
  r.values = {"mmc0", "read", ""};
  r.kind = "crc_error";
  r.expect = "host=mmc0";
  EXPECT_EQ(Synthesise(r), "mmc0: read transfer error - HSTS 1f");
  EXPECT_EQ(Check(r, Synthesise(r)), "");
  r.kind = "timeout";
  EXPECT_NE(Check(r, Synthesise(r)), "");
  r.kind = "benign";
  EXPECT_NE(Check(r, Synthesise(r)), "");
}

}  // namespace
}  // namespace diskprobe::parsers
