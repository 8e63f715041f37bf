#include "config/yaml_reader.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <cstdio>
#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "util/strings.h"

namespace diskprobe::config {
namespace {

bool ToU64(std::string_view t, std::uint64_t* v) {
  auto n = util::ParseNumber<std::uint64_t>(t);
  if (n) *v = *n;
  return n.has_value();
}

bool MulOverflows(std::uint64_t a, std::uint64_t b) {
  return b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b;
}

const char* TypeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    default: return "nothing";
  }
}

// 1-based line and column of byte `pos` of `text`, as yaml-cpp would mark it.
std::pair<int, int> LineColumn(std::string_view text, std::size_t pos) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < pos && i < text.size(); ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return {line, static_cast<int>(pos - line_start) + 1};
}

// The offset of the '[' or '{' that opens flow nesting level `limit` + 1, or npos. This runs
// before yaml-cpp, whose scanner queues every token of an unclosed flow collection before the
// parser sees its first one, so a bound checked by the parser alone would come too late. Comments
// and quoted scalars are skipped; a bracket inside a plain or block scalar counts, which can only
// refuse a text with more than `limit` unclosed brackets in its values (names, sizes, patterns:
// never in a configuration).
std::size_t FlowTooDeep(std::string_view t, int limit) {
  auto starts_token = [&](std::size_t i) {
    if (i == 0) return true;
    char p = t[i - 1];
    return p == ' ' || p == '\t' || p == '\n' || p == '\r' || p == '[' || p == '{' || p == ',' || p == ':';
  };
  int depth = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '#' && starts_token(i)) {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (c == '\'' && starts_token(i)) {
      // '' is a quote inside a single-quoted scalar.
      for (++i; i < t.size(); ++i)
        if (t[i] == '\'') {
          if (i + 1 < t.size() && t[i + 1] == '\'') ++i;
          else break;
        }
    } else if (c == '"' && starts_token(i)) {
      for (++i; i < t.size() && t[i] != '"'; ++i)
        if (t[i] == '\\') ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

std::string DepthMessage() {
  return "lists and mappings nested more than " + std::to_string(kMaxDocumentDepth) + " deep";
}

// Thrown by Bounds to stop yaml-cpp's parser at the first bound exceeded.
struct Refusal {
  YAML::Mark mark;
  std::string message;
};

// Counts the events of one document against the kMaxDocument* bounds.
class Bounds : public YAML::EventHandler {
 public:
  YAML::Mark start;

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Node(mark);
    if (++aliases_ > kMaxDocumentAliases)
      throw Refusal{mark, "more than " + std::to_string(kMaxDocumentAliases) +
                              " aliases (*name); a configuration needs few, and each one repeats its anchor's tree "
                              "for whoever walks it"};
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override { Node(mark); }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Open(mark);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void Node(const YAML::Mark& mark) {
    if (++nodes_ > kMaxDocumentNodes)
      throw Refusal{mark, "more than " + std::to_string(kMaxDocumentNodes) +
                              " YAML nodes; a diskprobe_exporter configuration has a few hundred"};
  }
  void Open(const YAML::Mark& mark) {
    Node(mark);
    if (++depth_ > kMaxDocumentDepth) throw Refusal{mark, DepthMessage()};
  }

  int nodes_ = 0, aliases_ = 0, depth_ = 0;
};

// Stops the parser at the start of a second document, which is all there is to know about it.
class SecondDocument : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { throw Refusal{mark, ""}; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

Error At(const std::string& file, const YAML::Mark& m, std::string message) {
  return Error{file, m.line < 0 ? 0 : m.line + 1, m.column < 0 ? 0 : m.column + 1, "", std::move(message)};
}

// 'c' for a printable character, else its code, for "unexpected ..." messages.
std::string Quoted(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned char>(c));
  return buf;
}

}  // namespace

bool LoadDocument(std::string_view text, const std::string& file, YAML::Node* root, std::vector<Error>* errors) {
  *root = YAML::Node();
  if (text.size() > kMaxDocumentBytes) {
    errors->push_back(
        Error{file, 0, 0, "",
              "document is larger than " + std::to_string(kMaxDocumentBytes) + " bytes; a configuration is a few KiB"});
    return false;
  }
  if (std::size_t at = FlowTooDeep(text, kMaxDocumentDepth); at != std::string_view::npos) {
    auto [line, column] = LineColumn(text, at);
    errors->push_back(Error{file, line, column, "", DepthMessage()});
    return false;
  }
  const std::string copy(text);
  try {
    std::istringstream in(copy);
    YAML::Parser parser(in);
    Bounds bounds;
    if (!parser.HandleNextDocument(bounds)) return true;  // no document: comments or nothing
    // yaml-cpp ends a document at a token no node can start with (',' ']' '}' '?' at the top
    // level) without consuming it; its LoadAll then starts document after empty document at that
    // same token, forever. The next document starting exactly where the first one did is that
    // token.
    try {
      SecondDocument second;
      if (parser.HandleNextDocument(second)) {
        // A document was reported without OnDocumentStart: cannot happen, but never accept it.
        errors->push_back(At(file, bounds.start, "more than one YAML document; a configuration is a single document"));
        return false;
      }
    } catch (const Refusal& r) {
      const std::size_t pos = r.mark.pos < 0 ? 0 : static_cast<std::size_t>(r.mark.pos);
      const char c = pos < copy.size() ? copy[pos] : '\0';
      // A flow indicator cannot start a node, so it is no document of its own: it is the token
      // yaml-cpp could not place.
      if (r.mark.pos == bounds.start.pos || c == ',' || c == ']' || c == '}')
        errors->push_back(At(file, r.mark, "YAML syntax error: unexpected " + Quoted(c)));
      else if (std::string_view(copy).substr(std::min(pos, copy.size())).starts_with("---"))
        errors->push_back(At(file, r.mark, "more than one YAML document; a configuration is a single document"));
      else
        errors->push_back(At(file, r.mark,
                             "YAML syntax error: unexpected " + Quoted(c) +
                                 " after the end of the document; a configuration is a single document"));
      return false;
    }
    *root = YAML::Load(copy);
    return true;
  } catch (const Refusal& r) {
    errors->push_back(At(file, r.mark, r.message));
  } catch (const YAML::Exception& e) {
    // A tab in the indentation of the line yaml-cpp stopped on: its own message ("illegal map
    // value", "end of map not found") names neither the tab nor where it is.
    if (e.mark.line >= 0) {
      std::size_t start = 0;
      for (int l = 0; l < e.mark.line && start != std::string::npos; ++l) {
        start = copy.find('\n', start);
        if (start != std::string::npos) ++start;
      }
      for (std::size_t i = start; start != std::string::npos && i < copy.size() && (copy[i] == ' ' || copy[i] == '\t');
           ++i)
        if (copy[i] == '\t') {
          auto [line, column] = LineColumn(copy, i);
          errors->push_back(Error{file, line, column, "",
                                  "YAML syntax error: a tab in the indentation (YAML indents with spaces only; "
                                  "yaml-cpp: " +
                                      e.msg + ")"});
          return false;
        }
    }
    errors->push_back(At(file, e.mark, "YAML syntax error: " + e.msg));
  }
  return false;
}

std::string QuoteExcerpt(std::string_view s) {
  constexpr std::size_t kShown = 64;
  if (s.size() <= kShown) return "\"" + std::string(s) + "\"";
  return "\"" + std::string(s.substr(0, kShown)) + "...\" (" + std::to_string(s.size()) + " characters)";
}

std::string CompilePattern(const std::string& source, Pattern* out, std::size_t* budget) {
  if (source.size() > kMaxPatternLength)
    return "is " + std::to_string(source.size()) +
           " characters long; a pattern for device names (at most 31 "
           "characters) may have " +
           std::to_string(kMaxPatternLength);
  // One pass for the group depth and the expanded size: every atom (a character, an escape, a
  // class) counts once per copy its enclosing {n,m} repetitions make, since libstdc++ builds the
  // states of each copy ("((a{30}){30}){30}" is 15 characters and 27,000 states, 2 MB).
  constexpr std::uint64_t kCap = std::uint64_t{1} << 40;  // saturates: the bounds are far below
  std::vector<std::uint64_t> outer;                       // sizes of the enclosing groups so far
  std::uint64_t size = 0;                                 // of the current group so far
  std::uint64_t last = 0;                                 // of the atom or group just closed
  // Whether a quantifier here has something to repeat: not at the start, after '(' or '|', or
  // after an anchor. libstdc++ reports "*" or "(+a)" as "Mismatched '(' and ')'".
  bool can_repeat = false;
  auto nothing_to_repeat = [&](std::size_t i) {
    return "has a quantifier ('" + std::string(1, source[i]) + "') at character " + std::to_string(i + 1) +
           " with nothing before it to repeat";
  };
  for (std::size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if ((c == '*' || c == '+' || c == '?') && !can_repeat) {
      // "(?:", "(?=", "(?!": a group's kind, not a quantifier.
      if (!(c == '?' && i > 0 && source[i - 1] == '(')) return nothing_to_repeat(i);
      continue;
    }
    can_repeat = !(c == '(' || c == '|' || c == '^' || c == '$');
    if (c == '\\') {
      ++i;  // an escaped character is one atom, whatever it is
      last = 1;
      size += 1;
    } else if (c == '[') {
      // In ECMAScript "[]" is the empty class and "[^]" any character: ']' closes at once.
      if (i + 1 < source.size() && source[i + 1] == '^') ++i;
      for (++i; i < source.size() && source[i] != ']'; ++i)
        if (source[i] == '\\') ++i;
      last = 1;
      size += 1;
    } else if (c == '(') {
      if (outer.size() >= static_cast<std::size_t>(kMaxPatternGroupDepth))
        return "has groups nested more than " + std::to_string(kMaxPatternGroupDepth) + " deep";
      outer.push_back(size);
      size = 0;
      last = 0;
    } else if (c == ')' && !outer.empty()) {
      last = size;
      size = outer.back() + size;
      outer.pop_back();
    } else if (c == '{') {
      // {n}, {n,} or {n,m}: the atom before it n (or m) times, one more for {n,}'s loop.
      std::size_t j = i + 1;
      std::uint64_t n = 0, m = 0;
      bool digits = false, comma = false, m_digits = false;
      for (; j < source.size() && source[j] >= '0' && source[j] <= '9'; ++j, digits = true)
        n = std::min(kCap, n * 10 + static_cast<std::uint64_t>(source[j] - '0'));
      if (j < source.size() && source[j] == ',') {
        comma = true;
        for (++j; j < source.size() && source[j] >= '0' && source[j] <= '9'; ++j, m_digits = true)
          m = std::min(kCap, m * 10 + static_cast<std::uint64_t>(source[j] - '0'));
      }
      if (!digits || j >= source.size() || source[j] != '}') {
        last = 1;  // not a repetition: std::regex decides what it is
        size += 1;
        continue;
      }
      if (i == 0 || source[i - 1] == '(' || source[i - 1] == '|' || source[i - 1] == '^' || source[i - 1] == '$')
        return nothing_to_repeat(i);
      std::uint64_t copies = !comma ? n : m_digits ? std::max(n, m) : n + 1;
      copies = std::max<std::uint64_t>(copies, 1);
      const std::uint64_t grown = last >= kCap / copies ? kCap : last * copies;
      size = std::min(kCap, size + (grown - last));
      last = grown;
      i = j;
    } else if (c == '*' || c == '+' || c == '?' || c == '|' || c == '^' || c == '$' || c == ')') {
      // Quantifiers and anchors add a state or two, not copies; a stray ')' is std::regex's error.
    } else {
      last = 1;
      size += 1;
    }
  }
  for (; !outer.empty(); outer.pop_back()) size = std::min(kCap, size + outer.back());  // unclosed: regex_error below
  if (size > kMaxPatternLength)
    return "repeats to more than " + std::to_string(kMaxPatternLength) +
           " characters once its {n,m} repetitions are written out (std::regex builds each copy)";
  if (budget != nullptr) {
    if (size > *budget)
      return "the patterns of this file together repeat to more than " + std::to_string(kMaxPatternTotal) +
             " characters once their {n,m} repetitions are written out";
    *budget -= size;
  }
  try {
#if defined(__GLIBCXX__)
    out->re = std::regex(source, std::regex::ECMAScript | std::regex_constants::__polynomial);
#else
    out->re = std::regex(source, std::regex::ECMAScript);
#endif
  } catch (const std::regex_error& e) {
    if (e.code() == std::regex_constants::error_complexity)
      return "back-references (\\1 ...) are not supported: matching stays linear in the name without them";
    return e.what();
  }
  out->source = source;
  return "";
}

std::string Error::ToString() const {
  std::string s = file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
  if (!path.empty()) s += path + ": ";
  return s + message;
}

std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s) {
  struct Unit {
    std::string_view name;
    std::uint64_t ms;
  };
  // Order matters twice: the largest first (to enforce "largest first"), and "ms" before "m".
  static constexpr Unit kUnits[] = {{"w", 7 * 86400000ull}, {"d", 86400000ull}, {"h", 3600000ull},
                                    {"m", 60000ull},        {"s", 1000ull},     {"ms", 1ull}};
  if (s.empty()) return std::nullopt;
  std::uint64_t total = 0;
  int last_unit = -1;
  while (!s.empty()) {
    std::size_t digits = 0;
    while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
    std::uint64_t n;
    if (digits == 0 || !ToU64(s.substr(0, digits), &n)) return std::nullopt;
    s.remove_prefix(digits);
    int unit = -1;
    if (s.substr(0, 2) == "ms") unit = 5;
    else if (!s.empty()) {
      for (int i = 0; i < 5; ++i)
        if (s[0] == kUnits[i].name[0]) unit = i;
    }
    if (unit < 0 || unit <= last_unit) return std::nullopt;
    s.remove_prefix(kUnits[unit].name.size());
    last_unit = unit;
    if (MulOverflows(n, kUnits[unit].ms)) return std::nullopt;
    std::uint64_t add = n * kUnits[unit].ms;
    // In unsigned arithmetic throughout: total never exceeds kMaxMs, so kMaxMs - total cannot
    // wrap, where max() - add did for an add above it and let a negative duration through.
    constexpr auto kMaxMs = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (add > kMaxMs - total) return std::nullopt;
    total += add;
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(total));
}

