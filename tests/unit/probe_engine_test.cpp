// probes/: the engine above the runners (scheduler, per-disk worker, jobs, write budget) on a fake
// Env: a manual clock, regular files as devices, a fixture sysfs in a temp directory. Runs as any
// user, without root, FUSE or loop devices.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "collect_util.h"
#include "collectors/probes.h"
#include "config/config.h"
#include "fake_env.h"
#include "probes/device_lock.h"
#include "probes/device_worker.h"
#include "probes/job_runner.h"
#include "probes/probe_manager.h"
#include "probes/write_budget.h"
#include "sources/device_registry.h"
#include "util/log.h"

namespace diskprobe {
namespace {

namespace fs = std::filesystem;
using config::ProbeKind;
using probes::RunResult;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::FakeEnv;
using testing::Gate;

constexpr const char* kDisk = "fakedisk";

std::uint64_t Runs(const probes::ProbeStats& s, RunResult r) { return s.runs[static_cast<int>(r)]; }

// Captures log lines for the test's lifetime.
class LogCapture {
 public:
  LogCapture() {
    log::SetSink([this](log::Level, std::string_view line) {
      std::lock_guard<std::mutex> l(mu_);
      lines_.emplace_back(line);
    });
  }
  ~LogCapture() { log::SetSink(nullptr); }
  int Count(std::string_view needle) const {
    std::lock_guard<std::mutex> l(mu_);
    int n = 0;
    for (const auto& s : lines_) n += s.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// A temp directory holding a fixture sysfs with one disk, its "device" (a 1 MiB regular file), the
// lock directory and a write directory that resolves to the disk.
class Rig {
 public:
  Rig() {
    char tmpl[] = "/tmp/diskprobe-engine-XXXXXX";
    root_ = ::mkdtemp(tmpl);
    for (const char* d : {"sys/block", "sys/dev/block", "dev", "locks", "w", "state"})
      fs::create_directories(root_ + "/" + d);
    AddDisk(kDisk);
    // The temp filesystem's st_dev resolves to the disk: write probes in w/ belong to it.
    struct stat st {};
    ::stat(root_.c_str(), &st);
    fs::create_directory_symlink(
        root_ + "/sys/block/" + kDisk,
        root_ + "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)));
    env = std::make_shared<FakeEnv>(root_ + "/dev", root_ + "/locks");
  }
  ~Rig() { fs::remove_all(root_); }

  void AddDisk(const std::string& name) {
    const std::string d = root_ + "/sys/block/" + name;
    fs::create_directories(d);
    std::ofstream(d + "/dev") << "250:" << disks_++ << "\n";
    std::ofstream(d + "/size") << "2048\n";
    std::ofstream dev(root_ + "/dev/" + name, std::ios::binary);
    std::string mib(1 << 20, 'x');
    dev << mib;
  }
  void RemoveDisk(const std::string& name) { fs::remove_all(root_ + "/sys/block/" + name); }

  std::string sysfs() const { return root_ + "/sys"; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  // A configuration: `kinds` (YAML under probes.defaults) on top of test-friendly engine settings.
  // `dirs`: the write directories (default w/, on the disk).
  std::shared_ptr<const config::Config> Config(const std::string& kinds, const std::string& extra = "",
                                               const std::string& dirs = "") const {
    std::string y =
        "probes:\n"
        "  state_directory: " +
        path("state") +
        "\n"
        "  write_directories: [" +
        (dirs.empty() ? path("w") : dirs) +
        "]\n"
        "  probe_file_size: 1MiB\n"
        "  free_space_floor: 0\n"
        "  free_space_floor_ratio: 0\n" +
        extra;
    if (extra.find("busy_threshold:") == std::string::npos) y += "  busy_threshold: 1\n";  // off unless tested
    y += "  defaults:\n" + kinds;
    // Every kind `kinds` does not name is off.
    for (const config::ProbeKindRow& row : config::kProbeKindTable)
      if (kinds.find("    " + std::string(row.name) + ":") == std::string::npos)
        y += "    " + std::string(row.name) + ": {enabled: false}\n";
    auto r = config::LoadString(y, "test.yml");
    EXPECT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].ToString());
    return r.config;
  }

  std::shared_ptr<FakeEnv> env;

 private:
  std::string root_;
  int disks_ = 0;
};

const DeviceProbeSnapshot* Find(const std::vector<DeviceProbeSnapshot>& snaps, const std::string& dev) {
  for (const auto& s : snaps)
    if (s.device == dev) return &s;
  return nullptr;
}

// --- schedule arithmetic (pure) ---

TEST(Schedule, JitteredPeriodStaysWithinBoundsAndUsesThem) {
  std::mt19937_64 rng(42);
  const milliseconds interval = minutes(5);
  const auto lo = std::chrono::nanoseconds(static_cast<std::int64_t>(300e9 * 0.9));
  const auto hi = std::chrono::nanoseconds(static_cast<std::int64_t>(300e9 * 1.1));
  auto min = hi, max = lo;
  for (int i = 0; i < 10000; ++i) {
    auto p = probes::JitteredPeriod(interval, 0.1, rng);
    ASSERT_GE(p, lo);
    ASSERT_LE(p, hi);
    min = std::min(min, p);
    max = std::max(max, p);
  }
  // The whole band is used, not a sliver of it.
  EXPECT_LT(min, std::chrono::nanoseconds(static_cast<std::int64_t>(300e9 * 0.91)));
  EXPECT_GT(max, std::chrono::nanoseconds(static_cast<std::int64_t>(300e9 * 1.09)));
  EXPECT_EQ(probes::JitteredPeriod(interval, 0, rng), std::chrono::nanoseconds(interval));
}

TEST(Schedule, FirstRunFallsWithinOneInterval) {
  std::mt19937_64 rng(7);
  const auto now = probes::Env::Clock::time_point(seconds(1000));
  bool early = false, late = false;
  for (int i = 0; i < 1000; ++i) {
    auto t = probes::FirstDue(now, minutes(1), rng);
    ASSERT_GE(t, now);
    ASSERT_LE(t, now + minutes(1));
    early = early || t < now + seconds(10);
    late = late || t > now + seconds(50);
  }
  EXPECT_TRUE(early && late) << "spread over the whole interval";
}

TEST(Schedule, NextRunCountsFromTheStartButRestsAfterASlowRun) {
  const auto t0 = probes::Env::Clock::time_point(seconds(100));
  EXPECT_EQ(probes::NextDue(t0, t0 + seconds(2), seconds(60)), t0 + seconds(60));
  // A run longer than its period: half a period of rest after its end.
  EXPECT_EQ(probes::NextDue(t0, t0 + seconds(90), seconds(60)), t0 + seconds(120));
}

TEST(Schedule, JobsComeFromTheKindTable) {
  Rig rig;
  auto cfg = rig.Config("    randread: {enabled: true}\n    write: {enabled: true}\n    verify: {enabled: true}\n");
  probes::WorkerPlan plan{Device{kDisk, "", 250, 0}, cfg, true, {"/a", "/b"}};
  std::vector<probes::Job> want = {{ProbeKind::kRandRead, ""},
                                   {ProbeKind::kWrite, "/a"},
                                   {ProbeKind::kWrite, "/b"},
                                   {ProbeKind::kVerify, "/a"},
                                   {ProbeKind::kVerify, "/b"}};
  EXPECT_EQ(probes::PlanJobs(plan), want);
  plan.read_probes = false;
  plan.write_dirs.clear();
  EXPECT_TRUE(probes::PlanJobs(plan).empty());
}

TEST(Classify, OutcomesToResults) {
  probes::RunOutcome ok;
  ok.ops = 3;
  EXPECT_EQ(probes::Classify(ok), RunResult::kOk);
  probes::RunOutcome e = ok;
  e.error = 5;
  EXPECT_EQ(probes::Classify(e), RunResult::kError);
  probes::RunOutcome t = ok;
  t.timed_out = true;
  EXPECT_EQ(probes::Classify(t), RunResult::kTimeout);
  probes::RunOutcome c = t;
  c.corruptions.push_back({4096, "CRC32C mismatch"});
  EXPECT_EQ(probes::Classify(c), RunResult::kError) << "damaged data outranks a slow operation";
  probes::RunOutcome b;
  b.budget_exhausted = true;
  EXPECT_EQ(probes::Classify(b), RunResult::kSkippedBudget);
  b.ops = 1;
  EXPECT_EQ(probes::Classify(b), RunResult::kOk) << "a run the budget cut short after some writes ran";
}

// --- the write budget ---

TEST(WriteBudget, SumsTheLedgersAndRollsOverAtTheUtcDay) {
  probes::WriteBudget b;
  probes::ProbeFileHeader a, c;
  a.budget_day = c.budget_day = 100;
  a.budget_used = 1000;
  c.budget_used = 500;
  b.Attach(&a);
  b.Attach(&c);
  b.Attach(&a);  // once only
  EXPECT_EQ(b.Used(100), 1500u);
  EXPECT_EQ(b.Remaining(100, 2000), 500u);
  EXPECT_EQ(b.Remaining(100, 1000), 0u) << "overspent is 0, not a wrap-around";
  EXPECT_EQ(b.Used(101), 0u);
  EXPECT_EQ(a.budget_day, 101u) << "the ledger itself rolled over (it is what the header persists)";
  b.Detach(&c);
  c.budget_used = 99999;
  EXPECT_EQ(b.Used(101), 0u);
}

TEST(WriteBudget, ReservationAndTakeBoundaries) {
  probes::WriteBudget b;
  probes::ProbeFileHeader h;
  b.Attach(&h);
  const std::uint64_t limit = 3 * probes::kProbeBlock;
  // A run starts only when its header write leaves at least a byte of budget.
  ASSERT_TRUE(b.ReserveRun(h, 1, limit));
  EXPECT_EQ(h.budget_used, probes::kProbeBlock);
  EXPECT_TRUE(b.Take(h, probes::kProbeBlock, 1, limit));
  EXPECT_FALSE(b.Take(h, probes::kProbeBlock + 1, 1, limit)) << "one byte over the limit";
  EXPECT_TRUE(b.Take(h, probes::kProbeBlock, 1, limit)) << "exactly at the limit";
  EXPECT_EQ(b.Remaining(1, limit), 0u);
  EXPECT_FALSE(b.ReserveRun(h, 1, limit));
  EXPECT_EQ(h.budget_used, limit) << "a refused reservation takes nothing";
  probes::WriteBudget b2;
  probes::ProbeFileHeader h2;
  b2.Attach(&h2);
  EXPECT_FALSE(b2.ReserveRun(h2, 1, probes::kProbeBlock)) << "header exactly fills the budget: no room for a write";
  // Creation is charged after the fact, past the limit if need be, and then blocks new files.
  EXPECT_TRUE(b2.MayCreate(1, 100));
  b2.Charge(h2, 1 << 20, 1);
  EXPECT_EQ(b2.Used(1), 1u << 20);
  EXPECT_FALSE(b2.MayCreate(1, 100));
  EXPECT_TRUE(b2.MayCreate(2, 100)) << "a new day";
}

// --- the worker and the manager on the fake Env ---

class EngineTest : public ::testing::Test {
 protected:
  void StartManager(std::shared_ptr<const config::Config> cfg) {
    registry_ = std::make_unique<DeviceRegistry>(rig_.sysfs(), cfg->devices);
    registry_->Refresh();
    manager_ = std::make_unique<ProbeManager>(rig_.sysfs(), rig_.env, registry_.get());
    ASSERT_TRUE(manager_->Start(cfg));
  }
  // Steps the fake clock until `done` holds (each step after the given threads settle).
  bool StepUntil(int threads, std::chrono::nanoseconds step, int max_steps, const std::function<bool()>& done) {
    for (int i = 0; i < max_steps; ++i) {
      if (done()) return true;
      if (!rig_.env->Settle(threads, done)) return false;
      if (done()) return true;
      rig_.env->Advance(step);
    }
    return done();
  }
  probes::ProbeStats Stats(ProbeKind k, const std::string& dev = kDisk) {
    auto snaps = manager_->Snapshot();
    const DeviceProbeSnapshot* s = Find(snaps, dev);
    if (s == nullptr || !s->probes.count(k)) return {};
    return s->probes.at(k);
  }
  void TearDown() override {
    if (manager_) {
      EXPECT_TRUE(manager_->Stop(seconds(10)));
    }
  }

  Rig rig_;
  std::unique_ptr<DeviceRegistry> registry_;
  std::unique_ptr<ProbeManager> manager_;
};

TEST_F(EngineTest, ReadProbeRunsOnItsJitteredScheduleAndPublishes) {
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m, ops: 4}\n", "  jitter: 0.1\n"));
  // Supervisor + one worker; 1 s steps over 30 fake minutes.
  rig_.env->Run(2, seconds(1), 30 * 60);
  auto opens = rig_.env->Opens();
  ASSERT_GE(opens.size(), 25u);
  EXPECT_LE(opens[0].second, seconds(61)) << "the first run falls within one interval";
  for (std::size_t i = 1; i < opens.size(); ++i) {
    auto gap = opens[i].second - opens[i - 1].second;
    // 60 s +- 10 %, give or take the 1 s step.
    EXPECT_GE(gap, seconds(53)) << "run " << i;
    EXPECT_LE(gap, seconds(67)) << "run " << i;
  }
  probes::ProbeStats s = Stats(ProbeKind::kRandRead);
  EXPECT_EQ(Runs(s, RunResult::kOk), opens.size());
  EXPECT_EQ(s.count, 4 * opens.size()) << "every op observed in the histogram";
  EXPECT_EQ(s.read_bytes, 4 * 4096 * opens.size());
  EXPECT_TRUE(s.has_last && s.last_success);
  EXPECT_GE(s.last_timestamp, FakeEnv::kUnixStart) << "the run's time is the Env's";
  auto snaps = manager_->Snapshot();
  ASSERT_EQ(snaps.size(), 1u);
  EXPECT_EQ(snaps[0].probes.size(), 1u) << "only the scheduled kind has series";
}

TEST_F(EngineTest, BusyDiskIsSkippedAndCountedThenProbedWhenIdle) {
  rig_.env->busy = true;
  StartManager(
      rig_.Config("    randread: {enabled: true, interval: 1m}\n", "  busy_threshold: 0.5\n  busy_window: 1s\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 10 * 60,
                        [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kSkippedBusy) >= 3; }));
  EXPECT_TRUE(rig_.env->Opens().empty()) << "a busy disk is not touched";
  EXPECT_EQ(Runs(Stats(ProbeKind::kRandRead), RunResult::kOk), 0u);
  rig_.env->busy = false;
  ASSERT_TRUE(
      StepUntil(2, seconds(1), 10 * 60, [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kOk) >= 2; }));
}

TEST_F(EngineTest, BenchLockMakesTheDiskBusy) {
  auto lock = probes::DeviceLock::Acquire(rig_.path("locks"), kDisk);
  ASSERT_TRUE(lock.held()) << lock.error();
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 10 * 60,
                        [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kSkippedBusy) >= 2; }));
  EXPECT_TRUE(rig_.env->Opens().empty());
}

