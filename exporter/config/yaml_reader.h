#pragma once
// Typed, validating access to a yaml-cpp document that reports every problem as
// "file:line:col: key.path: message" and keeps going, so one run shows all errors.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace diskprobe::config {

// One validation problem. line and column are 1-based (yaml-cpp marks are 0-based).
struct Error {
  std::string file;
  int line = 0;
  int column = 0;
  std::string path;  // dotted key path, e.g. "devices.discovery_interval"; empty for syntax errors
  std::string message;
  // "file:line:col: path: message" (or "file:line:col: message" without a path).
  std::string ToString() const;
};

// Parses a Prometheus-style duration: one or more <integer><unit> with unit in
// ms, s, m, h, d, w, largest first ("1h30m", "500ms", "30s"). nullopt on anything else or overflow.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view s);

// Parses a size: a bare integer (bytes) or an integer followed by B, KiB, MiB, GiB, TiB (powers of
// 1024) or kB, MB, GB, TB (powers of 1000). nullopt on anything else (fractions, "KB", overflow).
std::optional<std::uint64_t> ParseSize(std::string_view s);

// Bounds every configuration document (--config.file, --web.config.file) is held to before
// yaml-cpp builds a tree from it. yaml-cpp 0.7 and 0.8 keep a flow collection's tokens queued
// until it closes (measured: about 140 bytes of memory and 8 us per byte of `[a,a,...]`, 27 MB for
// 100 KB of `[`), build about 500 bytes per node, and report nesting beyond 500 only as "bad file"
// at 1:1; a configuration is a few KiB (config/default.yml, every key and a comment each, is
// 6 KiB), so each bound is far above any real file and far below what hurts a Pi under the
// unit's MemoryMax.
inline constexpr std::size_t kMaxDocumentBytes = 64 * 1024;
inline constexpr int kMaxDocumentDepth = 32;     // lists and mappings inside each other
inline constexpr int kMaxDocumentNodes = 10000;  // scalars, nulls, aliases, lists, mappings
inline constexpr int kMaxDocumentAliases = 100;  // *name references (each repeats its anchor's tree)

// Parses `text` (named `file` in errors) as exactly one YAML document into *root (a null node for
// an empty text). On a problem appends exactly one Error, at the place of the problem where there
// is one, and returns false:
//   "document is larger than 65536 bytes ..." (0:0),
//   "lists and mappings nested more than 32 deep" (at the opening bracket, or the node),
//   "more than 10000 YAML nodes ...", "more than 100 aliases ..." (at the node over the bound),
//   "more than one YAML document; a configuration is a single document" (at the second ---),
//   "YAML syntax error: unexpected ','" (a token no document can start with: yaml-cpp's LoadAll
//     loops forever on it, allocating, which is why this never calls LoadAll),
//   "YAML syntax error: <yaml-cpp's message>".
// Never throws, never loops: the bounds are checked by a scan of the text and by an event pass of
// yaml-cpp's parser that stops at the first bound exceeded, before YAML::Load builds the tree.
bool LoadDocument(std::string_view text, const std::string& file, YAML::Node* root, std::vector<Error>* errors);

// An anchored regular expression with its source text.
struct Pattern {
  std::string source;
  std::regex re;  // ECMAScript; always used with std::regex_match, so anchored at both ends
  bool FullMatch(std::string_view s) const;
};

// Bounds on a pattern, checked before std::regex sees it. libstdc++ compiles a pattern by
// recursion, one level per term and several per group, so 40 KB of `a` or 20,000 nested groups
// overflow the stack (SIGSEGV); and it builds the states of every copy a {n,m} repetition makes,
// so a short pattern can cost megabytes ("((a{30}){30}){30}": 27,000 states). The expanded size
// counts each atom (a character, escape or class) once per copy. Device names are at most 31
// characters (the kernel's DISK_NAME_LEN is 32), so no useful pattern comes near these bounds.
inline constexpr std::size_t kMaxPatternLength = 1024;  // characters, as written and expanded
inline constexpr int kMaxPatternGroupDepth = 16;
inline constexpr std::size_t kMaxPatternTotal = 16 * 1024;  // expanded, all patterns of one file

