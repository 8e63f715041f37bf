#include "probes/probe_manager.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <random>
#include <set>

#include "parsers/block_stat.h"
#include "probes/device_lock.h"
#include "probes/io.h"
#include "probes/kinds.h"
#include "probes/probe_file.h"
#include "probes/runners.h"
#include "util/file.h"
#include "util/log.h"

namespace diskprobe {

using config::ProbeKind;
using probes::ProbeStats;
using probes::RunResult;
using Clock = std::chrono::steady_clock;

namespace {

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::uint64_t UtcDay() { return static_cast<std::uint64_t>(std::time(nullptr)) / 86400; }

probes::IoPriorityClass ToIoClass(config::IoPriority p) {
  switch (p) {
    case config::IoPriority::kIdle: return probes::IoPriorityClass::kIdle;
    case config::IoPriority::kBestEffort: return probes::IoPriorityClass::kBestEffort;
    case config::IoPriority::kNone: return probes::IoPriorityClass::kNone;
  }
  return probes::IoPriorityClass::kNone;
}

// The disk that holds `dir`, or of its nearest existing ancestor (the state directory may not
// exist yet). "" when it has no block device.
std::string DiskOfDirectory(const std::string& sysfs, const std::string& dir) {
  std::filesystem::path p(dir);
  while (true) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) return probes::DiskOfDev(sysfs, st.st_dev);
    if (!p.has_parent_path() || p.parent_path() == p) return "";
    p = p.parent_path();
  }
}

}  // namespace

// Everything a disk's thread needs to know; replaced as a whole on a change.
struct WorkerPlan {
  Device device;
  std::shared_ptr<const config::Config> cfg;
  bool read_probes = false;
  std::vector<std::string> write_dirs;
};

class DeviceWorker {
 public:
  DeviceWorker(std::string sysfs, std::string devfs, WorkerPlan plan,
               std::shared_ptr<std::atomic<std::uint64_t>> generation)
      : device_const_(plan.device), sysfs_(std::move(sysfs)), devfs_(std::move(devfs)), plan_(std::move(plan)),
        generation_(std::move(generation)) {
    InitStats();
  }

  void Start(std::shared_ptr<DeviceWorker> self) {
    // The thread keeps the worker alive: a stalled thread may outlive the manager's reference.
    thread_ = std::thread([self] { self->Run(); });
  }