TEST_F(EngineTest, StallIsVisibleWhileTheOperationHangsAndClearsWhenItReturns) {
  Gate gate;
  std::atomic<bool> hang{true};
  rig_.env->open_hook = [&](const Device&) {
    if (hang.exchange(false)) gate.Wait();
  };
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n", "  op_deadline: 5s\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 120, [&] { return !rig_.env->Opens().empty(); }));
  ASSERT_TRUE(gate.AwaitWaiter());
  EXPECT_FALSE(manager_->Stalled().at(0).second) << "not yet past op_deadline";
  rig_.env->Advance(seconds(6));
  EXPECT_TRUE(manager_->Stalled().at(0).second);
  EXPECT_TRUE(manager_->Snapshot().at(0).stalled);
  // Nothing else starts on the stalled disk, however long it hangs.
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(rig_.env->Settle(1));
    rig_.env->Advance(seconds(1));
  }
  EXPECT_EQ(rig_.env->Opens().size(), 1u);
  gate.Open();
  ASSERT_TRUE(StepUntil(2, seconds(1), 200, [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kOk) >= 2; }));
  EXPECT_FALSE(manager_->Stalled().at(0).second) << "recovered";
}

TEST_F(EngineTest, StopLeavesAThreadStuckInAnOperationBehind) {
  auto gate = std::make_shared<Gate>();
  rig_.env->open_hook = [gate](const Device&) { gate->Wait(); };
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 120, [&] { return !rig_.env->Opens().empty(); }));
  ASSERT_TRUE(gate->AwaitWaiter());
  EXPECT_FALSE(manager_->Stop(milliseconds(200))) << "a stuck thread is reported, not waited for";
  manager_.reset();  // the worker outlives the manager: it owns itself and the Env
  gate->Open();
}

