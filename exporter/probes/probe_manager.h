#pragma once
// When the probes run: one thread per monitored disk runs that disk's probes one at a time, at
// jittered intervals, after a busy check and within the write budget; results are published as
// snapshots that scrapes copy without waiting on any I/O.
//
// Stalls: while an operation has been running for longer than op_deadline, the device's snapshot
// says stalled; nothing else starts on that disk until the operation returns (the disk's thread
// is the one waiting). Shutdown does not wait for a stalled operation: Stop() gives up after its
// timeout and leaves the thread behind (the process then exits).
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "sources/device_registry.h"
#include "probes/stats.h"

namespace diskprobe {

class DeviceWorker;

// A scrape's copy of one disk's probe state.
struct DeviceProbeSnapshot {
  std::string device;
  std::map<config::ProbeKind, probes::ProbeStats> probes;  // the kinds scheduled on this disk
  bool stalled = false;
  std::optional<std::uint64_t> write_budget_remaining;      // set when write probes run here
};

// State of a configured write directory.
struct DirectorySnapshot {
  std::string directory;
  std::string device;  // disk holding it, "" when unknown
  bool ok = false;     // the probe file is open and usable
};

class ProbeManager {
 public:
  // `sysfs` resolves directories to disks and is where io_ticks is read; `devfs` holds the
  // block device nodes (/dev).
  ProbeManager(std::string sysfs, std::string devfs, DeviceRegistry* devices);
  ~ProbeManager();
  ProbeManager(const ProbeManager&) = delete;
  ProbeManager& operator=(const ProbeManager&) = delete;

  // Starts the supervisor, which follows device changes and config changes.
  void Start(std::shared_ptr<const config::Config> cfg);
  // A new configuration (SIGHUP): applied to every disk's thread at once.
  void Reconfigure(std::shared_ptr<const config::Config> cfg);
  // Stops every thread; waits at most `timeout`. false: a thread is stuck in an operation.
  bool Stop(std::chrono::milliseconds timeout);

  std::vector<DeviceProbeSnapshot> Snapshot() const;
  // Just the stall state per device (cheap: no copy of the statistics).
  std::vector<std::pair<std::string, bool>> Stalled() const;
  // Changes whenever any published probe result, plan or directory state changes (not with the
  // passage of time: `stalled` is computed at snapshot time). Lets scrapes reuse rendered text.
  std::uint64_t Generation() const { return generation_->load(std::memory_order_acquire); }
  std::vector<DirectorySnapshot> Directories() const;

 private:
  void SupervisorLoop();
  void Reconcile();

  const std::string sysfs_, devfs_;
  DeviceRegistry* registry_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const config::Config> cfg_;
  bool stop_ = false;
  bool dirty_ = false;
  std::thread supervisor_;
  std::map<std::string, std::shared_ptr<DeviceWorker>> workers_;  // by disk name
  std::vector<std::shared_ptr<DeviceWorker>> retired_;              // stopping, not yet joined
  std::vector<DirectorySnapshot> unresolved_;                       // write dirs with no disk
  std::shared_ptr<const DeviceList> last_devices_;
  std::shared_ptr<const config::Config> last_cfg_;
  // Shared with the workers (a stalled worker may outlive the manager).
  std::shared_ptr<std::atomic<std::uint64_t>> generation_ = std::make_shared<std::atomic<std::uint64_t>>(1);
};

}  // namespace diskprobe
