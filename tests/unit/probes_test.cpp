// probes/: the probe file's safety rules, its header (the write budget's persistence), offsets,
// and the runners on an ordinary file.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "probes/io.h"
#include "probes/probe_file.h"
#include "probes/runners.h"
#include "probes/stats.h"
#include "test_util.h"

namespace diskprobe::probes {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/diskprobe-probes-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

ProbeFileOptions Options(const std::string& dir) {
  ProbeFileOptions o;
  o.directory = dir;
  o.size = 1 << 20;
  o.free_space_floor = 0;
  o.free_space_floor_ratio = 0;
  return o;
}

std::string Slurp(const std::string& p) { return testing::ReadText(p); }

TEST(ProbeFile, CreatesExclusivelyFilledWithHeader) {
  TempDir t;
  std::string err;
  int e = -1;
  std::uint64_t written = 0;
  auto f = ProbeFile::Open(Options(t.path()), &err, &e, &written);
  ASSERT_TRUE(f) << err;
  EXPECT_EQ(e, 0);
  EXPECT_EQ(written, 1u << 20) << "the whole file is written once: data blocks and the header";
  struct stat st {};
  ASSERT_EQ(::stat(f->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_size, 1 << 20);
  EXPECT_EQ(f->data_blocks(), 255u);
  EXPECT_EQ(f->header().sequence, 255u) << "each data block stamped once";
  // Data blocks carry their magic and their own offset.
  std::string text = Slurp(f->path());
  EXPECT_EQ(text.substr(0, 15), "DISKPROBE-FILE1");
  EXPECT_EQ(text.substr(4096 * 7, 8), "DPBLOCK2");
  std::uint64_t off = 0;
  for (int i = 0; i < 8; ++i)
    off |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[4096 * 7 + 8 + i])) << (8 * i);
  EXPECT_EQ(off, 4096u * 7);
}

TEST(ProbeFile, HeaderKeepsTheBudgetAcrossReopen) {
  TempDir t;
  std::string err;
  int e;
  std::uint64_t written;
  {
    auto f = ProbeFile::Open(Options(t.path()), &err, &e, &written);
    ASSERT_TRUE(f) << err;
    f->header().budget_day = 20000;
    f->header().budget_used = 123456;
    AlignedBuffer b(kProbeBlock, kProbeBlock);
    ASSERT_EQ(f->SaveHeader(b.data()), 0);
  }
  auto g = ProbeFile::Open(Options(t.path()), &err, &e, &written);
  ASSERT_TRUE(g) << err;
  EXPECT_EQ(written, 0u) << "an existing probe file is reused, not rewritten";
  EXPECT_EQ(g->header().budget_day, 20000u);
  EXPECT_EQ(g->header().budget_used, 123456u);
}

TEST(ProbeFile, OtherSizeOfOurFileIsReplaced) {
  TempDir t;
  std::string err;
  int e;
  std::uint64_t written;
  ASSERT_TRUE(ProbeFile::Open(Options(t.path()), &err, &e, &written));
  auto o = Options(t.path());
  o.size = 2 << 20;
  auto f = ProbeFile::Open(o, &err, &e, &written);
  ASSERT_TRUE(f) << err;
  EXPECT_EQ(written, 2u << 20);
  EXPECT_EQ(fs::file_size(f->path()), 2u << 20);
}

TEST(ProbeFile, RefusesSymlinkedDirectory) {
  TempDir t;
  fs::create_directory(t.path() + "/real");
  fs::create_directory_symlink(t.path() + "/real", t.path() + "/link");
  std::string err;
  int e;
  std::uint64_t written;
  EXPECT_FALSE(ProbeFile::Open(Options(t.path() + "/link"), &err, &e, &written));
  EXPECT_EQ(err, "probe directory " + t.path() + "/link is a symlink; refusing (give the real directory)");
  EXPECT_TRUE(fs::is_empty(t.path() + "/real")) << "nothing written through the link";
}

