#include "probes/device_worker.h"

#include <algorithm>
#include <cstring>

#include "probes/device_lock.h"
#include "probes/io.h"
#include "util/log.h"

namespace diskprobe::probes {

using config::ProbeKind;
using Clock = Env::Clock;

namespace {

IoPriorityClass ToIoClass(config::IoPriority p) {
  switch (p) {
    case config::IoPriority::kIdle: return IoPriorityClass::kIdle;
    case config::IoPriority::kBestEffort: return IoPriorityClass::kBestEffort;
    case config::IoPriority::kNone: return IoPriorityClass::kNone;
  }
  return IoPriorityClass::kNone;
}

std::chrono::nanoseconds Scaled(std::chrono::milliseconds interval, double f) {
  return std::chrono::nanoseconds(static_cast<std::int64_t>(static_cast<double>(interval.count()) * 1e6 * f));
}

}  // namespace

std::vector<Job> PlanJobs(const WorkerPlan& plan) {
  std::vector<Job> jobs;
  const config::ProbeSet& set = plan.cfg->probes.For(plan.device.name);
  for (const config::ProbeKindRow& row : config::kProbeKindTable) {
    if (!set[row.kind].enabled) continue;
    switch (row.target) {
      case config::ProbeTarget::kProbeFile:
        for (const auto& d : plan.write_dirs) jobs.push_back({row.kind, d});
        break;
      case config::ProbeTarget::kRawDevice:
        if (plan.read_probes) jobs.push_back({row.kind, ""});
        break;
    }
  }
  return jobs;
}

Clock::time_point FirstDue(Clock::time_point now, std::chrono::milliseconds interval, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  return now + Scaled(interval, u(rng));
}

std::chrono::nanoseconds JitteredPeriod(std::chrono::milliseconds interval, double jitter, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-jitter, jitter);
  return Scaled(interval, 1.0 + u(rng));
}

Clock::time_point NextDue(Clock::time_point started, Clock::time_point ended, std::chrono::nanoseconds period) {
  return std::max(started + period, ended + period / 2);
}

DeviceWorker::DeviceWorker(std::shared_ptr<Env> env, std::string sysfs, WorkerPlan plan,
                           std::shared_ptr<std::atomic<std::uint64_t>> generation)
    : env_(env), device_(plan.device), plan_(std::move(plan)), generation_(std::move(generation)),
      runner_(env, std::move(sysfs), device_.name) {
  InitStats();
}

void DeviceWorker::Start(std::shared_ptr<DeviceWorker> self) {
  thread_ = env_->StartThread(device_.name, [self] { self->Run(); });
}

void DeviceWorker::SetPlan(WorkerPlan plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (plan == plan_) return;  // a supervisor pass that changed nothing here: keep the published state
    plan_ = std::move(plan);
    plan_changed_ = true;
    InitStats();
  }
  cv_.notify_all();
}

void DeviceWorker::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void DeviceWorker::JoinOrDetach() {
  if (!thread_.joinable()) return;
  if (done_.load()) thread_.join();
  else thread_.detach();
}

bool DeviceWorker::StalledLocked() const {
  const std::int64_t started = op_started_.load(std::memory_order_acquire);
  return started != 0 && env_->NowNs() - started > deadline_ns_;
}

DeviceProbeSnapshot DeviceWorker::Snapshot() const {
  DeviceProbeSnapshot s;
  std::lock_guard<std::mutex> lock(mu_);
  s.device = plan_.device.name;
  s.probes = stats_;
  s.stalled = StalledLocked();
  if (!plan_.write_dirs.empty()) s.write_budget_remaining = budget_remaining_;
  return s;
}

bool DeviceWorker::IsStalled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return StalledLocked();
}

std::vector<DirectorySnapshot> DeviceWorker::Directories() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<DirectorySnapshot> out;
  for (const auto& d : plan_.write_dirs) {
    auto it = dir_ok_.find(d);
    out.push_back({d, plan_.device.name, it != dir_ok_.end() && it->second});
  }
  return out;
}

// Every scheduled kind has a stats entry (its counters exist from the start, at 0); kinds no
// longer scheduled are dropped.
void DeviceWorker::InitStats() {
  Bump();
  const auto& p = plan_.cfg->probes;
  deadline_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(p.op_deadline).count();
  std::map<ProbeKind, ProbeStats> next;
  for (const Job& j : PlanJobs(plan_)) {
    auto it = stats_.find(j.kind);
    next[j.kind] = it != stats_.end() ? it->second : ProbeStats{};
  }
  stats_ = std::move(next);
  if (!plan_.write_dirs.empty() && !budget_known_) budget_remaining_ = p.write_budget_per_day;
}