  void SetPlan(WorkerPlan plan) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      plan_ = std::move(plan);
      plan_changed_ = true;
      InitStats();
    }
    cv_.notify_all();
  }

  void RequestStop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
  }

  bool Done() const { return done_.load(); }

  void JoinOrDetach() {
    if (!thread_.joinable()) return;
    if (done_.load()) thread_.join();
    else thread_.detach();
  }

  const Device& device() const { return device_const_; }

  DeviceProbeSnapshot Snapshot() const {
    DeviceProbeSnapshot s;
    std::lock_guard<std::mutex> lock(mu_);
    s.device = plan_.device.name;
    s.probes = stats_;
    std::int64_t started = op_started_.load(std::memory_order_acquire);
    s.stalled = started != 0 && probes::MonotonicNs() - started > deadline_ns_;
    if (!plan_.write_dirs.empty()) s.write_budget_remaining = budget_remaining_;
    return s;
  }

  bool IsStalled() const {
    std::int64_t started = op_started_.load(std::memory_order_acquire);
    std::lock_guard<std::mutex> lock(mu_);
    return started != 0 && probes::MonotonicNs() - started > deadline_ns_;
  }

  std::vector<DirectorySnapshot> Directories() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<DirectorySnapshot> out;
    for (const auto& d : plan_.write_dirs) {
      auto it = dir_ok_.find(d);
      out.push_back({d, plan_.device.name, it != dir_ok_.end() && it->second});
    }
    return out;
  }

  const Device device_const_;  // a worker serves one device instance for its whole life

 private:
  struct Job {
    ProbeKind kind;
    std::string dir;  // write kinds: the probe directory
    bool operator<(const Job& o) const { return std::tie(kind, dir) < std::tie(o.kind, o.dir); }
  };

  // Called with mu_ held: makes sure every scheduled kind has a stats entry (a scheduled probe's
  // counters exist from the start, at 0) and drops kinds no longer scheduled.
  void InitStats() {
    Bump();
    const auto& p = plan_.cfg->probes;
    const config::ProbeSet& set = p.For(plan_.device.name);
    deadline_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(p.op_deadline).count();
    std::map<ProbeKind, ProbeStats> next;
    for (int i = 0; i < config::kProbeKinds; ++i) {
      auto k = static_cast<ProbeKind>(i);
      bool scheduled = set[k].enabled && (config::UsesProbeFile(k) ? !plan_.write_dirs.empty() : plan_.read_probes);
      if (!scheduled) continue;
      auto it = stats_.find(k);
      next[k] = it != stats_.end() ? it->second : ProbeStats{};
    }
    stats_ = std::move(next);
    if (!plan_.write_dirs.empty() && !budget_known_) budget_remaining_ = p.write_budget_per_day;
  }

  std::vector<Job> Jobs(const WorkerPlan& plan) const {
    std::vector<Job> jobs;
    const config::ProbeSet& set = plan.cfg->probes.For(plan.device.name);
    for (int i = 0; i < config::kProbeKinds; ++i) {
      auto k = static_cast<ProbeKind>(i);
      if (!set[k].enabled) continue;
      if (config::UsesProbeFile(k)) {
        for (const auto& d : plan.write_dirs) jobs.push_back({k, d});
      } else if (plan.read_probes) {
        jobs.push_back({k, ""});
      }
    }
    return jobs;
  }

  std::chrono::nanoseconds Jittered(std::chrono::milliseconds interval, double jitter) {
    std::uniform_real_distribution<double> u(-jitter, jitter);
    double f = 1.0 + u(rng_);
    return std::chrono::nanoseconds(static_cast<std::int64_t>(static_cast<double>(interval.count()) * 1e6 * f));
  }

  void Run() {
    WorkerPlan plan;
    {
      std::lock_guard<std::mutex> lock(mu_);
      plan = plan_;
    }
    if (int e = probes::SetThreadIoPriority(ToIoClass(plan.cfg->probes.io_priority)); e != 0)
      log::Warn("cannot set the probes' I/O priority", {{"device", plan.device.name}, {"err", std::strerror(e)}});
    rng_.seed(std::random_device{}() ^ static_cast<std::uint64_t>(probes::MonotonicNs()));
    std::map<Job, Clock::time_point> next;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      plan = plan_;
      plan_changed_ = false;
      // Reschedule: keep due times of jobs that remain; new jobs start at a random point within
      // one interval, so a fleet (or a restart of every exporter) never probes in lockstep.
      std::map<Job, Clock::time_point> fresh;
      const auto now = Clock::now();
      for (const Job& j : Jobs(plan)) {
        auto it = next.find(j);
        if (it != next.end()) {
          fresh[j] = it->second;
        } else {
          auto interval = plan.cfg->probes.For(plan.device.name)[j.kind].interval;
          std::uniform_real_distribution<double> u(0, 1);
          fresh[j] = now + std::chrono::nanoseconds(
                               static_cast<std::int64_t>(static_cast<double>(interval.count()) * 1e6 * u(rng_)));
        }
      }
      next = std::move(fresh);
      if (next.empty()) {
        cv_.wait(lock, [this] { return stop_ || plan_changed_; });
        continue;
      }
      auto due = std::min_element(next.begin(), next.end(), [](auto& a, auto& b) { return a.second < b.second; });
      if (cv_.wait_until(lock, due->second, [this] { return stop_ || plan_changed_; })) continue;
      Job job = due->first;
      const auto started = Clock::now();
      lock.unlock();
      RunJob(plan, job);
      lock.lock();
      // The interval counts from the start of the run (busy check included), so the period is
      // the configured one; a run slower than its interval (a dying card) is followed by at
      // least half an interval of rest rather than back-to-back runs.
      const auto& p = plan.cfg->probes;
      const auto period = Jittered(p.For(plan.device.name)[job.kind].interval, p.jitter);
      next[job] = std::max(started + period, Clock::now() + period / 2);
    }
    lock.unlock();
    files_.clear();
    done_.store(true);
  }

  // Waits `d` unless stopped; false when stopped.
  bool SleepFor(std::chrono::milliseconds d) {
    std::unique_lock<std::mutex> lock(mu_);
    return !cv_.wait_for(lock, d, [this] { return stop_; });
  }

  std::optional<std::uint64_t> IoTicks(const Device& dev) {
    auto f = util::ReadAttribute(dev.sysfs_path + "/stat");
    if (!f.ok()) return std::nullopt;
    auto s = parsers::ParseBlockStat(f.text);
    if (!s) return std::nullopt;
    return s->io_ticks_ms;
  }

  // Utilisation over busy_window from io_ticks; nullopt when stopped or stat is unreadable.
  std::optional<double> Utilisation(const WorkerPlan& plan) {
    const auto window = plan.cfg->probes.busy_window;
    auto t0 = IoTicks(plan.device);
    auto c0 = Clock::now();
    if (!SleepFor(window)) return std::nullopt;
    auto t1 = IoTicks(plan.device);
    auto ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
    if (!t0 || !t1 || ms <= 0) return 0.0;
    return static_cast<double>(*t1 - *t0) / ms;
  }

  void Bump() { generation_->fetch_add(1, std::memory_order_acq_rel); }

  void Record(ProbeKind kind, RunResult result, const ProbeStats* delta = nullptr, double duration = 0,
              const probes::RunOutcome* out = nullptr, int direct = -1) {
    if (log::Enabled(log::Level::kDebug)) {
      log::Debug("probe run", {{"device", device_const_.name},
                               {"probe", std::string(config::ProbeKindName(kind))},
                               {"result", std::string(probes::RunResultName(result))},
                               {"ops", std::to_string(out != nullptr ? out->ops : 0)},
                               {"bytes", std::to_string(out != nullptr ? out->bytes : 0)},
                               {"seconds", std::to_string(duration)}});
    }
    std::lock_guard<std::mutex> lock(mu_);
    Bump();
    auto it = stats_.find(kind);
    if (it == stats_.end()) return;  // unscheduled meanwhile
    ProbeStats& s = it->second;
    s.runs[static_cast<int>(result)]++;
    if (delta != nullptr) {
      for (std::size_t i = 0; i < s.buckets.size(); ++i) s.buckets[i] += delta->buckets[i];
      s.count += delta->count;
      s.sum_seconds += delta->sum_seconds;
      for (std::size_t i = 0; i < s.errors.size(); ++i) s.errors[i] += delta->errors[i];
      s.read_bytes += delta->read_bytes;
      s.written_bytes += delta->written_bytes;
      s.corruptions += delta->corruptions;
    }
    if (direct >= 0) s.direct_io = direct;
    if (out != nullptr) {
      s.has_last = true;
      s.last_success = result == RunResult::kOk;
      s.last_timestamp = UnixNow();
      s.last_duration = duration;
      double secs = static_cast<double>(out->op_ns) / 1e9;
      if (result == RunResult::kOk && secs > 0) {
        s.has_last_ok = true;
        s.last_throughput = static_cast<double>(out->bytes) / secs;
        s.last_iops = out->ops / secs;
      }
    }
  }

  // Logs a probe's error once per change of reason.
  void NoteError(ProbeKind kind, const std::string& dir, const std::string& reason) {
    std::string key = std::string(config::ProbeKindName(kind)) + "|" + dir;
    std::string& last = last_error_[key];
    if (last == reason) return;
    if (reason.empty()) {
      log::Info("probe recovered", {{"device", device_const_.name}, {"probe", std::string(config::ProbeKindName(kind))}});
    } else {
      log::Warn("probe failed", {{"device", device_const_.name},
                                 {"probe", std::string(config::ProbeKindName(kind))},
                                 {"err", reason}});
    }
    last = reason;
  }

  void RunJob(const WorkerPlan& plan, const Job& job) {
    const auto& p = plan.cfg->probes;
    const config::ProbeSettings& settings = p.For(plan.device.name)[job.kind];
    if (p.busy_threshold < 1.0) {
      auto util = Utilisation(plan);
      if (!util) return;  // stopping
      if (*util > p.busy_threshold) {
        Record(job.kind, RunResult::kSkippedBusy);
        return;
      }
    }
    // `diskprobe_exporter bench` holds this disk's lock for its whole run: the disk is busy.
    // Without a lock directory (not root, read-only /run) the probes run unlocked.
    const auto bench_lock = probes::DeviceLock::Acquire(probes::kDefaultLockDirectory, plan.device.name);
    if (bench_lock.state() == probes::DeviceLock::State::kBusy) {
      Record(job.kind, RunResult::kSkippedBusy);
      return;
    }
    if (config::UsesProbeFile(job.kind)) RunWriteJob(plan, job, settings);
    else RunReadJob(plan, job, settings);
  }

  probes::RunEnv Env(const config::ProbeSettings& s, ProbeStats* delta, std::function<bool(std::uint64_t)> budget) {
    return probes::RunEnv{s, &op_started_, deadline_ns_, rng_, [delta](double secs) { delta->Observe(secs); },
                          std::move(budget)};
  }

  void Finish(ProbeKind kind, const std::string& dir, const probes::RunOutcome& out, ProbeStats& delta,
              Clock::time_point t0, int direct, bool write) {
    if (write) delta.written_bytes += out.bytes;
    else delta.read_bytes += out.bytes;
    RunResult result = RunResult::kOk;
    for (const auto& c : out.corruptions) {
      // Each damaged offset is counted (and logged) once, until a probe write replaces it.
      if (!reported_corrupt_.insert({dir, c.offset}).second) continue;
      ++delta.corruptions;
      log::Error("probe file block corrupted: the card lost or damaged written data",
                 {{"device", device_const_.name}, {"file", util::JoinPath(dir, probes::kProbeFileName)},
                  {"offset", std::to_string(c.offset)}, {"problem", c.problem}});
    }
    if (!out.corruptions.empty()) result = RunResult::kError;
    if (out.error != 0) {
      result = RunResult::kError;
      delta.CountError(out.error);
      NoteError(kind, dir, std::strerror(out.error));
    } else if (out.timed_out) {
      result = RunResult::kTimeout;
      NoteError(kind, dir, "operation exceeded op_deadline");
    } else if (out.budget_exhausted && out.ops == 0) {
      result = RunResult::kSkippedBudget;
    } else if (out.corruptions.empty()) {
      NoteError(kind, dir, "");
    }
    double duration = std::chrono::duration<double>(Clock::now() - t0).count();
    if (result == RunResult::kSkippedBudget) Record(kind, result, &delta, 0, nullptr, direct);
    else Record(kind, result, &delta, duration, &out, direct);
  }

  void RunReadJob(const WorkerPlan& plan, const Job& job, const config::ProbeSettings& settings) {
    const auto t0 = Clock::now();
    ProbeStats delta;
    const std::string node = util::JoinPath(devfs_, plan.device.name);
    bool direct = true;
    int fd = ::open(node.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
      direct = false;
      fd = ::open(node.c_str(), O_RDONLY | O_CLOEXEC);
    }
    probes::RunOutcome out;
    if (fd < 0) {
      out.error = errno;
      Finish(job.kind, job.dir, out, delta, t0, -1, false);
      return;
    }
    probes::Fd guard(fd);
    struct stat st {};
    ::fstat(fd, &st);
    if (!S_ISBLK(st.st_mode) || major(st.st_rdev) != plan.device.major || minor(st.st_rdev) != plan.device.minor) {
      NoteError(job.kind, job.dir, node + " is not block device " + std::to_string(plan.device.major) + ":" +
                                       std::to_string(plan.device.minor) + "; not reading it");
      Record(job.kind, RunResult::kError);
      return;
    }
    std::uint64_t bytes = 0;
    int lbs = 512;
    if (::ioctl(fd, BLKGETSIZE64, &bytes) != 0 || bytes == 0) {
      out.error = errno != 0 ? errno : ENXIO;
      Finish(job.kind, job.dir, out, delta, t0, direct ? 1 : 0, false);
      return;
    }
    ::ioctl(fd, BLKSSZGET, &lbs);
    const std::uint64_t align = std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(lbs));
    if (!direct && !logged_buffered_[static_cast<int>(job.kind)]) {
      log::Warn("O_DIRECT refused; probing with buffered reads after dropping the page cache",
                {{"device", plan.device.name}, {"probe", std::string(config::ProbeKindName(job.kind))}});
      logged_buffered_[static_cast<int>(job.kind)] = true;
    }
    probes::RunEnv env = Env(settings, &delta, [](std::uint64_t) { return true; });
    const probes::RawDevice raw{fd, direct, bytes, align};
    out = probes::RunnerOf(job.kind).run(probes::RunTarget{&raw, nullptr}, env);
    Finish(job.kind, job.dir, out, delta, t0, direct ? 1 : 0, false);
  }

  std::uint64_t BudgetUsedToday() {
    const std::uint64_t today = UtcDay();
    std::uint64_t used = 0;
    for (auto& [dir, f] : files_) {
      if (!f) continue;
      if (f->header().budget_day != today) {
        f->header().budget_day = today;
        f->header().budget_used = 0;
      }
      used += f->header().budget_used;
    }
    return used;
  }

  void PublishBudget(std::uint64_t budget) {
    std::uint64_t used = BudgetUsedToday();
    std::lock_guard<std::mutex> lock(mu_);
    Bump();
    budget_remaining_ = used >= budget ? 0 : budget - used;
    budget_known_ = true;
  }

  void SetDirOk(const std::string& dir, bool ok) {
    std::lock_guard<std::mutex> lock(mu_);
    Bump();
    dir_ok_[dir] = ok;
  }

  void RunWriteJob(const WorkerPlan& plan, const Job& job, const config::ProbeSettings& settings) {
    const auto t0 = Clock::now();
    const auto& p = plan.cfg->probes;
    ProbeStats delta;
    probes::RunOutcome out;
    auto& file = files_[job.dir];
    if (!config::IsWriteProbe(job.kind)) {
      if (!file) return;  // nothing written yet to read back; reading the file never creates it
      probes::RunEnv env = Env(settings, &delta, [](std::uint64_t) { return false; });
      out = probes::RunnerOf(job.kind).run(probes::RunTarget{nullptr, file.get()}, env);
      // Blocks written again since they were found damaged may be reported anew.
      for (const auto& [index, seq] : file->recent()) reported_corrupt_.erase({job.dir, index * probes::kProbeBlock});
      Finish(job.kind, job.dir, out, delta, t0, file->direct_io() ? 1 : 0, false);
      return;
    }
    if (!file) {
      probes::ProbeFileOptions opt;
      opt.directory = job.dir;
      opt.create_directory = job.dir == p.state_directory;
      opt.size = p.probe_file_size;
      opt.free_space_floor = p.free_space_floor;
      opt.free_space_floor_ratio = p.free_space_floor_ratio;
      opt.sysfs = sysfs_;
      std::string error;
      int err_no = 0;
      std::uint64_t written = 0;
      // The file's creation is written data: budget it like a probe write.
      if (BudgetUsedToday() >= p.write_budget_per_day) {
        Record(job.kind, RunResult::kSkippedBudget);
        return;
      }
      file = probes::ProbeFile::Open(opt, &error, &err_no, &written);
      delta.written_bytes += written;
      if (!file) {
        NoteError(job.kind, job.dir, error);
        SetDirOk(job.dir, false);
        if (err_no == ENOSPC) {
          Record(job.kind, RunResult::kSkippedSpace, &delta);
        } else {
          if (err_no != 0) delta.CountError(err_no);
          else delta.CountError(EINVAL);
          Record(job.kind, RunResult::kError, &delta);
        }
        return;
      }
      if (file->disk() != plan.device.name) {
        NoteError(job.kind, job.dir, "the probe directory moved to disk \"" + file->disk() + "\"");
        file.reset();
        SetDirOk(job.dir, false);
        Record(job.kind, RunResult::kError);
        return;
      }
      file->header().budget_day = UtcDay();
      file->header().budget_used += written;
      if (!file->direct_io())
        log::Warn("O_DIRECT refused by the filesystem; write probes use O_DSYNC writes and drop the page cache",
                  {{"device", plan.device.name}, {"directory", job.dir}});
      log::Info("probe file ready", {{"device", plan.device.name}, {"file", file->path()},
                                     {"created_bytes", std::to_string(written)}});
    }
    SetDirOk(job.dir, true);
    std::uint64_t avail = 0, floor = 0;
    if (file->FreeSpace(&avail, &floor) && avail < floor) {
      NoteError(job.kind, job.dir, "free space " + std::to_string(avail) + " bytes is under the floor of " +
                                       std::to_string(floor));
      Record(job.kind, RunResult::kSkippedSpace, &delta);
      PublishBudget(p.write_budget_per_day);
      return;
    }
    const std::uint64_t budget = p.write_budget_per_day;
    // Every run ends with a header write (the budget's persistence): reserve it up front.
    if (BudgetUsedToday() + probes::kProbeBlock >= budget) {
      Record(job.kind, RunResult::kSkippedBudget, &delta);
      PublishBudget(budget);
      return;
    }
    std::uint64_t reserved = probes::kProbeBlock;
    file->header().budget_used += reserved;
    probes::RunEnv env = Env(settings, &delta, [&](std::uint64_t bytes) {
      if (BudgetUsedToday() + bytes > budget) return false;
      file->header().budget_used += bytes;
      return true;
    });
    out = probes::RunnerOf(job.kind).run(probes::RunTarget{nullptr, file.get()}, env);
    // Budget taken for an op that failed before writing stays taken: the card may have written it.
    probes::AlignedBuffer hdr(probes::kProbeBlock, probes::kProbeBlock);
    op_started_.store(probes::MonotonicNs());
    int e = file->SaveHeader(hdr.data());
    op_started_.store(0);
    if (e == 0) delta.written_bytes += probes::kProbeBlock;
    else if (out.error == 0) out.error = e;
    Finish(job.kind, job.dir, out, delta, t0, file->direct_io() ? 1 : 0, true);
    PublishBudget(budget);
    if (out.error == ENODEV || out.error == ENXIO || e == EBADF) file.reset();  // reopen next time
  }

  const std::string sysfs_, devfs_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  WorkerPlan plan_;
  bool plan_changed_ = false;
  bool stop_ = false;
  std::map<ProbeKind, ProbeStats> stats_;
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
  std::map<std::string, std::unique_ptr<probes::ProbeFile>> files_;
  std::map<std::string, std::string> last_error_;
  std::set<std::pair<std::string, std::uint64_t>> reported_corrupt_;  // (directory, offset)
  bool logged_buffered_[config::kProbeKinds] = {};
};

