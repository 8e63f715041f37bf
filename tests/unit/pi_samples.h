// Helpers for the tests that read ../fixtures/samples/<category>/NN-name.txt.
#pragma once

#ifndef DISKPROBE_FIXTURES_DIR
#error "DISKPROBE_FIXTURES_DIR must be defined (path to tests/fixtures)"
#endif

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace diskprobe::test_pi {

// Whole file, bytes as stored. Throws (failing the test) when missing.
inline std::string read_sample(const std::string& category, const std::string& file) {
  const std::string path = std::string(DISKPROBE_FIXTURES_DIR) + "/samples/" + category + "/" + file;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open fixture " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The sample without its leading "# source:" / "# note:" header lines.
inline std::string sample_body(const std::string& category, const std::string& file) {
  std::istringstream in(read_sample(category, file));
  std::string line, out;
  bool header = true;
  while (std::getline(in, line)) {
    if (header && (line.rfind("# source:", 0) == 0 || line.rfind("# note:", 0) == 0)) continue;
    header = false;
    out += line;
    out += '\n';
  }
  return out;
}

inline std::vector<std::string> sample_lines(const std::string& category, const std::string& file) {
  std::istringstream in(sample_body(category, file));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace diskprobe::test_pi