std::optional<std::uint64_t> ParseSize(std::string_view s) {
  struct Unit {
    std::string_view name;
    std::uint64_t mult;
  };
  static constexpr Unit kUnits[] = {
      {"B", 1},        {"KiB", 1ull << 10}, {"MiB", 1ull << 20},   {"GiB", 1ull << 30},     {"TiB", 1ull << 40},
      {"kB", 1000ull}, {"MB", 1000000ull},  {"GB", 1000000000ull}, {"TB", 1000000000000ull}};
  std::size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  std::uint64_t n;
  if (digits == 0 || !ToU64(s.substr(0, digits), &n)) return std::nullopt;
  std::string_view unit = s.substr(digits);
  if (unit.empty()) return n;
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      if (MulOverflows(n, u.mult)) return std::nullopt;
      return n * u.mult;
    }
  }
  return std::nullopt;
}

bool Pattern::FullMatch(std::string_view s) const { return std::regex_match(s.begin(), s.end(), re); }

std::string YamlReader::Join(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string YamlReader::Where(const YAML::Node& at, const std::string& path) const {
  YAML::Mark m = at.Mark();
  return file_ + ":" + std::to_string(m.line < 0 ? 0 : m.line + 1) + ":" +
         std::to_string(m.column < 0 ? 0 : m.column + 1) + ": " + path;
}

void YamlReader::Fail(const YAML::Node& at, const std::string& path, std::string message) {
  Fail(at.Mark(), path, std::move(message));
}

void YamlReader::Fail(const YAML::Mark& m, const std::string& path, std::string message) {
  Error e;
  e.file = file_;
  e.line = m.line < 0 ? 0 : m.line + 1;
  e.column = m.column < 0 ? 0 : m.column + 1;
  e.path = path;
  e.message = std::move(message);
  errors_->push_back(std::move(e));
}

bool YamlReader::CheckMap(const YAML::Node& node, const std::string& path,
                          std::initializer_list<std::string_view> known) {
  return CheckMap(node, path, std::span<const std::string_view>(known.begin(), known.size()));
}

bool YamlReader::CheckMap(const YAML::Node& node, const std::string& path, std::span<const std::string_view> known) {
  if (!node.IsDefined() || node.IsNull()) return true;
  if (!node.IsMap()) {
    Fail(node, path, std::string("must be a mapping, got ") + TypeName(node));
    return false;
  }
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node k = it->first;  // by value: *it is a temporary pair
    if (!k.IsScalar()) {
      Fail(k, path, "keys must be plain strings");
      continue;
    }
    const std::string key = k.Scalar();
    // YAML 1.1 merge keys are not part of YAML 1.2, and yaml-cpp reads "<<" as an ordinary key:
    // say so rather than call it unknown. An anchor and alias for a whole value works.
    if (key == "<<") {
      Fail(k, Join(path, key),
           "YAML merge keys (<<: *anchor) are not supported: write the keys out, or alias a whole value "
           "(key: *anchor)");
      continue;
    }
    if (!seen.insert(key).second) {
      Fail(k, Join(path, key), "duplicate key");
      continue;
    }
    bool ok = false;
    for (auto kn : known) ok = ok || kn == key;
    if (!ok) {
      std::string list;
      for (auto kn : known) list += (list.empty() ? "" : ", ") + std::string(kn);
      Fail(k, Join(path, key), "unknown key (known keys: " + list + ")");
    }
  }
  return true;
}