ProbeManager::ProbeManager(std::string sysfs, std::string devfs, DeviceRegistry* devices)
    : sysfs_(std::move(sysfs)), devfs_(std::move(devfs)), registry_(devices) {}

ProbeManager::~ProbeManager() { Stop(std::chrono::milliseconds(1000)); }

void ProbeManager::Start(std::shared_ptr<const config::Config> cfg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cfg_ = std::move(cfg);
    stop_ = false;
    dirty_ = true;
  }
  supervisor_ = std::thread([this] { SupervisorLoop(); });
}

void ProbeManager::Reconfigure(std::shared_ptr<const config::Config> cfg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cfg_ = std::move(cfg);
    dirty_ = true;
  }
  cv_.notify_all();
}

void ProbeManager::SupervisorLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_ || dirty_; });
    if (stop_) break;
    auto devices = registry_->Snapshot();
    if (dirty_ || devices != last_devices_) {
      dirty_ = false;
      last_devices_ = devices;
      Reconcile();
    }
    // Join threads that finished after being asked to stop.
    std::erase_if(retired_, [](const std::shared_ptr<DeviceWorker>& w) {
      if (!w->Done()) return false;
      w->JoinOrDetach();
      return true;
    });
  }
}

void ProbeManager::Reconcile() {
  const auto& cfg = cfg_;
  std::map<std::string, WorkerPlan> desired;
  std::vector<DirectorySnapshot> unresolved;
  if (cfg->probes.enabled) {
    for (const Device& d : *last_devices_) {
      const config::ProbeSet& set = cfg->probes.For(d.name);
      bool read_probes = false;
      for (const config::ProbeKindRow& row : config::kProbeKindTable)
        read_probes = read_probes || (row.target == config::ProbeTarget::kRawDevice && set[row.kind].enabled);
      WorkerPlan plan{d, cfg, read_probes, {}};
      desired[d.name] = plan;
    }
    static std::set<std::string> logged;  // one log line per directory problem per process
    for (const std::string& dir : cfg->probes.WriteDirectories()) {
      if (std::string refusal = probes::CheckProbeDirectory(dir); !refusal.empty()) {
        if (logged.insert(dir + refusal).second) log::Warn("no write probes for a probe directory", {{"directory", dir}, {"reason", refusal}});
        unresolved.push_back({dir, "", false});
        continue;
      }
      std::string disk = DiskOfDirectory(sysfs_, dir);
      auto it = disk.empty() ? desired.end() : desired.find(disk);
      if (it == desired.end()) {
        std::string why = disk.empty() ? "its filesystem is not on a block device (tmpfs, overlay, network?)"
                                       : "its disk " + disk + " is not monitored (devices.include/exclude)";
        if (logged.insert(dir + why).second)
          log::Warn("no write probes for a probe directory", {{"directory", dir}, {"reason", why}});
        unresolved.push_back({dir, disk, false});
        continue;
      }
      it->second.write_dirs.push_back(dir);
    }
  }
  unresolved_ = std::move(unresolved);
  generation_->fetch_add(1, std::memory_order_acq_rel);
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto d = desired.find(it->first);
    bool keep = d != desired.end() && (d->second.read_probes || !d->second.write_dirs.empty()) &&
                d->second.device == it->second->device();
    if (keep) {
      ++it;
      continue;
    }
    it->second->RequestStop();
    retired_.push_back(it->second);
    it = workers_.erase(it);
  }
  for (auto& [name, plan] : desired) {
    if (!plan.read_probes && plan.write_dirs.empty()) continue;
    auto it = workers_.find(name);
    if (it != workers_.end()) {
      it->second->SetPlan(plan);
    } else {
      auto w = std::make_shared<DeviceWorker>(sysfs_, devfs_, plan, generation_);
      w->Start(w);
      workers_[name] = w;
    }
  }
}