TEST_F(EngineTest, ReconfigureChangesTheKindsOnTheRunningThread) {
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  ASSERT_TRUE(
      StepUntil(2, seconds(1), 10 * 60, [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kOk) >= 2; }));
  const int threads = rig_.env->threads_asked.load();
  manager_->Reconfigure(rig_.Config("    seqread: {enabled: true, interval: 2m, size: 64KiB, request_size: 16KiB}\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 10 * 60, [&] { return Runs(Stats(ProbeKind::kSeqRead), RunResult::kOk) >= 2; }));
  auto snap = manager_->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_EQ(snap[0].probes.count(ProbeKind::kRandRead), 0u) << "an unscheduled kind's series go";
  EXPECT_EQ(Stats(ProbeKind::kSeqRead).read_bytes % (64 << 10), 0u);
  EXPECT_EQ(rig_.env->threads_asked.load(), threads) << "the disk's thread took the new plan; none was started";
  // probes.enabled: false stops the disk's thread.
  manager_->Reconfigure(rig_.Config("", "  enabled: false\n"));
  ASSERT_TRUE(StepUntil(1, seconds(1), 10, [&] { return manager_->Snapshot().empty(); }));
}

TEST_F(EngineTest, DiskRemovedMidRunIsDroppedAndItsThreadEnds) {
  Gate gate;
  rig_.env->open_hook = [&](const Device&) { gate.Wait(); };
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  ASSERT_TRUE(StepUntil(2, seconds(1), 120, [&] { return !rig_.env->Opens().empty(); }));
  ASSERT_TRUE(gate.AwaitWaiter());
  // The card is pulled while its read is in flight.
  const std::uint64_t generation = manager_->Generation();
  rig_.RemoveDisk(kDisk);
  registry_->Refresh();
  rig_.env->open_error = ENODEV;
  ASSERT_TRUE(StepUntil(1, seconds(1), 5, [&] { return manager_->Snapshot().empty(); }));
  EXPECT_TRUE(manager_->Stalled().empty()) << "its series go at once, the thread still waiting";
  EXPECT_NE(manager_->Generation(), generation) << "scrapes must re-render without the disk";
  gate.Open();
  // The thread returns, sees it was retired and ends: Stop() (TearDown) then finds nothing stuck.
  ASSERT_TRUE(rig_.env->Settle(1));
  rig_.env->Advance(seconds(1));
  ASSERT_TRUE(rig_.env->Settle(1));
}

// The node of a disk pulled before the registry noticed is gone (ENOENT at open): the device went
// away, counted as reason "enodev" (not "other") and logged as such, once.
TEST_F(EngineTest, AVanishedDeviceNodeCountsAsEnodev) {
  LogCapture logs;
  rig_.env->open_error = ENOENT;
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  ASSERT_TRUE(
      StepUntil(2, seconds(1), 10 * 60, [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kError) >= 2; }));
  const probes::ProbeStats s = Stats(ProbeKind::kRandRead);
  ASSERT_EQ(probes::kErrorReasons[4], "enodev");
  EXPECT_EQ(s.errors[4], Runs(s, RunResult::kError));
  EXPECT_EQ(s.errors[5], 0u) << "nothing under other";
  EXPECT_EQ(logs.Count("the device is gone (No such device)"), 1);
}

