#pragma once
// A per-disk advisory lock shared by the exporter's probe threads and `diskprobe_exporter bench`:
// a bench run and the scheduled probes never measure (or load) the same disk at once.
//
// The lock is flock(2) LOCK_EX on <directory>/<disk>.lock (disk = kernel name of the whole disk,
// "mmcblk0"). flock locks belong to the open file description and vanish when the process dies, so
// a crashed bench never leaves a disk locked. The probe thread takes it non-blocking around each
// run and skips the run when a bench holds it; the bench waits for a running probe to finish.
#include <chrono>
#include <string>

#include "probes/io.h"

namespace diskprobe::probes {

// Where the lock files live: a runtime directory, gone at reboot (systemd RuntimeDirectory=).
inline constexpr const char* kDefaultLockDirectory = "/run/diskprobe_exporter";

class DeviceLock {
 public:
  enum class State {
    kHeld,         // we hold the lock
    kBusy,         // another process holds it (after waiting, when asked to wait)
    kUnavailable,  // no lock file could be opened (directory not creatable, read-only /run ...)
  };

  // Tries to lock `disk`, waiting up to `wait` (0: do not wait) for another holder to let go.
  // Creates `directory` (0755) when missing. Never throws; error() tells why for kUnavailable.
  static DeviceLock Acquire(const std::string& directory, const std::string& disk,
                            std::chrono::milliseconds wait = std::chrono::milliseconds(0));

  State state() const { return state_; }
  bool held() const { return state_ == State::kHeld; }
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  State state_ = State::kUnavailable;
  std::string path_, error_;
  Fd fd_;
};

}  // namespace diskprobe::probes
