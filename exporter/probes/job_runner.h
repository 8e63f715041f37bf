#pragma once
// One job of a disk's worker: open its target (the raw device through the Env, or the probe file
// in its directory), run the kind's runner (probes/kinds.h), and classify the outcome into a
// RunResult and a statistics delta for the worker to publish. Owns what outlives a run on that
// disk: the open probe files, the write budget, and which errors were already logged.
//
// Not thread-safe: one per worker, used by the worker's thread only.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "config/config.h"
#include "probes/env.h"
#include "probes/probe_file.h"
#include "probes/runners.h"
#include "probes/stats.h"
#include "probes/write_budget.h"
#include "sources/device_registry.h"

namespace diskprobe::probes {

// One scheduled probe: a kind, and for probe-file kinds the directory of its file ("" else).
struct Job {
  config::ProbeKind kind;
  std::string dir;
  bool operator<(const Job& o) const { return std::tie(kind, dir) < std::tie(o.kind, o.dir); }
  bool operator==(const Job&) const = default;
};

// Everything a disk's worker needs to know; replaced as a whole on a change.
struct WorkerPlan {
  Device device;
  std::shared_ptr<const config::Config> cfg;
  bool read_probes = false;                            // raw-device kinds may run (the disk is monitored)
  std::vector<std::string> write_dirs;                 // probe directories on this disk
  bool operator==(const WorkerPlan&) const = default;  // cfg by identity: a reload is a change
};

// What one job produced.
struct JobResult {
  bool ran = true;  // false: nothing to record (verify before any file exists)
  RunResult result = RunResult::kOk;
  ProbeStats delta;                               // merged into the published statistics
  std::optional<RunOutcome> outcome;              // a completed run: sets the last-run figures
  double duration = 0;                            // wall seconds of the job
  int direct = -1;                                // 1 O_DIRECT, 0 buffered, -1 not known
  std::optional<bool> dir_ok;                     // new state of the job's directory
  std::optional<std::uint64_t> budget_remaining;  // new remaining write budget of the disk
};

// The result of a run's outcome: corruption or a failed operation is an error, then a slow
// operation a timeout, a run whose first write the budget refused skipped_budget, else ok.
RunResult Classify(const RunOutcome& out);

class JobRunner {
 public:
  JobRunner(std::shared_ptr<Env> env, std::string sysfs, std::string device);

  // Runs `job` under `plan`. `op_started_ns` is the worker's stall marker (Env::NowNs() while an
  // operation runs, else 0); an operation slower than `deadline_ns` ends the run as a timeout.
  JobResult Run(const WorkerPlan& plan, const Job& job, std::atomic<std::int64_t>* op_started_ns,
                std::int64_t deadline_ns, std::mt19937_64& rng);

  // Closes every probe file (the worker is stopping).
  void CloseFiles();

  // The remaining write budget today under `limit` (for a plan's first publication).
  std::uint64_t BudgetRemaining(std::uint64_t limit) { return budget_.Remaining(env_->UtcDay(), limit); }

 private:
  void RunRawDevice(const WorkerPlan& plan, const Job& job, RunEnv& env, JobResult* r);
  void RunProbeFile(const WorkerPlan& plan, const Job& job, RunEnv& env, JobResult* r);
  // Classifies `out` into *r, logging what changed, and counts its bytes.
  void Finish(const Job& job, const RunOutcome& out, JobResult* r);
  // Logs a job's error once per change of reason; "" records a recovery.
  void NoteError(const Job& job, const std::string& reason);
  void CloseFile(const std::string& dir);

  const std::shared_ptr<Env> env_;
  const std::string sysfs_, device_;
  std::map<std::string, std::unique_ptr<ProbeFile>> files_;  // by directory
  WriteBudget budget_;
  std::map<std::string, std::string> last_error_;                     // "kind|dir" -> reason logged
  std::set<std::pair<std::string, std::uint64_t>> reported_corrupt_;  // (directory, offset)
  std::set<config::ProbeKind> logged_buffered_;
};

}  // namespace diskprobe::probes