bool ProbeManager::Stop(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !supervisor_.joinable() && workers_.empty() && retired_.empty()) return true;
    stop_ = true;
  }
  cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  std::vector<std::shared_ptr<DeviceWorker>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [n, w] : workers_) all.push_back(w);
    for (auto& w : retired_) all.push_back(w);
    workers_.clear();
    retired_.clear();
  }
  for (auto& w : all) w->RequestStop();
  const auto deadline = Clock::now() + timeout;
  bool clean = true;
  for (auto& w : all) {
    while (!w->Done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!w->Done()) {
      clean = false;
      log::Warn("probe thread is stuck in an operation; leaving it", {{"device", w->device().name}});
    }
    w->JoinOrDetach();
  }
  return clean;
}

std::vector<DeviceProbeSnapshot> ProbeManager::Snapshot() const {
  std::vector<std::shared_ptr<DeviceWorker>> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, w] : workers_) ws.push_back(w);
  }
  std::vector<DeviceProbeSnapshot> out;
  for (const auto& w : ws) out.push_back(w->Snapshot());
  return out;
}

std::vector<std::pair<std::string, bool>> ProbeManager::Stalled() const {
  std::vector<std::shared_ptr<DeviceWorker>> ws;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, w] : workers_) ws.push_back(w);
  }
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& w : ws) out.emplace_back(w->device().name, w->IsStalled());
  return out;
}

std::vector<DirectorySnapshot> ProbeManager::Directories() const {
  std::vector<std::shared_ptr<DeviceWorker>> ws;
  std::vector<DirectorySnapshot> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [n, w] : workers_) ws.push_back(w);
    out = unresolved_;
  }
  for (const auto& w : ws)
    for (auto& d : w->Directories()) out.push_back(std::move(d));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.directory < b.directory; });
  return out;
}

}  // namespace diskprobe
