#pragma once
// When the probes run: a supervisor follows the device registry and the configuration and keeps
// one DeviceWorker (probes/device_worker.h) per monitored disk, which runs that disk's probes one
// at a time. Results are published as snapshots that scrapes copy without waiting on any I/O.
//
// Shutdown does not wait for a stalled operation: Stop() gives up after its timeout and leaves the
// thread behind (the process then exits). A disk whose thread cannot be created (the unit's
// TasksMax reached) is logged once, listed by Unstarted(), and retried every supervisor tick;
// it never stops the process or the other disks.
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "probes/device_worker.h"
#include "probes/env.h"
#include "sources/device_registry.h"

namespace diskprobe {

class ProbeManager {
 public:
  // `sysfs` resolves directories to disks; `devfs` holds the block device nodes (/dev). Locks
  // with the bench in probes::kDefaultLockDirectory.
  ProbeManager(std::string sysfs, std::string devfs, DeviceRegistry* devices);
  // The same on the given environment (tests: a fake clock, temp directories).
  ProbeManager(std::string sysfs, std::shared_ptr<probes::Env> env, DeviceRegistry* devices);
  ~ProbeManager();
  ProbeManager(const ProbeManager&) = delete;
  ProbeManager& operator=(const ProbeManager&) = delete;

  // Starts the supervisor, which follows device changes and config changes. When its thread
  // cannot be created, logs why and runs no probes (false).
  bool Start(std::shared_ptr<const config::Config> cfg);
  // A new configuration (SIGHUP): applied to every disk's thread at once.
  void Reconfigure(std::shared_ptr<const config::Config> cfg);
  // Asks the supervisor and every disk's thread to end after the operation in progress; returns
  // without waiting, so the process can ask all its components at once (app.cpp).
  void RequestStop();
  // RequestStop, then waits for every thread until `deadline` (real time, steady clock). false: a
  // thread is stuck in an operation and was left running (the caller exits the process).
  bool StopBy(std::chrono::steady_clock::time_point deadline);
  bool Stop(std::chrono::milliseconds timeout) { return StopBy(std::chrono::steady_clock::now() + timeout); }

  std::vector<DeviceProbeSnapshot> Snapshot() const;
  // Just the stall state per device (cheap: no copy of the statistics).
  std::vector<std::pair<std::string, bool>> Stalled() const;
  // Changes whenever any published probe result, plan or directory state changes (not with the
  // passage of time: `stalled` is computed at snapshot time). Lets scrapes reuse rendered text.
  std::uint64_t Generation() const { return generation_->load(std::memory_order_acquire); }
  std::vector<DirectorySnapshot> Directories() const;
  // Disks that should be probed but whose thread could not be created, sorted.
  std::vector<std::string> Unstarted() const;

 private:
  void SupervisorLoop();
  void Reconcile();
  // True the first time `key` is seen by this manager: how a problem is logged once.
  bool FirstTime(const std::string& key) { return logged_.insert(key).second; }

  const std::string sysfs_;
  const std::shared_ptr<probes::Env> env_;
  DeviceRegistry* registry_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const config::Config> cfg_;
  bool stop_ = false;
  bool dirty_ = false;
  std::thread supervisor_;
  std::map<std::string, std::shared_ptr<probes::DeviceWorker>> workers_;  // by disk name
  std::vector<std::shared_ptr<probes::DeviceWorker>> retired_;            // stopping, not yet joined
  std::vector<DirectorySnapshot> unresolved_;                             // write dirs with no disk
  std::set<std::string> unstarted_;                                       // no thread for these disks
  std::set<std::string> logged_;  // problems already logged (directory refusals, thread failures)
  std::shared_ptr<const DeviceList> last_devices_;
  // Shared with the workers (a stalled worker may outlive the manager).
  std::shared_ptr<std::atomic<std::uint64_t>> generation_ = std::make_shared<std::atomic<std::uint64_t>>(1);
};

}  // namespace diskprobe