// Compiles `source` into *out. Returns "" on success, else why it is refused (no position: the
// caller knows the key's file:line:col): too long, groups nested too deep, too large expanded,
// more than is left of *budget (the expanded size is taken from it; null: no budget), or
// std::regex's own error. Matching runs in time linear in the name (libstdc++'s polynomial
// executor, which visits each state once per character) rather than by backtracking, which takes
// exponential time: `(a*)*b` against sixteen "a" ran longer than 20 s here. Back-references
// (\1), which that executor cannot run, are refused with a message saying so.
std::string CompilePattern(const std::string& source, Pattern* out, std::size_t* budget = nullptr);

// `s` in double quotes, cut after 64 characters with its length when longer, so that a refused
// 40 KB pattern does not make a 40 KB error line.
std::string QuoteExcerpt(std::string_view s);

// Validating reader. Each accessor reads the value at `key` of `map` into *out when the key is
// present and valid, records an Error when it is present and invalid, and leaves *out untouched
// when absent (the caller pre-fills defaults). `path` is the dotted path of `map`.
class YamlReader {
 public:
  YamlReader(std::string file, std::vector<Error>* errors) : file_(std::move(file)), errors_(errors) {}

  // True when `node` is a mapping (or null/absent: treated as empty). Reports keys not in `known`
  // and duplicate keys, each at the key's position.
  bool CheckMap(const YAML::Node& node, const std::string& path, std::initializer_list<std::string_view> known);
  bool CheckMap(const YAML::Node& node, const std::string& path, std::span<const std::string_view> known);

  // A duration from min to max inclusive (a maximum keeps timers far from overflow).
  void ReadDuration(const YAML::Node& map, const std::string& path, const char* key, std::chrono::milliseconds* out,
                    std::chrono::milliseconds min, std::chrono::milliseconds max);
  void ReadSize(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out, std::uint64_t min,
                std::uint64_t max);
  void ReadBool(const YAML::Node& map, const std::string& path, const char* key, bool* out);
  void ReadString(const YAML::Node& map, const std::string& path, const char* key, std::string* out);
  // A decimal integer from min to max inclusive.
  void ReadUint(const YAML::Node& map, const std::string& path, const char* key, std::uint64_t* out, std::uint64_t min,
                std::uint64_t max);
  // A number from 0 to 1 inclusive (a fraction, e.g. 0.5 = 50 %).
  void ReadRatio(const YAML::Node& map, const std::string& path, const char* key, double* out);
  // A list of strings. A key with no value is an error ("write [] for an empty list"), and so is
  // an empty item: either would otherwise replace a default list without a word.
  void ReadStrings(const YAML::Node& map, const std::string& path, const char* key, std::vector<std::string>* out);
  void ReadPatterns(const YAML::Node& map, const std::string& path, const char* key, std::vector<Pattern>* out);
  // CompilePattern against this document's kMaxPatternTotal budget; false (with an error at `at`)
  // when refused.
  bool CompilePatternAt(const YAML::Node& at, const std::string& path, const std::string& source, Pattern* out);

  void Fail(const YAML::Node& at, const std::string& path, std::string message);
  // The same at a position (yaml-cpp's Mark: 0-based line and column, -1 when unknown).
  void Fail(const YAML::Mark& at, const std::string& path, std::string message);
  // "file:line:col: path" of `at`, the prefix Fail() would give an error there (for checks made
  // later, e.g. loading a certificate the file names).
  std::string Where(const YAML::Node& at, const std::string& path) const;
  static std::string Join(const std::string& path, std::string_view key);

 private:
  // The position of `key` in `map` (the map's own when absent): where an error about a key with
  // no value goes, since yaml-cpp marks a null value at the next token.
  static YAML::Mark KeyMark(const YAML::Node& map, const char* key);
  // Returns the scalar at map[key] or an undefined node; reports a non-scalar.
  YAML::Node Scalar(const YAML::Node& map, const std::string& path, const char* key, const char* what);

  std::string file_;
  std::vector<Error>* errors_;
  std::size_t pattern_budget_ = kMaxPatternTotal;
};

}  // namespace diskprobe::config
