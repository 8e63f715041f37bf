// The bench's deep-queue runner (bench/queue.h) on a small file in a temporary directory: it keeps
// to its deadline and its operation budget. Needs io_uring; a kernel that refuses it skips these
// tests outside CI and fails them under CI=true (CI has io_uring: a skip there would hide a failure); under qemu-user
// (cross builds, DISKPROBE_EMULATOR set by tests/CMakeLists.txt) they skip.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <random>
#include <string>

#include "bench/queue.h"
#include "probes/io.h"
#include "test_util.h"

namespace {

using namespace diskprobe::bench;

class BenchQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = IoUringAvailable(); !why.empty()) {
      // qemu-user (the cross builds' CTest emulator) does not implement io_uring: nothing to
      // test there, in CI or not; the native run covers these tests.
      const char* emulator = std::getenv("DISKPROBE_EMULATOR");
      if (emulator != nullptr && *emulator != '\0') GTEST_SKIP() << why << " (under " << emulator << ")";
      DISKPROBE_SKIP_OUTSIDE_CI(why);
    }
    char tmpl[] = "/tmp/diskprobe-bench-queue.XXXXXX";
    fd_ = ::mkstemp(tmpl);
    ASSERT_GE(fd_, 0);
    path_ = tmpl;
    ASSERT_EQ(::ftruncate(fd_, 1 << 20), 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  QueueJob Job() const {
    QueueJob j;
    j.fd = fd_;
    j.first_block = 0;
    j.end_block = (1 << 20) / 4096;
    j.depth = 8;
    return j;
  }
  int fd_ = -1;
  std::string path_;
  std::mt19937_64 rng_{1};
};

// The bench's report: with --duration 1s, every QD1 test was skipped for lack of time while the
// QD32 ones still ran a first batch of `depth` operations.
TEST_F(BenchQueue, NothingSubmittedOnceTheDeadlineHasPassed) {
  QueueJob j = Job();
  j.deadline_ns = diskprobe::probes::MonotonicNs() - 1;
  j.max_ops = 1000;
  QueueResult r = RunQueued(j, rng_);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.ops, 0u);
}

TEST_F(BenchQueue, StopsAtMaxOps) {
  QueueJob j = Job();
  j.deadline_ns = diskprobe::probes::MonotonicNs() + 10'000'000'000;
  j.max_ops = 20;  // not a multiple of the depth
  QueueResult r = RunQueued(j, rng_);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.ops, 20u);
}

}  // namespace