// A symlink anywhere in the path moves the writes as surely as a symlinked directory: refused,
// and nothing is written where the link points.
TEST(ProbeFile, RefusesASymlinkedParentAndWritesNothingBehindIt) {
  TempDir t;
  fs::create_directories(t.path() + "/real/probe");
  fs::create_directory_symlink(t.path() + "/real", t.path() + "/link");
  const std::string dir = t.path() + "/link/probe";
  const std::string refusal = CheckProbeDirectory(dir);
  EXPECT_NE(refusal.find("its parent " + t.path() + "/link is a symlink; refusing"), std::string::npos) << refusal;
  std::string err;
  int e = 0;
  std::uint64_t w = 0;
  EXPECT_FALSE(ProbeFile::Open(Options(dir), &err, &e, &w));
  EXPECT_NE(err.find("its parent " + t.path() + "/link is a symlink"), std::string::npos) << err;
  EXPECT_EQ(e, EINVAL);
  EXPECT_EQ(w, 0u);
  EXPECT_TRUE(fs::is_empty(t.path() + "/real/probe"));
  // The state directory is created when missing: never through a symlinked parent either.
  ProbeFileOptions o = Options(t.path() + "/link/state/sub");
  o.create_directory = true;
  EXPECT_FALSE(ProbeFile::Open(o, &err, &e, &w));
  EXPECT_NE(err.find("is a symlink"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(t.path() + "/real/state"));
}

// The no-follow open itself, whatever the advisory check said: openat2 (create = false) and the
// per-component walk (create = true, which always walks).
TEST(ProbeFile, OpenDirectoryNoFollowRefusesALinkInAnyComponent) {
  TempDir t;
  fs::create_directories(t.path() + "/a/b/c");
  fs::create_directory_symlink(t.path() + "/a/b", t.path() + "/a/l");
  for (bool create : {false, true}) {
    std::string err;
    int e = 0;
    EXPECT_TRUE(OpenDirectoryNoFollow(t.path() + "/a/b/c", create, &err, &e).valid()) << err;
    Fd fd = OpenDirectoryNoFollow(t.path() + "/a/l/c", create, &err, &e);
    EXPECT_FALSE(fd.valid()) << "create " << create;
    EXPECT_EQ(e, EINVAL);
    EXPECT_NE(err.find("its parent " + t.path() + "/a/l is a symlink"), std::string::npos) << err;
    fd = OpenDirectoryNoFollow(t.path() + "/a/l", create, &err, &e);
    EXPECT_FALSE(fd.valid());
    EXPECT_NE(err.find(t.path() + "/a/l is a symlink; refusing"), std::string::npos) << err;
  }
  std::string err;
  int e = 0;
  EXPECT_TRUE(OpenDirectoryNoFollow(t.path() + "/a/new/deeper", true, &err, &e).valid()) << err;
  struct stat st {};
  ASSERT_EQ(::stat((t.path() + "/a/new/deeper").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// Two probers on one file (a thread still finishing on a disk that went away and the new one,
// or two exporters) would write and count the same blocks: the second is refused while the
// first holds it, and gets it afterwards.
TEST(ProbeFile, ASecondOpenOfTheSameFileIsRefusedWhileTheFirstHoldsIt) {
  TempDir t;
  std::string err;
  int e = 0;
  std::uint64_t w = 0;
  auto first = ProbeFile::Open(Options(t.path()), &err, &e, &w);
  ASSERT_TRUE(first) << err;
  EXPECT_FALSE(ProbeFile::Open(Options(t.path()), &err, &e, &w));
  EXPECT_EQ(e, EBUSY);
  EXPECT_NE(err.find("is in use by another prober"), std::string::npos) << err;
  EXPECT_EQ(err.find("File exists"), std::string::npos) << err;
  first.reset();
  EXPECT_TRUE(ProbeFile::Open(Options(t.path()), &err, &e, &w)) << err;
}

// The disk that held the directory is gone while its filesystem stays mounted (a USB disk
// pulled): refused with ENODEV before anything is created, instead of creating a probe file on a
// dead filesystem. A sysfs root without the filesystem's device number stands for the vanished disk.
TEST(ProbeFile, ADirectoryWhoseDiskVanishedIsRefusedBeforeCreating) {
  TempDir t, sys;
  fs::create_directories(sys.path() + "/dev/block");
  fs::create_directories(t.path() + "/probe");
  struct stat st {};
  ASSERT_EQ(::stat(t.path().c_str(), &st), 0);
  ProbeFileOptions o = Options(t.path() + "/probe");
  o.sysfs = sys.path();
  o.expected_disk = "sdz";
  std::string err;
  int e = 0;
  std::uint64_t w = 0;
  EXPECT_FALSE(ProbeFile::Open(o, &err, &e, &w));
  if (major(st.st_dev) != 0) {
    EXPECT_EQ(e, ENODEV);
    EXPECT_EQ(ErrorReason(e), "enodev");
    EXPECT_NE(err.find("the disk that held probe directory " + t.path() + "/probe (block device " +
                       std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) + ", sdz) is gone"),
              std::string::npos)
        << err;
  } else {
    // An anonymous-device /tmp (tmpfs, overlay): not a vanished disk, a directory on no disk.
    EXPECT_EQ(e, EINVAL);
    EXPECT_NE(err.find("is now on disk \"\", not sdz"), std::string::npos) << err;
  }
  EXPECT_EQ(w, 0u);
  EXPECT_TRUE(fs::is_empty(t.path() + "/probe")) << "nothing created on the dead filesystem";
  // On the disk it should be: opens.
  fs::create_directories(sys.path() + "/block/sdz");
  fs::create_directory_symlink(
      sys.path() + "/block/sdz",
      sys.path() + "/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)));
  EXPECT_TRUE(ProbeFile::Open(o, &err, &e, &w)) << err;
}

TEST(ProbeFile, RefusesSymlinkedFileAndLeavesTargetUntouched) {
  TempDir t;
  const std::string target = t.path() + "/precious";
  std::ofstream(target) << "do not touch";
  fs::create_symlink(target, t.path() + "/" + kProbeFileName);
  std::string err;
  int e;
  std::uint64_t written;
  EXPECT_FALSE(ProbeFile::Open(Options(t.path()), &err, &e, &written));
  EXPECT_EQ(err, "probe file " + t.path() + "/" + kProbeFileName + " is a symlink; refusing to follow it");
  EXPECT_EQ(Slurp(target), "do not touch");
  EXPECT_EQ(written, 0u);
}

TEST(ProbeFile, RefusesAFileThatIsNotOurs) {
  TempDir t;
  const std::string p = t.path() + "/" + kProbeFileName;
  std::string content(8192, 'x');
  std::ofstream(p) << content;
  std::string err;
  int e;
  std::uint64_t written;
  EXPECT_FALSE(ProbeFile::Open(Options(t.path()), &err, &e, &written));
  EXPECT_EQ(err, "file " + p + " exists and is not a diskprobe probe file; refusing to overwrite it");
  EXPECT_EQ(Slurp(p), content);
}

TEST(ProbeFile, RefusesAHardLinkedFile) {
  TempDir t;
  std::string err;
  int e;
  std::uint64_t written;
  ASSERT_TRUE(ProbeFile::Open(Options(t.path()), &err, &e, &written));
  fs::create_hard_link(t.path() + "/" + kProbeFileName, t.path() + "/other-name");
  EXPECT_FALSE(ProbeFile::Open(Options(t.path()), &err, &e, &written));
  EXPECT_EQ(err, "probe file " + t.path() + "/" + kProbeFileName +
                     " has other links or another owner; refusing to write to it");
}

TEST(ProbeFile, RefusesADeviceAsDirectory) {
  // /dev/null is a character device everywhere; the rule is the same for block devices.
  std::string err;
  int e;
  std::uint64_t written;
  EXPECT_FALSE(ProbeFile::Open(Options("/dev/null"), &err, &e, &written));
  EXPECT_EQ(err, "probe directory /dev/null is a device; refusing: the probes never write to a device");
}

TEST(ProbeFile, CreatesTheStateDirectory0700) {
  TempDir t;
  auto o = Options(t.path() + "/var/lib/diskprobe_exporter");
  o.create_directory = true;
  std::string err;
  int e;
  std::uint64_t written;
  ASSERT_TRUE(ProbeFile::Open(o, &err, &e, &written)) << err;
  EXPECT_EQ(fs::status(o.directory).permissions(), fs::perms::owner_all);
  o.directory = t.path() + "/not-created";
  o.create_directory = false;
  EXPECT_FALSE(ProbeFile::Open(o, &err, &e, &written));
  EXPECT_EQ(e, ENOENT);
}

TEST(ProbeFile, RefusesWhenFreeSpaceWouldFallUnderTheFloor) {
  TempDir t;
  auto o = Options(t.path());
  o.free_space_floor = ~0ull >> 2;  // far more than any test filesystem has
  o.free_space_floor_ratio = 1.0;
  std::string err;
  int e;
  std::uint64_t written;
  EXPECT_FALSE(ProbeFile::Open(o, &err, &e, &written));
  EXPECT_EQ(e, ENOSPC);
  EXPECT_FALSE(fs::exists(t.path() + "/" + kProbeFileName));
}

TEST(ProbeFile, HeaderRoundTripAndRejects) {
  AlignedBuffer b(kProbeBlock, kProbeBlock);
  ProbeFileHeader h{16 << 20, 20422, 98304, 77};
  EncodeHeader(h, b.data());
  ProbeFileHeader back;
  ASSERT_TRUE(DecodeHeader(b.data(), &back));
  EXPECT_EQ(back.file_size, h.file_size);
  EXPECT_EQ(back.budget_day, h.budget_day);
  EXPECT_EQ(back.budget_used, h.budget_used);
  EXPECT_EQ(back.sequence, h.sequence);
  b.data()[3] ^= 1;
  EXPECT_FALSE(DecodeHeader(b.data(), &back));
}

TEST(FreeSpaceFloor, SmallerOfBytesAndRatio) {
  EXPECT_EQ(FreeSpaceFloor(64ull << 30, 256ull << 20, 0.05), 256ull << 20);  // 5 % of 64 GiB is more
  EXPECT_EQ(FreeSpaceFloor(1ull << 30, 256ull << 20, 0.05), 53687091u);      // 5 % of 1 GiB is less
}

TEST(RandomOffsets, DistinctAlignedInRange) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 100; ++round) {
    auto offs = RandomOffsets(rng, 1 << 20, 4096, 4096, 16);
    ASSERT_EQ(offs.size(), 16u);
    std::set<std::uint64_t> seen(offs.begin(), offs.end());
    EXPECT_EQ(seen.size(), 16u) << "no offset reused within a run";
    for (auto o : offs) {
      EXPECT_EQ(o % 4096, 0u);
      EXPECT_LE(o + 4096, 1u << 20);
    }
  }
  EXPECT_EQ(RandomOffsets(rng, 3 * 4096, 4096, 4096, 16).size(), 3u) << "capped at the slots that exist";
  EXPECT_TRUE(RandomOffsets(rng, 100, 4096, 4096, 1).empty());
}

TEST(RandomOffsets, CoverTheWholeRange) {
  // Uniform across the device: over many draws both ends of a 1 GiB device are reached.
  std::mt19937_64 rng(7);
  std::uint64_t lo = ~0ull, hi = 0;
  for (int i = 0; i < 200; ++i)
    for (auto o : RandomOffsets(rng, 1ull << 30, 4096, 4096, 16)) {
      lo = std::min(lo, o);
      hi = std::max(hi, o);
    }
  EXPECT_LT(lo, (1ull << 30) / 100);
  EXPECT_GT(hi, (1ull << 30) / 100 * 99);
}

TEST(Runners, RandReadAndWriteOnFiles) {
  TempDir t;
  std::string err;
  int e;
  std::uint64_t written;
  auto f = ProbeFile::Open(Options(t.path()), &err, &e, &written);
  ASSERT_TRUE(f) << err;
  std::mt19937_64 rng(1);
  std::atomic<std::int64_t> started{0};
  ProbeStats stats;
  config::ProbeSettings s;
  s.ops = 8;
  s.block_size = 4096;
  std::uint64_t budget_taken = 0;
  RunEnv env{s,
             &started,
             10'000'000'000,
             rng,
             [&](double secs) { stats.Observe(secs); },
             [&](std::uint64_t b) {
               budget_taken += b;
               return true;
             }};
  RunOutcome w = RunWrite(*f, env);
  EXPECT_EQ(w.error, 0);
  EXPECT_EQ(w.ops, 8u);
  EXPECT_EQ(w.bytes, 8u * 4096);
  EXPECT_EQ(budget_taken, 8u * 4096);
  EXPECT_EQ(stats.count, 8u);
  EXPECT_EQ(started.load(), 0) << "no operation left marked as running";

  RunOutcome r = RunRandRead(f->sync_fd(), false, fs::file_size(f->path()), 4096, env);
  EXPECT_EQ(r.error, 0);
  EXPECT_EQ(r.ops, 8u);
  EXPECT_EQ(stats.count, 16u);

  // The budget refuses: the write does not start.
  env.take_budget = [](std::uint64_t) { return false; };
  RunOutcome refused = RunFsync(*f, env);
  EXPECT_TRUE(refused.budget_exhausted);
  EXPECT_EQ(refused.ops, 0u);
}

TEST(Runners, AFailingOperationStopsTheRunWithItsErrno) {
  std::mt19937_64 rng(1);
  std::atomic<std::int64_t> started{0};
  config::ProbeSettings s;
  s.ops = 4;
  s.block_size = 4096;
  RunEnv env{s, &started, 10'000'000'000, rng, [](double) {}, [](std::uint64_t) { return true; }};
  int fd = ::open("/dev/null", O_WRONLY);  // reads fail with EBADF
  RunOutcome r = RunRandRead(fd, false, 1 << 20, 4096, env);
  ::close(fd);
  EXPECT_EQ(r.error, EBADF);
  EXPECT_EQ(r.ops, 0u);
}

TEST(ProbeStats, BucketsAndErrorClasses) {
  ProbeStats s;
  s.Observe(0.00004);  // <= 50 us
  s.Observe(0.0021);   // (2 ms, 5 ms]
  s.Observe(45);       // beyond 30 s: only in count and sum
  EXPECT_EQ(s.buckets[0], 1u);
  EXPECT_EQ(s.buckets[6], 1u);
  EXPECT_EQ(s.count, 3u);
  EXPECT_DOUBLE_EQ(s.sum_seconds, 45.00214);
  s.CountError(EIO);
  s.CountError(EROFS);
  s.CountError(EPERM);
  s.CountError(ETIMEDOUT);
  EXPECT_EQ(s.errors, (std::array<std::uint64_t, 6>{1, 0, 1, 1, 0, 1}));
  // A device that went away is its own class, not "other".
  s.CountError(ENODEV);
  s.CountError(ENXIO);
  s.CountError(ENOMEDIUM);
  s.CountError(EEXIST);
  EXPECT_EQ(s.errors, (std::array<std::uint64_t, 6>{1, 0, 1, 1, 3, 2}));
  EXPECT_EQ(kErrorReasons[4], "enodev");
}

}  // namespace
}  // namespace diskprobe::probes

namespace diskprobe::probes {
namespace {

TEST(Crc32c, KnownVector) {
  // RFC 3720 B.4 / the usual check value: CRC32C("123456789") = 0xE3069283.
  const unsigned char s[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(Crc32c(s, sizeof s), 0xE3069283u);
}

class VerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    int e;
    std::uint64_t written;
    file_ = ProbeFile::Open(Options(dir_.path()), &err, &e, &written);
    ASSERT_TRUE(file_) << err;
    settings_.ops = 8;
    settings_.block_size = 4096;
  }
  RunEnv Env() {
    return RunEnv{settings_, &started_, 10'000'000'000, rng_, [](double) {}, [](std::uint64_t) { return true; }};
  }
  TempDir dir_;
  std::unique_ptr<ProbeFile> file_;
  config::ProbeSettings settings_;
  std::mt19937_64 rng_{3};
  std::atomic<std::int64_t> started_{0};
};

TEST_F(VerifyTest, IntactFileVerifiesClean) {
  RunEnv env = Env();
  RunOutcome w = RunWrite(*file_, env);
  ASSERT_EQ(w.ops, 8u);
  ASSERT_EQ(file_->recent().size(), 8u);
  RunOutcome v = RunVerify(*file_, env);
  EXPECT_EQ(v.error, 0);
  EXPECT_EQ(v.ops, 8u);
  EXPECT_TRUE(v.corruptions.empty()) << v.corruptions[0].problem;
}

TEST_F(VerifyTest, FlippedByteThroughAnotherDescriptorIsFound) {
  RunEnv env = Env();
  ASSERT_EQ(RunWrite(*file_, env).ops, 8u);
  const std::uint64_t victim = file_->recent().front().first * kProbeBlock;
  {
    // Invert the byte (a fixed value would equal the random payload one time in 256).
    std::fstream f(file_->path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(victim + 1000));
    char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(victim + 1000));
    f.put(static_cast<char>(~c));
  }
  RunOutcome v = RunVerify(*file_, env);
  ASSERT_EQ(v.corruptions.size(), 1u);
  EXPECT_EQ(v.corruptions[0].offset, victim);
  EXPECT_EQ(v.corruptions[0].problem, "CRC32C mismatch");
}

TEST_F(VerifyTest, ALostWriteShowsAsAnOlderSequence) {
  RunEnv env = Env();
  ASSERT_EQ(RunWrite(*file_, env).ops, 8u);
  const auto [index, seq] = file_->recent().front();
  // Put back what the block held before the probe wrote it: a valid block with an older sequence,
  // exactly what a card that acknowledged the write but dropped it returns.
  AlignedBuffer old(kProbeBlock, kProbeBlock);
  std::uint64_t saved_seq = file_->header().sequence;
  file_->header().sequence = seq - 100;
  file_->StampBlock(old.data(), index);
  file_->header().sequence = saved_seq;
  ASSERT_EQ(::pwrite(file_->sync_fd(), old.data(), kProbeBlock, static_cast<off_t>(index * kProbeBlock)),
            static_cast<ssize_t>(kProbeBlock));
  ::fdatasync(file_->sync_fd());
  RunOutcome v = RunVerify(*file_, env);
  ASSERT_EQ(v.corruptions.size(), 1u);
  EXPECT_EQ(v.corruptions[0].problem,
            "sequence " + std::to_string(seq - 99) + ", expected " + std::to_string(seq) + " (a lost write)");
}

TEST(CheckBlock, WrongOffsetAndMagic) {
  TempDir t;
  std::string err;
  int e;
  std::uint64_t written;
  auto f = ProbeFile::Open(Options(t.path()), &err, &e, &written);
  ASSERT_TRUE(f);
  AlignedBuffer b(kProbeBlock, kProbeBlock);
  f->StampBlock(b.data(), 5);
  EXPECT_EQ(CheckBlock(b.data(), 5, std::nullopt), "");
  EXPECT_EQ(CheckBlock(b.data(), 6, std::nullopt), "offset field 20480, expected 24576");
  b.data()[0] = 'X';
  EXPECT_EQ(CheckBlock(b.data(), 5, std::nullopt), "bad block magic");
}

}  // namespace
}  // namespace diskprobe::probes