TEST_F(EngineTest, AThreadThatCannotStartIsReportedOnceAndRetried) {
  LogCapture logs;
  rig_.AddDisk("second");
  rig_.env->RefuseThread(kDisk, true);  // as when the unit's TasksMax is reached
  StartManager(rig_.Config("    randread: {enabled: true, interval: 1m}\n"));
  const int asked = rig_.env->threads_asked.load();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(rig_.env->Settle(2)) << "supervisor and the other disk's thread";
    rig_.env->Advance(seconds(1));
  }
  ASSERT_TRUE(rig_.env->Settle(2));
  EXPECT_EQ(manager_->Unstarted(), std::vector<std::string>{kDisk});
  EXPECT_EQ(logs.Count("cannot start the probe thread of a disk"), 1) << "logged once, not once per retry";
  EXPECT_GE(rig_.env->threads_asked.load() - asked, 5) << "retried every tick";
  EXPECT_FALSE(Find(manager_->Snapshot(), kDisk));
  EXPECT_TRUE(Find(manager_->Snapshot(), "second")) << "the other disk keeps its probes";
  // The disk without a thread has no other probe series: this one says its probes do not run.
  collectors::ProbesCollector collector(manager_.get());
  const collectors::Paths paths;
  const DeviceList devices;
  const collectors::ScrapeContext ctx{paths, devices};
  const std::string running = "diskprobe_probe_thread_running{device=\"";
  std::string text = testing::Collect(collector, ctx).text;
  EXPECT_EQ(testing::SampleValue(text, running + kDisk + "\"}"), 0.0) << text;
  EXPECT_EQ(testing::SampleValue(text, running + "second\"}"), 1.0) << text;
  EXPECT_EQ(text.find("diskprobe_probe_runs_total{device=\"" + std::string(kDisk)), std::string::npos);
  rig_.env->RefuseThread(kDisk, false);
  ASSERT_TRUE(StepUntil(2, seconds(1), 10, [&] { return manager_->Unstarted().empty(); }));
  EXPECT_TRUE(Find(manager_->Snapshot(), kDisk));
  text = testing::Collect(collector, ctx).text;
  EXPECT_EQ(testing::SampleValue(text, running + kDisk + "\"}"), 1.0) << text;
  ASSERT_TRUE(
      StepUntil(3, seconds(1), 10 * 60, [&] { return Runs(Stats(ProbeKind::kRandRead), RunResult::kOk) >= 1; }));
}

