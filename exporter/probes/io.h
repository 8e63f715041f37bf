#pragma once
// Low-level, timed I/O for the probes. Every function here returns an errno instead of throwing;
// times are CLOCK_MONOTONIC around the system call only, in nanoseconds.
//
// Sources: open(2) (O_DIRECT alignment rules: buffer, offset and length aligned to the logical
// block size), ioprio_set(2) and Documentation/block/ioprio.rst, posix_fadvise(2).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace diskprobe::probes {

// A buffer aligned for O_DIRECT (alignment >= 4096 and a multiple of the logical block size).
class AlignedBuffer {
 public:
  AlignedBuffer(std::size_t size, std::size_t alignment);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
};

// An open file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

std::int64_t MonotonicNs();

// Outcome of one timed operation.
struct OpResult {
  int error = 0;  // 0 or errno
  std::int64_t latency_ns = 0;
  std::size_t bytes = 0;  // transferred
};

// pread/pwrite of exactly `len` bytes at `offset`, timed. A short transfer is an error (EIO for
// reads past the end are reported as the kernel gives them).
OpResult TimedPread(int fd, void* buf, std::size_t len, std::uint64_t offset);
OpResult TimedPwrite(int fd, const void* buf, std::size_t len, std::uint64_t offset);
// pwrite (buffered) followed by fdatasync, timed together: the latency a database sees.
OpResult TimedPwriteFdatasync(int fd, const void* buf, std::size_t len, std::uint64_t offset);

// Drops the page cache of [offset, offset+len) so a buffered read goes to the device
// (the fallback when O_DIRECT is refused).
void DropCache(int fd, std::uint64_t offset, std::uint64_t len);

enum class IoPriorityClass { kNone, kBestEffort, kIdle };
// Sets the I/O priority class of the calling thread (ioprio_set(IOPRIO_WHO_PROCESS, 0, ...)).
// Returns 0 or errno. kNone leaves it unchanged. Only I/O schedulers that honour priorities
// (BFQ; mq-deadline since 5.14 for the RT class) act on it; with "none" it has no effect.
int SetThreadIoPriority(IoPriorityClass c);

// Maps an errno to the error classes exported in diskprobe_probe_errors_total{reason}
// (kErrorReasons, probes/stats.h): EIO "eio"; ENOSPC, EDQUOT "enospc"; EACCES, EPERM "eacces";
// EROFS "erofs"; ENODEV, ENXIO, ENOMEDIUM "enodev" (the device is gone); anything else "other".
std::string_view ErrorReason(int error);

}  // namespace diskprobe::probes
