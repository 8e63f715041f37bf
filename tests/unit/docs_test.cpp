// docs/metrics.md and the source agree: every family named in exporter/ is documented, and every
// documented family is named somewhere in exporter/ (no stale docs).
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
const std::string kSource = DISKPROBE_SOURCE_DIR;

std::set<std::string> FamiliesInSource() {
  std::set<std::string> out;
  // A family name is a string literal starting with diskprobe_ (not a label value or a path).
  const std::regex lit("\"(diskprobe_[a-z0-9_]+)\"");
  for (const auto& e : fs::recursive_directory_iterator(kSource + "/exporter")) {
    if (!e.is_regular_file() || (e.path().extension() != ".cpp" && e.path().extension() != ".h")) continue;
    std::string text = diskprobe::testing::ReadText(e.path().string());
    for (auto it = std::sregex_iterator(text.begin(), text.end(), lit); it != std::sregex_iterator(); ++it)
      if ((*it)[1].str() != "diskprobe_exporter") out.insert((*it)[1].str());  // the program's name
  }
  return out;
}

std::set<std::string> FamiliesInDocs() {
  std::set<std::string> out;
  std::string text = diskprobe::testing::ReadText(kSource + "/docs/metrics.md");
  const std::regex row("\\n\\| `(diskprobe_[a-z0-9_]+)` \\|");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

TEST(MetricsDoc, EveryFamilyInSourceIsDocumented) {
  std::set<std::string> docs = FamiliesInDocs();
  std::set<std::string> src = FamiliesInSource();
  ASSERT_GT(src.size(), 20u) << "the source scan found too little; is DISKPROBE_SOURCE_DIR right?";
  for (const auto& f : src) EXPECT_TRUE(docs.count(f)) << f << " is exported but not in docs/metrics.md";
}

TEST(MetricsDoc, EveryDocumentedFamilyExists) {
  std::set<std::string> src = FamiliesInSource();
  for (const auto& f : FamiliesInDocs()) EXPECT_TRUE(src.count(f)) << f << " is documented but not in the source";
}

}  // namespace