YAML::Mark YamlReader::KeyMark(const YAML::Node& map, const char* key) {
  // (A YAML::Node is a handle: assigning one to another writes into the document, so the key's
  // position is taken as a mark, not as a node.)
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->first.Mark();
  return map.Mark();
}

YAML::Node YamlReader::Scalar(const YAML::Node& map, const std::string& path, const char* key, const char* what) {
  if (!map.IsDefined() || !map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node v = map[key];
  if (!v.IsDefined()) return v;
  if (!v.IsScalar()) {
    // A key with nothing after it ("interval:" then a new line): yaml-cpp marks the null value
    // where the next token starts, a line below; the error points at the key instead.
    Fail(v.IsNull() ? KeyMark(map, key) : v.Mark(), Join(path, key),
         std::string("must be ") + what + ", got " + TypeName(v));
    return YAML::Node(YAML::NodeType::Undefined);
  }
  return v;
}

void YamlReader::ReadDuration(const YAML::Node& map, const std::string& path, const char* key,
                              std::chrono::milliseconds* out, std::chrono::milliseconds min,
                              std::chrono::milliseconds max) {
  YAML::Node v = Scalar(map, path, key, "a duration");
  if (!v.IsDefined()) return;
  auto d = ParseDuration(v.Scalar());
  if (!d) {
    Fail(v, Join(path, key),
         "invalid duration \"" + v.Scalar() +
             "\": want an integer and a unit (ms, s, m, h, d, w), largest first, e.g. 30s, 5m, 1h30m");
    return;
  }
  if (*d < min) {
    Fail(v, Join(path, key),
         "duration \"" + v.Scalar() + "\" is below the minimum of " + std::to_string(min.count()) + "ms");
    return;
  }
  if (*d > max) {
    Fail(v, Join(path, key),
         "duration \"" + v.Scalar() + "\" is above the maximum of " + std::to_string(max.count() / 1000) + "s");
    return;
  }
  *out = *d;
}

void YamlReader::ReadSize(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                          std::uint64_t min, std::uint64_t max) {
  YAML::Node v = Scalar(map, path, key, "a size");
  if (!v.IsDefined()) return;
  auto sz = ParseSize(v.Scalar());
  if (!sz) {
    Fail(v, Join(path, key),
         "invalid size \"" + v.Scalar() +
             "\": want bytes or an integer with B, KiB, MiB, GiB, TiB, kB, MB, GB or TB, e.g. 4KiB, 16MiB");
    return;
  }
  if (*sz < min || *sz > max) {
    Fail(v, Join(path, key),
         "size \"" + v.Scalar() + "\" is outside " + std::to_string(min) + ".." + std::to_string(max) + " bytes");
    return;
  }
  *out = *sz;
}

void YamlReader::ReadBool(const YAML::Node& map, const std::string& path, const char* key, bool* out) {
  YAML::Node v = Scalar(map, path, key, "true or false");
  if (!v.IsDefined()) return;
  const std::string& s = v.Scalar();
  // YAML 1.2's core schema: true|True|TRUE, false|False|FALSE, unquoted. A quoted "true" is a
  // string (yaml-cpp tags quoted scalars "!", plain ones "?"); YAML 1.1's yes/no/on/off are
  // refused rather than guessed.
  const bool plain = v.Tag() != "!";
  if (plain && (s == "true" || s == "True" || s == "TRUE")) *out = true;
  else if (plain && (s == "false" || s == "False" || s == "FALSE")) *out = false;
  else if (!plain) Fail(v, Join(path, key), "must be true or false, got the string \"" + s + "\" (remove the quotes)");
  else Fail(v, Join(path, key), "must be true or false, got \"" + s + "\"");
}

void YamlReader::ReadString(const YAML::Node& map, const std::string& path, const char* key, std::string* out) {
  YAML::Node v = Scalar(map, path, key, "a string");
  if (v.IsDefined()) *out = v.Scalar();
}

void YamlReader::ReadUint(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out,
                          std::uint64_t min, std::uint64_t max) {
  YAML::Node v = Scalar(map, path, key, "an integer");
  if (!v.IsDefined()) return;
  std::uint64_t n;
  if (!ToU64(v.Scalar(), &n) || n < min || n > max) {
    Fail(v, Join(path, key),
         "must be an integer from " + std::to_string(min) + " to " + std::to_string(max) + ", got \"" + v.Scalar() +
             "\"");
    return;
  }
  *out = n;
}

void YamlReader::ReadRatio(const YAML::Node& map, const std::string& path, const char* key, double* out) {
  YAML::Node v = Scalar(map, path, key, "a number from 0 to 1");
  if (!v.IsDefined()) return;
  const std::string& s = v.Scalar();
  const std::optional<double> parsed = util::ParseNumber<double>(s);
  const double d = parsed.value_or(-1);
  if (!parsed || !(d >= 0 && d <= 1)) {
    Fail(v, Join(path, key), "must be a number from 0 to 1 (a fraction: 0.5 = 50 %), got \"" + s + "\"");
    return;
  }
  *out = d;
}

void YamlReader::ReadStrings(const YAML::Node& map, const std::string& path, const char* key,
                             std::vector<std::string>* out) {
  if (!map.IsDefined() || !map.IsMap()) return;
  YAML::Node v = map[key];
  if (!v.IsDefined()) return;
  const std::string p = Join(path, key);
  // A key with no value is not an empty list: it would silently replace the default list.
  if (v.IsNull()) {
    Fail(KeyMark(map, key), p, "must be a list of strings, got no value (write [] for an empty list)");
    return;
  }
  if (!v.IsSequence()) {
    Fail(v, p, std::string("must be a list of strings, got ") + TypeName(v));
    return;
  }
  std::vector<std::string> result;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i].IsNull()) {  // yaml-cpp marks an empty item where the next token starts: the key instead
      Fail(KeyMark(map, key), p + "[" + std::to_string(i) + "]",
           "must be a string, got an empty item (a '-' with nothing after it)");
      return;
    }
    if (!v[i].IsScalar()) {
      Fail(v[i], p + "[" + std::to_string(i) + "]", std::string("must be a string, got ") + TypeName(v[i]));
      return;
    }
    result.push_back(v[i].Scalar());
  }
  *out = std::move(result);
}

