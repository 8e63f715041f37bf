#pragma once
// Random 4 KiB I/O at a queue depth above 1 through io_uring (liburing): the A1/A2 test's role.
// Source: io_uring_setup(2), liburing's io_uring_prep_read/write; the kernel may refuse io_uring
// (kernel.io_uring_disabled sysctl, seccomp in containers: EPERM/ENOSYS), which is reported.
#include <cstdint>
#include <functional>
#include <random>
#include <string>

namespace diskprobe::bench {

struct QueueJob {
  int fd = -1;
  bool write = false;
  std::uint64_t first_block = 0;  // offsets are block_size * [first_block, end_block)
  std::uint64_t end_block = 0;
  std::uint32_t block_size = 4096;
  unsigned depth = 32;
  std::int64_t deadline_ns = 0;  // CLOCK_MONOTONIC: no submission at or after it, the first included
  std::uint64_t max_ops = 0;
  // Writes: fills a buffer before it is submitted (CRC-stamped probe blocks). Not timed apart:
  // it overlaps the in-flight I/O, as a real application's work would.
  std::function<void(unsigned char* buf, std::uint64_t block)> fill;
};

struct QueueResult {
  std::string error;         // "" or what failed; `unavailable` says whether it was io_uring itself
  bool unavailable = false;  // io_uring refused by the kernel
  std::uint64_t ops = 0;     // completed operations
  double seconds = 0;        // wall time from the first submission to the last completion
};

// Keeps `depth` operations in flight at uniformly random aligned offsets until the deadline or
// max_ops, then drains; nothing at all (ops 0) when the deadline has already passed. Checks io_uring first (a refused
// ring is `unavailable`, not an error).
QueueResult RunQueued(const QueueJob& job, std::mt19937_64& rng);

// "" when io_uring can be set up here, else why not.
std::string IoUringAvailable();

}  // namespace diskprobe::bench