TEST_F(EngineTest, DirectoryProblemsAreLoggedOncePerManager) {
  LogCapture logs;
  // The configured write directory is a symlink: refused, whatever it points at.
  fs::create_directory_symlink(rig_.path("w"), rig_.path("link"));
  auto cfg =
      rig_.Config("    randread: {enabled: true, interval: 1m}\n    write: {enabled: true}\n", "", rig_.path("link"));
  StartManager(cfg);
  for (int i = 0; i < 3; ++i) {
    manager_->Reconfigure(cfg);  // as SIGHUP does
    ASSERT_TRUE(rig_.env->Settle(2));
    rig_.env->Advance(seconds(1));
  }
  ASSERT_TRUE(rig_.env->Settle(2));
  EXPECT_EQ(logs.Count("no write probes for a probe directory"), 1);
  auto dirs = manager_->Directories();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_FALSE(dirs[0].ok);
  EXPECT_EQ(dirs[0].directory, rig_.path("link"));
  // Another manager (a fresh process's worth of state) logs it again: no process-wide memory.
  EXPECT_TRUE(manager_->Stop(seconds(10)));
  manager_ = std::make_unique<ProbeManager>(rig_.sysfs(), rig_.env, registry_.get());
  ASSERT_TRUE(manager_->Start(cfg));
  ASSERT_TRUE(rig_.env->Settle(2));
  EXPECT_EQ(logs.Count("no write probes for a probe directory"), 2);
}

