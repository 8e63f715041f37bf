// The fake-capacity check (bench/capacity.h): the fill block's format, the classifier of blocks
// read back (intact, wrap-around, stale, zeros, garbage), the tallies (bad ranges, alias
// distance), the command line, the JSON document against docs/bench-capacity-schema.json, and a
// run on a temporary directory of this machine's disk (a healthy disk: everything intact, files
// removed, nothing else touched).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/statfs.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "bench/capacity.h"
#include "bench/cli.h"
#include "bench/report.h"
#include "probes/probe_file.h"
#include "test_util.h"

namespace {

using namespace diskprobe::bench;
using diskprobe::testing::ReadText;

constexpr std::uint64_t kRun = 0x1122334455667788ull;

std::vector<unsigned char> Stamped(std::uint64_t run, std::uint64_t offset, std::uint64_t file = 0) {
  std::vector<unsigned char> b(kFillBlock);
  StampFillBlock(b.data(), run, offset, file);
  return b;
}

std::uint64_t U64At(const std::vector<unsigned char>& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return v;
}

TEST(CapacityBlock, LayoutIsTheDocumentedOne) {
  auto b = Stamped(kRun, 3 * kFillBlock, 7);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "DPFILL01");
  EXPECT_EQ(U64At(b, 8), kRun);
  EXPECT_EQ(U64At(b, 16), 3 * kFillBlock);
  EXPECT_EQ(U64At(b, 24), 7u);
  const std::uint32_t crc = diskprobe::probes::Crc32c(b.data(), kFillBlock - 4);
  EXPECT_EQ(b[4092] | b[4093] << 8 | b[4094] << 16 | static_cast<std::uint32_t>(b[4095]) << 24, crc);
  // The payload differs from block to block and run to run (a card that deduplicates or
  // compresses must not be able to store the fill in less room).
  auto c = Stamped(kRun, 4 * kFillBlock, 7), d = Stamped(kRun + 1, 3 * kFillBlock, 7);
  EXPECT_NE(std::memcmp(b.data() + 32, c.data() + 32, 4060), 0);
  EXPECT_NE(std::memcmp(b.data() + 32, d.data() + 32, 4060), 0);
  // The same inputs give the same block (the verification needs nothing but run and offset).
  EXPECT_EQ(b, Stamped(kRun, 3 * kFillBlock, 7));
}

TEST(CapacityClassify, IntactAtItsOwnOffset) {
  auto b = Stamped(kRun, 5 * kFillBlock);
  BlockVerdict v = ClassifyFillBlock(b.data(), kRun, 5 * kFillBlock);
  EXPECT_EQ(v.kind, BlockKind::kIntact);
  EXPECT_EQ(v.aliased_offset, 5 * kFillBlock);
}

TEST(CapacityClassify, AnotherOffsetsBlockIsWrapAroundAndSaysWhich) {
  // A card keeping 64 MiB: reading offset 0 returns the block written at 64 MiB.
  auto b = Stamped(kRun, 64ull << 20);
  BlockVerdict v = ClassifyFillBlock(b.data(), kRun, 0);
  EXPECT_EQ(v.kind, BlockKind::kWrapAround);
  EXPECT_EQ(v.aliased_offset, 64ull << 20);
  EXPECT_EQ(KindName(v.kind), "wrap_around");
}

TEST(CapacityClassify, AnotherRunsBlockIsStale) {
  auto b = Stamped(kRun ^ 1, 8 * kFillBlock);
  BlockVerdict v = ClassifyFillBlock(b.data(), kRun, 8 * kFillBlock);
  EXPECT_EQ(v.kind, BlockKind::kStale);
  EXPECT_EQ(v.aliased_offset, 8 * kFillBlock);
}

TEST(CapacityClassify, ZerosAndErasedFlashAreZeros) {
  std::vector<unsigned char> z(kFillBlock, 0x00), f(kFillBlock, 0xFF);
  EXPECT_EQ(ClassifyFillBlock(z.data(), kRun, 0).kind, BlockKind::kZeros);
  EXPECT_EQ(ClassifyFillBlock(f.data(), kRun, 0).kind, BlockKind::kZeros);
  z[4095] = 1;  // one byte set: not a dropped write
  EXPECT_EQ(ClassifyFillBlock(z.data(), kRun, 0).kind, BlockKind::kGarbage);
  std::vector<unsigned char> mixed(kFillBlock, 0x00);
  std::memset(mixed.data() + 2048, 0xFF, 2048);  // half zeros, half 0xFF
  EXPECT_EQ(ClassifyFillBlock(mixed.data(), kRun, 0).kind, BlockKind::kGarbage);
}

