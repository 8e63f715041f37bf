#pragma once
// Helpers shared by the unit tests: fixture paths and golden-file comparison.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#ifndef DISKPROBE_FIXTURES_DIR
#error "DISKPROBE_FIXTURES_DIR must be defined by the build (tests/CMakeLists.txt)"
#endif

namespace diskprobe::testing {

// True under CI=true, where a test that needs root, a device or a kernel feature must run
// (CI machines have them, so a skip there would hide a failure): DISKPROBE_SKIP_OUTSIDE_CI fails there and skips
// elsewhere.
inline bool UnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}
#define DISKPROBE_SKIP_OUTSIDE_CI(why)                  \
  do {                                                  \
    if (::diskprobe::testing::UnderCi()) FAIL() << why; \
    GTEST_SKIP() << why;                                \
  } while (0)

inline std::string Fixture(const std::string& rel) { return std::string(DISKPROBE_FIXTURES_DIR) + "/" + rel; }

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `actual` with the golden file tests/fixtures/golden/<name>. With UPDATE_GOLDEN=1 in the
// environment the golden file is rewritten instead (review the diff before committing it).
inline void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::string path = Fixture("golden/" + name);
  if (const char* u = std::getenv("UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  EXPECT_EQ(ReadText(path), actual) << "golden file " << path << " differs; rerun with UPDATE_GOLDEN=1 to update";
}

}  // namespace diskprobe::testing