bool YamlReader::CompilePatternAt(const YAML::Node& at, const std::string& path, const std::string& source,
                                  Pattern* out) {
  std::string why = CompilePattern(source, out, &pattern_budget_);
  if (why.empty()) return true;
  Fail(at, path, "invalid regular expression " + QuoteExcerpt(source) + ": " + why);
  return false;
}

void YamlReader::ReadPatterns(const YAML::Node& map, const std::string& path, const char* key,
                              std::vector<Pattern>* out) {
  if (!map.IsDefined() || !map.IsMap()) return;
  YAML::Node v = map[key];
  if (!v.IsDefined()) return;
  const std::string p = Join(path, key);
  // A key with no value is not an empty list: `exclude:` alone would silently drop the default
  // excludes (ram, zram) and monitor them.
  if (v.IsNull()) {
    Fail(KeyMark(map, key), p, "must be a list of regular expressions, got no value (write [] for an empty list)");
    return;
  }
  if (!v.IsSequence()) {
    Fail(v, p, std::string("must be a list of regular expressions, got ") + TypeName(v));
    return;
  }
  std::vector<Pattern> result;
  bool ok = true;
  for (std::size_t i = 0; i < v.size(); ++i) {
    YAML::Node item = v[i];
    const std::string ip = p + "[" + std::to_string(i) + "]";
    if (item.IsNull()) {  // yaml-cpp marks an empty item where the next token starts: the key instead
      Fail(KeyMark(map, key), ip,
           "must be a regular expression string, got an empty item (a '-' with nothing after it)");
      ok = false;
      continue;
    }
    if (!item.IsScalar()) {
      Fail(item, ip, std::string("must be a regular expression string, got ") + TypeName(item));
      ok = false;
      continue;
    }
    Pattern pat;
    if (!CompilePatternAt(item, ip, item.Scalar(), &pat)) {
      ok = false;
      continue;
    }
    result.push_back(std::move(pat));
  }
  if (ok) *out = std::move(result);
}

}  // namespace diskprobe::config