TEST_F(EngineTest, WriteProbesStopAtTheDailyBudgetAndResumeTheNextUtcDay) {
  // Creating the 1 MiB probe file plus two runs of 8 x 4 KiB + header (36 KiB each) fit; the third
  // does not.
  const std::uint64_t budget = (1 << 20) + 80 * 1024;
  StartManager(rig_.Config("    write: {enabled: true, interval: 5m, ops: 8, block_size: 4KiB}\n",
                           "  write_budget_per_day: " + std::to_string(budget) + "\n"));
  ASSERT_TRUE(StepUntil(2, seconds(10), 6 * 60 * 3,
                        [&] { return Runs(Stats(ProbeKind::kWrite), RunResult::kSkippedBudget) >= 2; }));
  probes::ProbeStats s = Stats(ProbeKind::kWrite);
  EXPECT_EQ(Runs(s, RunResult::kOk), 3u) << "two whole runs and one the budget cut short";
  EXPECT_LE(s.written_bytes, budget) << "creation, operations and headers all within the budget";
  EXPECT_EQ(s.written_bytes, (1u << 20) + 2 * 36 * 1024 + 4096 + 4096) << "the third run: one op and its header";
  auto snap = manager_->Snapshot();
  ASSERT_EQ(snap.size(), 1u);
  ASSERT_TRUE(snap[0].write_budget_remaining);
  EXPECT_LT(*snap[0].write_budget_remaining, 4096u + 4096u);
  auto dirs = manager_->Directories();
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_TRUE(dirs[0].ok);
  EXPECT_EQ(dirs[0].device, kDisk);
  // The next UTC day (the fake Unix clock starts at midnight): the budget is whole again.
  const std::uint64_t ok_before = Runs(Stats(ProbeKind::kWrite), RunResult::kOk);
  ASSERT_TRUE(StepUntil(2, minutes(5), 24 * 12 + 12,
                        [&] { return Runs(Stats(ProbeKind::kWrite), RunResult::kOk) > ok_before; }));
  EXPECT_GE(rig_.env->Elapsed(), std::chrono::hours(24));
}

}  // namespace
}  // namespace diskprobe
