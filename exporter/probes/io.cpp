#include "probes/io.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <new>

namespace diskprobe::probes {

AlignedBuffer::AlignedBuffer(std::size_t size, std::size_t alignment) : size_(size) {
  if (alignment < 4096) alignment = 4096;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? alignment : size) != 0) throw std::bad_alloc();
  data_ = static_cast<unsigned char*>(p);
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

Fd::~Fd() { reset(); }

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset(o.fd_);
    o.fd_ = -1;
  }
  return *this;
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

OpResult TimedPread(int fd, void* buf, std::size_t len, std::uint64_t offset) {
  OpResult r;
  ssize_t n;
  std::int64_t t0, t1;
  do {
    t0 = MonotonicNs();
    n = ::pread(fd, buf, len, static_cast<off_t>(offset));
    t1 = MonotonicNs();
  } while (n < 0 && errno == EINTR);
  r.latency_ns = t1 - t0;
  if (n < 0) r.error = errno;
  else if (static_cast<std::size_t>(n) != len) r.error = EIO;
  r.bytes = n > 0 ? static_cast<std::size_t>(n) : 0;
  return r;
}

OpResult TimedPwrite(int fd, const void* buf, std::size_t len, std::uint64_t offset) {
  OpResult r;
  ssize_t n;
  std::int64_t t0, t1;
  do {
    t0 = MonotonicNs();
    n = ::pwrite(fd, buf, len, static_cast<off_t>(offset));
    t1 = MonotonicNs();
  } while (n < 0 && errno == EINTR);
  r.latency_ns = t1 - t0;
  if (n < 0) r.error = errno;
  else if (static_cast<std::size_t>(n) != len) r.error = ENOSPC;
  r.bytes = n > 0 ? static_cast<std::size_t>(n) : 0;
  return r;
}

OpResult TimedPwriteFdatasync(int fd, const void* buf, std::size_t len, std::uint64_t offset) {
  OpResult r;
  std::int64_t t0 = MonotonicNs();
  ssize_t n;
  do {
    n = ::pwrite(fd, buf, len, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  int rc = 0;
  if (n >= 0) {
    do {
      rc = ::fdatasync(fd);
    } while (rc < 0 && errno == EINTR);
  }
  std::int64_t t1 = MonotonicNs();
  r.latency_ns = t1 - t0;
  if (n < 0 || rc < 0) r.error = errno;
  else if (static_cast<std::size_t>(n) != len) r.error = ENOSPC;
  r.bytes = n > 0 ? static_cast<std::size_t>(n) : 0;
  return r;
}

void DropCache(int fd, std::uint64_t offset, std::uint64_t len) {
  ::posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
}

int SetThreadIoPriority(IoPriorityClass c) {
  // include/uapi/linux/ioprio.h: class in bits 13-15, data in 0-12; IOPRIO_WHO_PROCESS = 1,
  // and who = 0 means the calling thread.
  constexpr int kWhoProcess = 1;
  constexpr int kClassShift = 13;
  int value;
  switch (c) {
    case IoPriorityClass::kNone: return 0;
    case IoPriorityClass::kBestEffort: value = (2 << kClassShift) | 7; break;  // lowest best-effort level
    case IoPriorityClass::kIdle: value = 3 << kClassShift; break;
    default: return EINVAL;
  }
  if (::syscall(SYS_ioprio_set, kWhoProcess, 0, value) != 0) return errno;
  return 0;
}

std::string_view ErrorReason(int error) {
  switch (error) {
    case EIO: return "eio";
    case ENOSPC:
    case EDQUOT: return "enospc";
    case EACCES:
    case EPERM: return "eacces";
    case EROFS: return "erofs";
    // The device went away: a removed disk's node (ENXIO at open, ENODEV from the block layer and
    // from a filesystem whose disk vanished) or a card reader without its card (ENOMEDIUM).
    case ENODEV:
    case ENXIO:
    case ENOMEDIUM: return "enodev";
    default: return "other";
  }
}

}  // namespace diskprobe::probes
