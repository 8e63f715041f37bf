#include "probes/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "util/file.h"

namespace diskprobe::probes {

DeviceLock DeviceLock::Acquire(const std::string& directory, const std::string& disk, std::chrono::milliseconds wait) {
  DeviceLock l;
  l.path_ = util::JoinPath(directory, disk + ".lock");
  if (::mkdir(directory.c_str(), 0755) != 0 && errno != EEXIST) {
    l.error_ = "cannot create lock directory " + directory + ": " + std::strerror(errno);
    return l;
  }
  int fd = ::open(l.path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  // A lock file another user made (bench as root, exporter as its service user): flock needs no
  // write access, so a read-only descriptor of an existing file locks as well.
  if (fd < 0 && (errno == EACCES || errno == EROFS)) fd = ::open(l.path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    l.error_ = "cannot open lock file " + l.path_ + ": " + std::strerror(errno);
    return l;
  }
  l.fd_.reset(fd);
  const auto until = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      l.state_ = State::kHeld;
      return l;
    }
    if (errno == EINTR) continue;
    if (errno != EWOULDBLOCK) {
      l.error_ = "cannot lock " + l.path_ + ": " + std::strerror(errno);
      l.fd_.reset();
      return l;
    }
    if (std::chrono::steady_clock::now() >= until) {
      l.state_ = State::kBusy;
      l.fd_.reset();
      return l;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace diskprobe::probes
