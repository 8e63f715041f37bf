#include "probes/env.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cerrno>

#include "parsers/block_stat.h"
#include "util/file.h"

namespace diskprobe::probes {
namespace {

class RealEnv : public Env {
 public:
  RealEnv(std::string devfs, std::string lock_directory)
      : devfs_(std::move(devfs)), lock_directory_(std::move(lock_directory)) {}

  Clock::time_point Now() const override { return Clock::now(); }

  double UnixSeconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }

  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Clock::time_point deadline,
                 const std::function<bool()>& wake) override {
    // time_point::max() means no deadline (a worker with nothing scheduled); passed on, it would
    // overflow the conversion to the kernel's timespec.
    if (deadline == Clock::time_point::max()) {
      cv.wait(lock, wake);
      return true;
    }
    return cv.wait_until(lock, deadline, wake);
  }

  OpenedDevice OpenDevice(const Device& device) override {
    OpenedDevice d;
    const std::string node = util::JoinPath(devfs_, device.name);
    int fd = ::open(node.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
      d.direct = false;
      fd = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
      d.error = errno;
      return d;
    }
    d.opened = true;
    Fd guard(fd);
    struct stat st {};
    ::fstat(fd, &st);
    if (!S_ISBLK(st.st_mode) || major(st.st_rdev) != device.major || minor(st.st_rdev) != device.minor) {
      d.refusal = node + " is not block device " + std::to_string(device.major) + ":" + std::to_string(device.minor) +
                  "; not reading it";
      return d;
    }
    if (::ioctl(fd, BLKGETSIZE64, &d.bytes) != 0) {
      d.error = errno;
      return d;
    }
    // A disk that went away often keeps its node, which still opens, with size 0 (a detached loop
    // device, a card reader without its card): ENXIO, the device is gone. Never errno here: the
    // ioctl succeeded, and errno would be whatever failed last on this thread (EEXIST from the
    // bench lock's mkdir of an existing directory, logged as "File exists", counted as "other").
    if (d.bytes == 0) {
      d.error = ENXIO;
      return d;
    }
    ::ioctl(fd, BLKSSZGET, &d.logical_block);
    d.fd = std::move(guard);
    return d;
  }

  std::string LockDirectory() const override { return lock_directory_; }

  std::optional<std::uint64_t> IoTicks(const Device& device) override {
    auto f = util::ReadAttribute(device.sysfs_path + "/stat");
    if (!f.ok()) return std::nullopt;
    auto s = parsers::ParseBlockStat(f.text);
    if (!s) return std::nullopt;
    return s->io_ticks_ms;
  }

  std::thread StartThread(const std::string&, std::function<void()> fn) override { return std::thread(std::move(fn)); }

 private:
  const std::string devfs_, lock_directory_;
};

}  // namespace

std::shared_ptr<Env> Env::Real(std::string devfs, std::string lock_directory) {
  return std::make_shared<RealEnv>(std::move(devfs), std::move(lock_directory));
}

}  // namespace diskprobe::probes
