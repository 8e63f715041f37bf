// parsers/block_stat on every diskstats sample (tests/fixtures/samples/diskstats, copied from
// real machines' reports, each with its # source line). Each .expected file is read and every value it
// names is asserted, so a sample cannot pass by accident.
#include "parsers/block_stat.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "test_util.h"

namespace diskprobe::parsers {
namespace {

using testing::Fixture;
using testing::ReadText;

// One "[name] key=value..." block of an .expected file.
struct Expected {
  std::string name;
  std::map<std::string, std::string> kv;
};

std::vector<Expected> ParseExpected(const std::string& text) {
  // "[name] k=v ..." opens a block; indented "  k=v ..." lines add to it; other lines
  // (format=, note=, kernel=) describe the sample and are skipped.
  std::vector<Expected> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || (line[0] != '[' && line[0] != ' ')) continue;
    std::istringstream ls(line);
    std::string tok;
    if (line[0] == '[') {
      ls >> tok;
      out.push_back({tok.substr(1, tok.size() - 2), {}});
    }
    if (out.empty()) continue;
    while (ls >> tok) {
      auto eq = tok.find('=');
      if (eq != std::string::npos) out.back().kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
  }
  return out;
}

std::vector<std::string> DataLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') out.push_back(line);
  return out;
}

void ExpectStat(const Expected& e, const BlockStat& s) {
  SCOPED_TRACE(e.name);
  auto u = [&](const char* k) { return std::stoull(e.kv.at(k)); };
  EXPECT_EQ(s.field_count, std::stoi(e.kv.at("stat_fields")));
  EXPECT_EQ(s.read_ios, u("reads_completed"));
  EXPECT_EQ(s.read_merges, u("reads_merged"));
  EXPECT_EQ(s.read_sectors, u("sectors_read"));
  EXPECT_EQ(s.read_ticks_ms, u("ms_reading"));
  EXPECT_EQ(s.write_ios, u("writes_completed"));
  EXPECT_EQ(s.write_merges, u("writes_merged"));
  EXPECT_EQ(s.write_sectors, u("sectors_written"));
  EXPECT_EQ(s.write_ticks_ms, u("ms_writing"));
  EXPECT_EQ(s.in_flight, u("ios_in_progress"));
  EXPECT_EQ(s.io_ticks_ms, u("ms_doing_io"));
  EXPECT_EQ(s.time_in_queue_ms, u("weighted_ms_doing_io"));
  if (s.field_count >= 15) {
    EXPECT_EQ(s.discard_ios, u("discards_completed"));
    EXPECT_EQ(s.discard_merges, u("discards_merged"));
    EXPECT_EQ(s.discard_sectors, u("sectors_discarded"));
    EXPECT_EQ(s.discard_ticks_ms, u("ms_discarding"));
  } else {
    EXPECT_FALSE(s.discard_ios.has_value()) << "an 11-field kernel has no discard counters: absent, not 0";
    EXPECT_FALSE(e.kv.count("discards_completed"));
  }
  if (s.field_count >= 17) {
    EXPECT_EQ(s.flush_ios, u("flush_requests"));
    EXPECT_EQ(s.flush_ticks_ms, u("ms_flushing"));
  } else {
    EXPECT_FALSE(s.flush_ios.has_value());
    EXPECT_FALSE(s.flush_ticks_ms.has_value());
  }
  if (e.kv.count("bytes_read")) {
    EXPECT_EQ(s.read_sectors * kSectorBytes, u("bytes_read"));
    EXPECT_EQ(s.write_sectors * kSectorBytes, u("bytes_written"));
  }
}

class DiskstatsSample : public ::testing::TestWithParam<const char*> {};

TEST_P(DiskstatsSample, MatchesExpected) {
  const std::string base = Fixture(std::string("samples/diskstats/") + GetParam());
  const std::string text = ReadText(base + ".txt");
  ASSERT_EQ(text.rfind("# source: https://", 0), 0u) << "sample lost its source line";
  std::vector<Expected> expected = ParseExpected(ReadText(base + ".expected"));
  std::vector<std::string> lines = DataLines(text);
  ASSERT_EQ(lines.size(), expected.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const Expected& e = expected[i];
    if (e.kv.count("major")) {
      auto d = ParseDiskstatsLine(lines[i]);
      ASSERT_TRUE(d.has_value()) << lines[i];
      EXPECT_EQ(d->name, e.name);
      EXPECT_EQ(d->major, std::stoul(e.kv.at("major")));
      EXPECT_EQ(d->minor, std::stoul(e.kv.at("minor")));
      ExpectStat(e, d->stat);
    } else {
      auto s = ParseBlockStat(lines[i]);  // /sys/block/<dev>/stat: no major/minor/name
      ASSERT_TRUE(s.has_value()) << lines[i];
      ExpectStat(e, *s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, DiskstatsSample,
                         ::testing::Values("01-node-exporter-mmcblk0-11-fields", "02-node-exporter-sdb-15-fields",
                                           "03-node-exporter-sdc-17-fields", "05-linux-5.5.2-nvme-17-fields",
                                           "06-centos6-2.6.32-vda-11-fields", "10-procfs-sys-block-dm0-stat-11",
                                           "11-procfs-sys-block-sda-stat-15", "13-synology-sata1-nonstandard-name"));

TEST(ParseDiskstatsLine, RejectsLinux24ProcPartitions) {
  // Sample 08: /proc/partitions of Linux 2.4 has #blocks where diskstats has the name.
  for (const auto& line : DataLines(ReadText(Fixture("samples/diskstats/08-kernel-doc-2.4-proc-partitions.txt")))) {
    EXPECT_FALSE(ParseDiskstatsLine(line).has_value()) << line;
  }
}

TEST(ParseBlockStat, ValuesAbove32Bits) {
  auto s =
      ParseBlockStat("40894884 762897 4732260326 79610084 32058059 40015556 534598342 81434303 0 80401326 160952373\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->read_sectors, 4732260326ull);
  EXPECT_EQ(s->read_sectors * kSectorBytes, 2422917286912ull);
  auto big = ParseBlockStat("18446744073709551615 0 0 0 0 0 0 0 0 0 0");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->read_ios, 18446744073709551615ull);
  EXPECT_FALSE(ParseBlockStat("18446744073709551616 0 0 0 0 0 0 0 0 0 0")) << "overflow must be rejected";
}

TEST(ParseBlockStat, RejectsMalformed) {
  EXPECT_FALSE(ParseBlockStat(""));
  EXPECT_FALSE(ParseBlockStat("1 2 3 4 5 6 7 8 9 10"));                    // 10 fields
  EXPECT_FALSE(ParseBlockStat("1 2 3 4 5 6 7 8 9 10 11 12"));              // no kernel writes 12
  EXPECT_FALSE(ParseBlockStat("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"));  // nor 16
  EXPECT_FALSE(ParseBlockStat("1 2 3 4 5 6 7 8 9 10 -11"));
  EXPECT_FALSE(ParseBlockStat("1 2 3 4 5 6 7 8 9 10 1x"));
  auto future = ParseBlockStat("1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19");
  ASSERT_TRUE(future) << "a future kernel's extra fields are ignored";
  EXPECT_EQ(future->field_count, 19);
  EXPECT_EQ(future->flush_ticks_ms, 17u);
}

TEST(ParseBlockStat, PaddedColumnsAndTabs) {
  auto s = ParseBlockStat("     192        3\t1560  156 0 0 0 0 0 136 156\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->read_ios, 192u);
  EXPECT_EQ(s->time_in_queue_ms, 156u);
}

}  // namespace
}  // namespace diskprobe::parsers