void DeviceWorker::Run() {
  WorkerPlan plan;
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan = plan_;
  }
  if (int e = SetThreadIoPriority(ToIoClass(plan.cfg->probes.io_priority)); e != 0)
    log::Warn("cannot set the probes' I/O priority", {{"device", device_.name}, {"err", std::strerror(e)}});
  rng_.seed(std::random_device{}() ^ static_cast<std::uint64_t>(MonotonicNs()));
  std::map<Job, Clock::time_point> next;
  std::unique_lock<std::mutex> lock(mu_);
  const auto woken = [this] { return stop_ || plan_changed_; };
  while (!stop_) {
    plan = plan_;
    plan_changed_ = false;
    // Reschedule: jobs that remain keep their due times, new ones start within one interval.
    std::map<Job, Clock::time_point> fresh;
    const auto now = env_->Now();
    for (const Job& j : PlanJobs(plan)) {
      auto it = next.find(j);
      fresh[j] =
          it != next.end() ? it->second : FirstDue(now, plan.cfg->probes.For(plan.device.name)[j.kind].interval, rng_);
    }
    next = std::move(fresh);
    if (next.empty()) {
      env_->WaitUntil(lock, cv_, Clock::time_point::max(), woken);
      continue;
    }
    auto due = std::min_element(next.begin(), next.end(), [](auto& a, auto& b) { return a.second < b.second; });
    if (env_->WaitUntil(lock, cv_, due->second, woken)) continue;
    const Job job = due->first;
    const auto started = env_->Now();
    lock.unlock();
    RunJob(plan, job);
    lock.lock();
    // The interval counts from the start of the run (busy check included), so the period is the
    // configured one.
    const auto& p = plan.cfg->probes;
    next[job] =
        NextDue(started, env_->Now(), JitteredPeriod(p.For(plan.device.name)[job.kind].interval, p.jitter, rng_));
  }
  lock.unlock();
  runner_.CloseFiles();
  done_.store(true);
}

bool DeviceWorker::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !env_->WaitUntil(lock, cv_, env_->Now() + d, [this] { return stop_; });
}

std::optional<double> DeviceWorker::Utilisation(const WorkerPlan& plan) {
  const auto window = plan.cfg->probes.busy_window;
  auto t0 = env_->IoTicks(plan.device);
  auto c0 = env_->Now();
  if (!SleepFor(window)) return std::nullopt;
  auto t1 = env_->IoTicks(plan.device);
  auto ms = std::chrono::duration<double, std::milli>(env_->Now() - c0).count();
  if (!t0 || !t1 || ms <= 0) return 0.0;
  return static_cast<double>(*t1 - *t0) / ms;
}

void DeviceWorker::RunJob(const WorkerPlan& plan, const Job& job) {
  const auto& p = plan.cfg->probes;
  if (p.busy_threshold < 1.0) {
    auto util = Utilisation(plan);
    if (!util) return;  // stopping
    if (*util > p.busy_threshold) {
      JobResult r;
      r.result = RunResult::kSkippedBusy;
      Publish(job, r);
      return;
    }
  }
  // `diskprobe_exporter bench` holds this disk's lock for its whole run: the disk is busy.
  // Without a lock directory (not root, read-only /run) the probes run unlocked.
  const auto bench_lock = DeviceLock::Acquire(env_->LockDirectory(), plan.device.name);
  if (bench_lock.state() == DeviceLock::State::kBusy) {
    JobResult r;
    r.result = RunResult::kSkippedBusy;
    Publish(job, r);
    return;
  }
  JobResult r = runner_.Run(plan, job, &op_started_, deadline_ns_, rng_);
  if (r.ran) Publish(job, r);
}

void DeviceWorker::Publish(const Job& job, const JobResult& r) {
  const RunOutcome* out = r.outcome ? &*r.outcome : nullptr;
  if (log::Enabled(log::Level::kDebug)) {
    log::Debug("probe run", {{"device", device_.name},
                             {"probe", std::string(config::ProbeKindName(job.kind))},
                             {"result", std::string(RunResultName(r.result))},
                             {"ops", std::to_string(out != nullptr ? out->ops : 0)},
                             {"bytes", std::to_string(out != nullptr ? out->bytes : 0)},
                             {"seconds", std::to_string(r.duration)}});
  }
  std::lock_guard<std::mutex> lock(mu_);
  Bump();
  if (r.dir_ok) dir_ok_[job.dir] = *r.dir_ok;
  if (r.budget_remaining) {
    budget_remaining_ = *r.budget_remaining;
    budget_known_ = true;
  }
  auto it = stats_.find(job.kind);
  if (it == stats_.end()) return;  // unscheduled meanwhile
  ProbeStats& s = it->second;
  const ProbeStats& d = r.delta;
  s.runs[static_cast<int>(r.result)]++;
  for (std::size_t i = 0; i < s.buckets.size(); ++i) s.buckets[i] += d.buckets[i];
  s.count += d.count;
  s.sum_seconds += d.sum_seconds;
  for (std::size_t i = 0; i < s.errors.size(); ++i) s.errors[i] += d.errors[i];
  s.read_bytes += d.read_bytes;
  s.written_bytes += d.written_bytes;
  s.corruptions += d.corruptions;
  if (r.direct >= 0) s.direct_io = r.direct;
  if (out != nullptr) {
    s.has_last = true;
    s.last_success = r.result == RunResult::kOk;
    s.last_timestamp = env_->UnixSeconds();
    s.last_duration = r.duration;
    const double secs = static_cast<double>(out->op_ns) / 1e9;
    if (r.result == RunResult::kOk && secs > 0) {
      s.has_last_ok = true;
      s.last_throughput = static_cast<double>(out->bytes) / secs;
      s.last_iops = out->ops / secs;
    }
  }
}

}  // namespace diskprobe::probes