TEST(CapacityClassify, OneFlippedBitAnywhereIsGarbage) {
  for (std::size_t at : {std::size_t{0}, std::size_t{9}, std::size_t{17}, std::size_t{100}, std::size_t{4091},
                         std::size_t{4094}}) {
    auto b = Stamped(kRun, 2 * kFillBlock);
    b[at] ^= 0x10;
    EXPECT_EQ(ClassifyFillBlock(b.data(), kRun, 2 * kFillBlock).kind, BlockKind::kGarbage) << "byte " << at;
  }
  std::vector<unsigned char> random(kFillBlock);
  for (std::size_t i = 0; i < random.size(); ++i) random[i] = static_cast<unsigned char>(i * 131 + 7);
  EXPECT_EQ(ClassifyFillBlock(random.data(), kRun, 0).kind, BlockKind::kGarbage);
}

BlockVerdict V(BlockKind k, std::uint64_t aliased = 0) { return BlockVerdict{k, aliased}; }

TEST(CapacityTally, RangesCountsFirstBadAndAliasDistance) {
  CapacityResult r;
  const std::uint64_t B = kFillBlock;
  TallyBlock(&r, 0 * B, V(BlockKind::kIntact));
  TallyBlock(&r, 1 * B, V(BlockKind::kIntact));
  // Blocks 2 and 3 hold 102 and 103: one wrap range; block 4 holds 50: another.
  TallyBlock(&r, 2 * B, V(BlockKind::kWrapAround, 102 * B));
  TallyBlock(&r, 3 * B, V(BlockKind::kWrapAround, 103 * B));
  TallyBlock(&r, 4 * B, V(BlockKind::kWrapAround, 50 * B));
  TallyBlock(&r, 5 * B, V(BlockKind::kZeros));
  TallyBlock(&r, 6 * B, V(BlockKind::kZeros));
  TallyBlock(&r, 7 * B, V(BlockKind::kGarbage));
  TallyBlock(&r, 8 * B, V(BlockKind::kIntact));
  TallyBlock(&r, 9 * B, V(BlockKind::kReadError));
  EXPECT_EQ(r.verified_bytes, 10 * B);
  EXPECT_EQ(r.intact_bytes, 3 * B);
  EXPECT_EQ(r.blocks[static_cast<int>(BlockKind::kWrapAround)], 3u);
  EXPECT_EQ(r.blocks[static_cast<int>(BlockKind::kZeros)], 2u);
  ASSERT_EQ(r.bad_ranges.size(), 5u);
  EXPECT_EQ(r.bad_ranges[0].offset, 2 * B);  // the first bad offset
  EXPECT_EQ(r.bad_ranges[0].bytes, 2 * B);
  EXPECT_EQ(r.bad_ranges[0].aliased_offset, 102 * B);
  EXPECT_EQ(r.bad_ranges[1].offset, 4 * B);
  EXPECT_EQ(r.bad_ranges[1].aliased_offset, 50 * B);
  EXPECT_EQ(r.bad_ranges[2].kind, BlockKind::kZeros);
  EXPECT_EQ(r.bad_ranges[2].bytes, 2 * B);
  EXPECT_EQ(r.bad_ranges[3].kind, BlockKind::kGarbage);
  EXPECT_EQ(r.bad_ranges[4].kind, BlockKind::kReadError);
  // |4 - 50| = 46 blocks is smaller than |2 - 102| = 100.
  ASSERT_TRUE(r.alias_distance);
  EXPECT_EQ(*r.alias_distance, 46 * B);
  EXPECT_FALSE(r.bad_ranges_truncated);
  EXPECT_EQ(CapacityOutcome(r), "data_lost");
}

TEST(CapacityTally, KeepsTheFirstRangesAndSaysItDroppedMore) {
  CapacityResult r;
  for (std::uint64_t i = 0; i < 2 * kMaxBadRanges; ++i) {
    TallyBlock(&r, 2 * i * kFillBlock, V(BlockKind::kGarbage));
    TallyBlock(&r, (2 * i + 1) * kFillBlock, V(BlockKind::kIntact));
  }
  EXPECT_EQ(r.bad_ranges.size(), kMaxBadRanges);
  EXPECT_TRUE(r.bad_ranges_truncated);
  EXPECT_EQ(r.blocks[static_cast<int>(BlockKind::kGarbage)], 2 * kMaxBadRanges);  // counts are complete
  EXPECT_EQ(r.bad_ranges.front().offset, 0u);
}

