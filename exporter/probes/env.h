#pragma once
// Everything the probe engine takes from the machine, behind one interface (the leveldb Env /
// ninja DiskInterface pattern): clocks, waits, the device nodes, the bench lock directory,
// io_ticks and thread creation. Env::Real() is the machine; tests give a fake clock and temp
// directories, so the scheduler, workers, jobs and budget run as any user, without devices.
//
// What stays outside: the probe file (probes/probe_file.h) is opened in a directory the
// configuration names and resolved through the ProbeManager's sysfs root, which tests point at a
// fixture tree; the timed system calls (probes/io.h) measure real latency on whatever they get.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "probes/io.h"
#include "sources/device_registry.h"

namespace diskprobe::probes {

// A raw device opened for reading: the job's open step.
struct OpenedDevice {
  Fd fd;
  bool opened = false;      // the node opened (direct is then known), whatever followed
  bool direct = true;       // O_DIRECT (false: the node refused it, buffered reads follow)
  std::uint64_t bytes = 0;  // its size
  int logical_block = 512;  // BLKSSZGET
  int error = 0;            // errno of a failed open or size query (fd then invalid)
  std::string refusal;      // set when the node is not the device (fd then invalid)
};

class Env {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Env() = default;

  // The steady clock all scheduling, stall and busy-window arithmetic uses.
  virtual Clock::time_point Now() const = 0;
  // Unix time, seconds (diskprobe_probe_last_run_timestamp_seconds).
  virtual double UnixSeconds() const = 0;
  // UTC days since 1970-01-01: the write budget's day.
  std::uint64_t UtcDay() const { return static_cast<std::uint64_t>(UnixSeconds()) / 86400; }
  // Now() in nanoseconds, the unit of the runs' stall marker (RunEnv::op_started_ns).
  std::int64_t NowNs() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Now().time_since_epoch()).count();
  }

  // Blocks on `cv` (its `lock` held) until `wake()` is true when notified, or Now() reaches
  // `deadline` (Clock::time_point::max(): none). Returns wake() at the end: true when woken,
  // false when the deadline passed.
  virtual bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Clock::time_point deadline,
                         const std::function<bool()>& wake) = 0;

  // Opens <devfs>/<device.name> read-only (O_DIRECT when the node allows it), checks that it is
  // the block device device.major:device.minor, and reads its size and logical block size.
  virtual OpenedDevice OpenDevice(const Device& device) = 0;
  // Where `diskprobe_exporter bench` takes its per-disk locks (probes/device_lock.h).
  virtual std::string LockDirectory() const = 0;
  // The device's io_ticks (ms busy, <sysfs_path>/stat); nullopt when unreadable.
  virtual std::optional<std::uint64_t> IoTicks(const Device& device) = 0;
  // Starts a thread running `fn`; `name` says what for (a disk's name, "supervisor"). Throws
  // std::system_error when the system refuses one (EAGAIN: the unit's TasksMax or RLIMIT_NPROC).
  virtual std::thread StartThread(const std::string& name, std::function<void()> fn) = 0;

  // The machine: device nodes under `devfs` ("/dev"), locks in `lock_directory`.
  static std::shared_ptr<Env> Real(std::string devfs, std::string lock_directory);
};

}  // namespace diskprobe::probes
