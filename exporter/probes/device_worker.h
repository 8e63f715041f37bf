#pragma once
// One monitored disk's probe thread: runs that disk's jobs one at a time in due order, at
// jittered intervals, after a busy check (io_ticks over busy_window) and the bench lock, and
// publishes the results as snapshots a scrape copies without waiting on any I/O.
//
// Stalls: while an operation has been running for longer than op_deadline, the snapshot says
// stalled; nothing else starts on the disk until it returns (the thread is the one waiting).
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "probes/env.h"
#include "probes/job_runner.h"
#include "probes/stats.h"
#include "sources/device_registry.h"

namespace diskprobe {

// A scrape's copy of one disk's probe state.
struct DeviceProbeSnapshot {
  std::string device;
  std::map<config::ProbeKind, probes::ProbeStats> probes;  // the kinds scheduled on this disk
  bool stalled = false;
  std::optional<std::uint64_t> write_budget_remaining;  // set when write probes run here
};

// State of a configured write directory.
struct DirectorySnapshot {
  std::string directory;
  std::string device;  // disk holding it, "" when unknown
  bool ok = false;     // the probe file is open and usable
  bool operator==(const DirectorySnapshot&) const = default;
};

namespace probes {

// The jobs `plan` schedules: each enabled raw-device kind once (when read_probes), each enabled
// probe-file kind once per write directory; in kind order.
std::vector<Job> PlanJobs(const WorkerPlan& plan);

// A job's first due time: uniformly within one interval after `now`, so a fleet (or every
// exporter restarted at once) never probes in lockstep.
Env::Clock::time_point FirstDue(Env::Clock::time_point now, std::chrono::milliseconds interval, std::mt19937_64& rng);
// interval x (1 + u), u uniform in [-jitter, jitter].
std::chrono::nanoseconds JitteredPeriod(std::chrono::milliseconds interval, double jitter, std::mt19937_64& rng);
// The next due time of a job that started at `started` and ended at `ended`: one period after its
// start, but at least half a period after its end (a run slower than its interval, a dying card,
// is followed by rest rather than back-to-back runs).
Env::Clock::time_point NextDue(Env::Clock::time_point started, Env::Clock::time_point ended,
                               std::chrono::nanoseconds period);

class DeviceWorker {
 public:
  // `generation` is bumped on every published change (shared with the manager: a stalled worker
  // may outlive it).
  DeviceWorker(std::shared_ptr<Env> env, std::string sysfs, WorkerPlan plan,
               std::shared_ptr<std::atomic<std::uint64_t>> generation);

  // Starts the thread through the Env; it holds `self`, so a stalled thread never touches freed
  // memory. Throws std::system_error when no thread can be created.
  void Start(std::shared_ptr<DeviceWorker> self);
  // A new plan (config reload, write directories moved): due times of jobs that remain are kept.
  void SetPlan(WorkerPlan plan);
  void RequestStop();
  bool Done() const { return done_.load(); }
  // Joins a finished thread, detaches a stuck one.
  void JoinOrDetach();

  const Device& device() const { return device_; }
  DeviceProbeSnapshot Snapshot() const;
  bool IsStalled() const;
  std::vector<DirectorySnapshot> Directories() const;

 private:
  void Run();        // the thread's loop, until RequestStop()
  void InitStats();  // mu_ held
  void Bump() { generation_->fetch_add(1, std::memory_order_acq_rel); }
  bool StalledLocked() const;
  // Waits `d` unless stopped; false when stopped.
  bool SleepFor(std::chrono::milliseconds d);
  // io_ticks utilisation over busy_window; nullopt when stopped.
  std::optional<double> Utilisation(const WorkerPlan& plan);
  void RunJob(const WorkerPlan& plan, const Job& job);
  void Publish(const Job& job, const JobResult& r);

  const std::shared_ptr<Env> env_;
  const Device device_;  // a worker serves one device instance for its whole life
  mutable std::mutex mu_;
  std::condition_variable cv_;
  WorkerPlan plan_;
  bool plan_changed_ = false;
  bool stop_ = false;
  std::map<config::ProbeKind, ProbeStats> stats_;
  std::map<std::string, bool> dir_ok_;
  std::uint64_t budget_remaining_ = 0;
  bool budget_known_ = false;
  std::int64_t deadline_ns_ = 0;
  std::atomic<std::int64_t> op_started_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
  std::shared_ptr<std::atomic<std::uint64_t>> generation_;
  // Owned by the worker thread.
  std::mt19937_64 rng_;
  JobRunner runner_;
};

}  // namespace probes
}  // namespace diskprobe