TEST(CapacityExtents, DeviceOffsetOfAFileOffset) {
  std::vector<Extent> e = {{0, 1 << 20, 8192}, {8192, 9 << 20, 4096}};
  EXPECT_EQ(DeviceOffset(e, 0), 1u << 20);
  EXPECT_EQ(DeviceOffset(e, 4096), (1u << 20) + 4096);
  EXPECT_EQ(DeviceOffset(e, 8192), 9u << 20);
  EXPECT_FALSE(DeviceOffset(e, 12288));  // past the last extent
  EXPECT_FALSE(DeviceOffset({}, 0));
}

std::string ParseError(const std::string& args) {
  CLI::App app{"test"};
  auto command = AddCommand(app);
  try {
    app.parse("bench " + args, false);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(CapacityCli, ModeAndItsBounds) {
  EXPECT_EQ(ParseError("--capacity-check /tmp --capacity-max 900MiB"), "");
  EXPECT_EQ(ParseError("--capacity-check /tmp --capacity-max 900MiB --free-floor 64MiB --progress --format json"), "");
  EXPECT_NE(ParseError("--capacity-check /tmp").find("--capacity-max"), std::string::npos);
  EXPECT_NE(ParseError("--capacity-check /tmp --capacity-max lots").find("invalid size"), std::string::npos);
  EXPECT_NE(ParseError("--capacity-check /tmp --capacity-max 1KiB").find("at least one block"), std::string::npos);
  // The benchmark's own options do not mix with it, and the benchmark still needs its two.
  EXPECT_NE(ParseError("--capacity-check /tmp --capacity-max 1GiB --device /dev/null").find("excludes"),
            std::string::npos);
  EXPECT_NE(ParseError("--dir /tmp").find("--device is required"), std::string::npos);
  EXPECT_NE(ParseError("--device /dev/null").find("--dir is required"), std::string::npos);
  EXPECT_NE(ParseError("--device /dev/null --dir /tmp --free-floor 1GiB").find("requires"), std::string::npos);
}

std::set<std::string> Keys(const nlohmann::json& o) {
  std::set<std::string> k;
  for (auto it = o.begin(); it != o.end(); ++it) k.insert(it.key());
  return k;
}
std::set<std::string> Required(const nlohmann::json& s) { return s["required"].get<std::set<std::string>>(); }

CapacityResult Sample() {
  CapacityResult r;
  r.options.directory = "/mnt";
  r.options.max_bytes = 16 * kFillBlock;
  r.check_directory = "/mnt/diskprobe-capacity-check";
  r.written_bytes = 4 * kFillBlock;
  r.files = 1;
  TallyBlock(&r, 0, V(BlockKind::kWrapAround, 2 * kFillBlock));
  TallyBlock(&r, kFillBlock, V(BlockKind::kIntact));
  TallyBlock(&r, 2 * kFillBlock, V(BlockKind::kIntact));
  TallyBlock(&r, 3 * kFillBlock, V(BlockKind::kZeros));
  r.card_alias_distance = 2 * kFillBlock;
  r.removed = true;
  return r;
}

TEST(CapacityJson, ShapeFollowsTheSchema) {
  auto schema = nlohmann::json::parse(ReadText(std::string(DISKPROBE_SOURCE_DIR) + "/docs/bench-capacity-schema.json"));
  nlohmann::json j = CapacityToJson(Sample());
  EXPECT_EQ(Keys(j), Required(schema));
  for (const char* o : {"limits", "filesystem", "blocks"}) EXPECT_EQ(Keys(j[o]), Required(schema["properties"][o])) << o;
  for (const char* o : {"write", "verify"}) EXPECT_EQ(Keys(j[o]), Required(schema["definitions"]["phase"])) << o;
  EXPECT_EQ(Keys(j["first_bad"]), Required(schema["definitions"]["range"]));
  EXPECT_EQ(j["first_bad"]["kind"], "wrap_around");
  EXPECT_EQ(j["first_bad"]["aliased_offset"], 2 * kFillBlock);
  EXPECT_EQ(j["bad_ranges"][1]["kind"], "zeros");
  EXPECT_TRUE(j["bad_ranges"][1]["aliased_offset"].is_null());
  EXPECT_EQ(j["intact_bytes"], 2 * kFillBlock);
  EXPECT_EQ(j["lost_bytes"], 2 * kFillBlock);
  EXPECT_EQ(j["card_alias_distance_bytes"], 2 * kFillBlock);
  EXPECT_EQ(j["result"], "data_lost");
  EXPECT_EQ(j["run_id"].get<std::string>().size(), 16u);
}

// Interrupted while writing (a fresh-user trial: SIGINT 2 s into a 3 GiB fill): nothing was read
// back, so the table claims no checked bytes and no "nothing lost"; interrupted after part of
// the reads, it names what was read back.
TEST(CapacityTable, AnInterruptedCheckSaysWhatWasReadBack) {
  CapacityResult r;
  r.options.directory = "/mnt";
  r.options.max_bytes = 3ull << 30;
  r.fs_available_bytes = 8ull << 30;
  r.planned_bytes = 3ull << 30;
  r.written_bytes = 398ull << 20;
  r.interrupted = true;
  r.removed = true;
  std::string t = FormatCapacity(r);
  EXPECT_EQ(t.find("checked:"), std::string::npos) << t;
  EXPECT_NE(t.find("RESULT: INCOMPLETE, nothing was read back: no verdict on the card\n"), std::string::npos) << t;
  for (std::uint64_t off = 0; off < (4u << 20); off += kFillBlock) TallyBlock(&r, off, V(BlockKind::kIntact));
  t = FormatCapacity(r);
  EXPECT_NE(t.find("checked:  4.0 MiB of the"), std::string::npos) << t;
  EXPECT_NE(t.find("RESULT: INCOMPLETE, nothing lost in the 4.0 MiB read back\n"), std::string::npos) << t;
}

// A fill bounded by --capacity-max checked part of the free space: the table says how much, so
// an "OK" is not read as the whole card's. A fill up to the floor gets no such line.
TEST(CapacityTable, APartialFillSaysHowMuchOfTheFreeSpaceItChecked) {
  CapacityResult r;
  r.options.directory = "/mnt";
  r.options.max_bytes = 16 << 20;
  r.options.free_floor = 16 << 20;
  r.fs_available_bytes = 100 << 20;
  r.planned_bytes = r.written_bytes = 16 << 20;
  for (std::uint64_t off = 0; off < r.written_bytes; off += kFillBlock) TallyBlock(&r, off, V(BlockKind::kIntact));
  r.removed = true;
  std::string t = FormatCapacity(r);
  EXPECT_NE(t.find("checked:  16.0 MiB of the 84.0 MiB free above the floor (--capacity-max)"), std::string::npos) << t;
  EXPECT_NE(t.find("RESULT: OK, every block written read back intact\n"), std::string::npos) << t;
  r.options.max_bytes = 1ull << 40;  // the floor bounded it: all the free space above it was checked
  r.planned_bytes = r.written_bytes = 84 << 20;
  t = FormatCapacity(r);
  EXPECT_EQ(t.find("checked:"), std::string::npos) << t;
}

TEST(CapacityTable, SaysWhatWasLostAndWhere) {
  std::string t = FormatCapacity(Sample());
  EXPECT_NE(t.find("intact:   8192 bytes"), std::string::npos) << t;
  EXPECT_NE(t.find("first bad offset: 0 bytes (0.0 MiB), wrap_around: holds the block of offset 8192 bytes"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("alias distance on the device: 8192 bytes"), std::string::npos) << t;
  EXPECT_NE(t.find("RESULT: DATA LOST"), std::string::npos) << t;
}

// A scratch directory in the working directory (the build tree, on a disk: a tmpfs TMPDIR, as
// Debian 13's /tmp, is refused by the check); a disk holds what it is given.
class CapacityRun : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = std::filesystem::current_path() / "diskprobe-capacity.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directory(dir_ + "/locks");
    std::filesystem::create_directory(dir_ + "/fs");
    opt_.directory = dir_ + "/fs";
    opt_.lock_directory = dir_ + "/locks";
    opt_.max_bytes = 3 << 20;
    opt_.free_floor = 0;
    opt_.file_max = 1 << 20;
    opt_.lock_wait_seconds = 0;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  CapacityOptions opt_;
};

TEST_F(CapacityRun, HealthyDiskReadsBackIntactAndLeavesNothingBehind) {
  {
    std::ofstream existing(opt_.directory + "/existing.txt");
    existing << "not touched";
  }
  CapacityResult r;
  std::string error;
  std::vector<std::string> phases;
  ASSERT_TRUE(RunCapacityCheck(
      opt_, [&](const std::string& p, std::uint64_t, std::uint64_t, double) { phases.push_back(p); }, nullptr, &r,
      &error))
      << error;
  EXPECT_EQ(r.planned_bytes, 3u << 20);
  EXPECT_EQ(r.written_bytes, 3u << 20);
  EXPECT_EQ(r.verified_bytes, 3u << 20);
  EXPECT_EQ(r.intact_bytes, 3u << 20);
  EXPECT_EQ(r.files, 3u);
  EXPECT_TRUE(r.bad_ranges.empty());
  EXPECT_EQ(CapacityOutcome(r), "ok");
  EXPECT_TRUE(r.removed) << r.remove_error;
  EXPECT_NE(std::find(phases.begin(), phases.end(), "writing"), phases.end());
  EXPECT_NE(std::find(phases.begin(), phases.end(), "verifying"), phases.end());
  EXPECT_FALSE(std::filesystem::exists(opt_.directory + "/" + kCapacityDirName));
  EXPECT_EQ(ReadText(opt_.directory + "/existing.txt"), "not touched");
}

TEST_F(CapacityRun, LeftoversOrASymlinkAreNeverWrittenInto) {
  const std::string own = opt_.directory + "/" + kCapacityDirName;
  std::filesystem::create_directory(own);
  CapacityResult r;
  std::string error;
  EXPECT_FALSE(RunCapacityCheck(opt_, nullptr, nullptr, &r, &error));
  EXPECT_NE(error.find("exists"), std::string::npos) << error;
  EXPECT_TRUE(std::filesystem::is_empty(own));
  std::filesystem::remove(own);
  // A symlink where the check's directory goes: mkdirat fails on it, nothing is written through it.
  std::filesystem::create_directory(dir_ + "/elsewhere");
  std::filesystem::create_directory_symlink(dir_ + "/elsewhere", own);
  EXPECT_FALSE(RunCapacityCheck(opt_, nullptr, nullptr, &r, &error));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/elsewhere"));
  std::filesystem::remove(own);
  // A symlinked directory to check is refused.
  std::filesystem::create_directory_symlink(opt_.directory, dir_ + "/link");
  opt_.directory = dir_ + "/link";
  EXPECT_FALSE(RunCapacityCheck(opt_, nullptr, nullptr, &r, &error));
  EXPECT_NE(error.find("symlink"), std::string::npos) << error;
}

TEST_F(CapacityRun, FloorBoundsTheFillAndStopRemovesTheFiles) {
  CapacityResult r;
  std::string error;
  opt_.free_floor = 1ull << 60;  // more than any disk has
  EXPECT_FALSE(RunCapacityCheck(opt_, nullptr, nullptr, &r, &error));
  EXPECT_NE(error.find("nothing to fill"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(opt_.directory + "/" + kCapacityDirName));

  opt_.free_floor = 0;
  std::atomic<bool> stop{false};
  // Stopped as the first progress report comes (after the first write).
  ASSERT_TRUE(RunCapacityCheck(
      opt_, [&](const std::string& p, std::uint64_t, std::uint64_t, double) { if (p == "writing") stop = true; },
      &stop, &r, &error))
      << error;
  EXPECT_TRUE(r.interrupted);
  EXPECT_LT(r.written_bytes, opt_.max_bytes);
  EXPECT_EQ(r.verified_bytes, 0u);
  EXPECT_EQ(CapacityOutcome(r), "incomplete");
  EXPECT_TRUE(r.removed) << r.remove_error;
  EXPECT_FALSE(std::filesystem::exists(opt_.directory + "/" + kCapacityDirName));
}

}  // namespace

// A directory on tmpfs is refused before anything is created: RAM would read back intact and the
// verdict would be "ok". /dev/shm is a tmpfs on every Linux system with glibc's shm_open.
TEST(CapacityRefusal, ADirectoryOnTmpfsIsRefused) {
  struct statfs sfs {};
  if (::statfs("/dev/shm", &sfs) != 0 || sfs.f_type != kTmpfsMagic) GTEST_SKIP() << "/dev/shm is not a tmpfs here";
  std::string tmpl = "/dev/shm/diskprobe-capacity.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  CapacityOptions opt;
  opt.directory = tmpl;
  opt.lock_directory = tmpl;
  opt.max_bytes = 1 << 20;
  opt.free_floor = 0;
  opt.lock_wait_seconds = 0;
  CapacityResult r;
  std::string error;
  EXPECT_FALSE(RunCapacityCheck(opt, nullptr, nullptr, &r, &error));
  EXPECT_EQ(error,
            "directory " + tmpl + " is on tmpfs (memory, not a card): give a directory on the card's filesystem");
  EXPECT_TRUE(std::filesystem::is_empty(tmpl));
  std::filesystem::remove_all(tmpl);
}
