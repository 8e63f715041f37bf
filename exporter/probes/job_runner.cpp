#include "probes/job_runner.h"

#include <cerrno>
#include <cstring>

#include "probes/kinds.h"
#include "util/file.h"
#include "util/log.h"

namespace diskprobe::probes {

using config::ProbeKind;

namespace {
void MarkOp(RunEnv& env, std::int64_t started_ns) { env.op_started_ns->store(started_ns, std::memory_order_release); }
}  // namespace

RunResult Classify(const RunOutcome& out) {
  if (out.error != 0 || !out.corruptions.empty()) return RunResult::kError;
  if (out.timed_out) return RunResult::kTimeout;
  if (out.budget_exhausted && out.ops == 0) return RunResult::kSkippedBudget;
  return RunResult::kOk;
}

JobRunner::JobRunner(std::shared_ptr<Env> env, std::string sysfs, std::string device)
    : env_(std::move(env)), sysfs_(std::move(sysfs)), device_(std::move(device)) {}

JobResult JobRunner::Run(const WorkerPlan& plan, const Job& job, std::atomic<std::int64_t>* op_started_ns,
                         std::int64_t deadline_ns, std::mt19937_64& rng) {
  const auto t0 = env_->Now();
  const config::ProbeSettings& settings = plan.cfg->probes.For(plan.device.name)[job.kind];
  JobResult r;
  RunEnv renv{settings,
              op_started_ns,
              deadline_ns,
              rng,
              [&r](double secs) { r.delta.Observe(secs); },
              [](std::uint64_t) { return false; },
              [e = env_.get()] { return e->NowNs(); }};
  switch (config::KindRow(job.kind).target) {
    case config::ProbeTarget::kRawDevice: RunRawDevice(plan, job, renv, &r); break;
    case config::ProbeTarget::kProbeFile: RunProbeFile(plan, job, renv, &r); break;
  }
  if (r.outcome) r.duration = std::chrono::duration<double>(env_->Now() - t0).count();
  return r;
}

void JobRunner::Finish(const Job& job, const RunOutcome& out, JobResult* r) {
  if (config::IsWriteProbe(job.kind)) r->delta.written_bytes += out.bytes;
  else r->delta.read_bytes += out.bytes;
  for (const auto& c : out.corruptions) {
    // Each damaged offset is counted (and logged) once, until a probe write replaces it.
    if (!reported_corrupt_.insert({job.dir, c.offset}).second) continue;
    ++r->delta.corruptions;
    log::Error("probe file block corrupted: the card lost or damaged written data",
               {{"device", device_},
                {"file", util::JoinPath(job.dir, kProbeFileName)},
                {"offset", std::to_string(c.offset)},
                {"problem", c.problem}});
  }
  r->result = Classify(out);
  if (out.error != 0) {
    r->delta.CountError(out.error);
    NoteError(job, ErrorReason(out.error) == "enodev"
                       ? std::string("the device is gone (") + std::strerror(out.error) + ")"
                       : std::string(std::strerror(out.error)));
  } else if (out.timed_out) {
    NoteError(job, "operation exceeded op_deadline");
  } else if (r->result == RunResult::kOk && out.corruptions.empty()) {
    NoteError(job, "");
  }
  // A run the budget refused before its first write did not run: no last-run figures.
  if (r->result != RunResult::kSkippedBudget) r->outcome = out;
}

void JobRunner::NoteError(const Job& job, const std::string& reason) {
  const std::string probe(config::ProbeKindName(job.kind));
  std::string& last = last_error_[probe + "|" + job.dir];
  if (last == reason) return;
  if (reason.empty()) log::Info("probe recovered", {{"device", device_}, {"probe", probe}});
  else log::Warn("probe failed", {{"device", device_}, {"probe", probe}, {"err", reason}});
  last = reason;
}

void JobRunner::RunRawDevice(const WorkerPlan& plan, const Job& job, RunEnv& renv, JobResult* res) {
  JobResult& r = *res;
  // The stall marker covers the open: opening a dying card's node can hang as a read does.
  MarkOp(renv, env_->NowNs());
  OpenedDevice dev = env_->OpenDevice(plan.device);
  MarkOp(renv, 0);
  if (!dev.refusal.empty()) {
    NoteError(job, dev.refusal);
    r.result = RunResult::kError;
    return;
  }
  if (dev.opened) r.direct = dev.direct ? 1 : 0;
  if (!dev.fd.valid()) {
    RunOutcome out;
    // A node that vanished is a device that went away (removed before the registry noticed).
    out.error = dev.error == ENOENT ? ENODEV : dev.error != 0 ? dev.error : ENXIO;
    Finish(job, out, &r);
    return;
  }
  if (!dev.direct && logged_buffered_.insert(job.kind).second)
    log::Warn("O_DIRECT refused; probing with buffered reads after dropping the page cache",
              {{"device", plan.device.name}, {"probe", std::string(config::ProbeKindName(job.kind))}});
  const RawDevice raw{dev.fd.get(), dev.direct, dev.bytes,
                      std::max<std::uint64_t>(4096, static_cast<std::uint64_t>(dev.logical_block))};
  renv.take_budget = [](std::uint64_t) { return true; };
  RunOutcome out = RunnerOf(job.kind).run(RunTarget{&raw, nullptr}, renv);
  Finish(job, out, &r);
  return;
}

void JobRunner::CloseFile(const std::string& dir) {
  auto it = files_.find(dir);
  if (it == files_.end() || !it->second) return;
  budget_.Detach(&it->second->header());
  it->second.reset();
}

void JobRunner::CloseFiles() {
  for (auto& [dir, f] : files_)
    if (f) budget_.Detach(&f->header());
  files_.clear();
}

void JobRunner::RunProbeFile(const WorkerPlan& plan, const Job& job, RunEnv& renv, JobResult* res) {
  JobResult& r = *res;
  const auto& p = plan.cfg->probes;
  const std::uint64_t limit = p.write_budget_per_day;
  const std::uint64_t today = env_->UtcDay();
  std::unique_ptr<ProbeFile>& file = files_[job.dir];
  if (config::KindRow(job.kind).direction == config::ByteDirection::kRead) {
    // Reading the probe file back (verify) never creates it: there is nothing written to check.
    if (!file) {
      r.ran = false;
      return;
    }
    RunOutcome out = RunnerOf(job.kind).run(RunTarget{nullptr, file.get()}, renv);
    // Blocks written again since they were found damaged may be reported anew.
    for (const auto& [index, seq] : file->recent()) reported_corrupt_.erase({job.dir, index * kProbeBlock});
    r.direct = file->direct_io() ? 1 : 0;
    Finish(job, out, &r);
    return;
  }
  if (!file) {
    // The file's creation is written data: budgeted like a probe write.
    if (!budget_.MayCreate(today, limit)) {
      r.result = RunResult::kSkippedBudget;
      return;
    }
    ProbeFileOptions opt;
    opt.directory = job.dir;
    opt.create_directory = job.dir == p.state_directory;
    opt.size = p.probe_file_size;
    opt.free_space_floor = p.free_space_floor;
    opt.free_space_floor_ratio = p.free_space_floor_ratio;
    opt.sysfs = sysfs_;
    opt.expected_disk = plan.device.name;
    std::string error;
    int err_no = 0;
    std::uint64_t written = 0;
    file = ProbeFile::Open(opt, &error, &err_no, &written);
    r.delta.written_bytes += written;
    if (!file) {
      NoteError(job, error);
      r.dir_ok = false;
      if (err_no == ENOSPC) {
        r.result = RunResult::kSkippedSpace;
      } else {
        r.delta.CountError(err_no != 0 ? err_no : EINVAL);
        r.result = RunResult::kError;
      }
      return;
    }
    budget_.Charge(file->header(), written, today);
    budget_.Attach(&file->header());
    if (!file->direct_io())
      log::Warn("O_DIRECT refused by the filesystem; write probes use O_DSYNC writes and drop the page cache",
                {{"device", plan.device.name}, {"directory", job.dir}});
    log::Info("probe file ready",
              {{"device", plan.device.name}, {"file", file->path()}, {"created_bytes", std::to_string(written)}});
  }
  r.dir_ok = true;
  std::uint64_t avail = 0, floor = 0;
  if (file->FreeSpace(&avail, &floor) && avail < floor) {
    NoteError(job, "free space " + std::to_string(avail) + " bytes is under the floor of " + std::to_string(floor));
    r.result = RunResult::kSkippedSpace;
    r.budget_remaining = budget_.Remaining(today, limit);
    return;
  }
  // Every run ends with a header write (the budget's persistence): reserved up front.
  if (!budget_.ReserveRun(file->header(), today, limit)) {
    r.result = RunResult::kSkippedBudget;
    r.budget_remaining = budget_.Remaining(today, limit);
    return;
  }
  ProbeFileHeader& ledger = file->header();
  renv.take_budget = [&](std::uint64_t bytes) { return budget_.Take(ledger, bytes, today, limit); };
  RunOutcome out = RunnerOf(job.kind).run(RunTarget{nullptr, file.get()}, renv);
  // Budget taken for an op that failed before writing stays taken: the card may have written it.
  AlignedBuffer hdr(kProbeBlock, kProbeBlock);
  MarkOp(renv, env_->NowNs());
  const int e = file->SaveHeader(hdr.data());
  MarkOp(renv, 0);
  if (e == 0) r.delta.written_bytes += kProbeBlock;
  else if (out.error == 0) out.error = e;
  r.direct = file->direct_io() ? 1 : 0;
  for (const auto& [index, seq] : file->recent()) reported_corrupt_.erase({job.dir, index * kProbeBlock});
  Finish(job, out, &r);
  r.budget_remaining = budget_.Remaining(today, limit);
  if (out.error == ENODEV || out.error == ENXIO || e == EBADF) CloseFile(job.dir);  // reopened next time
  return;
}

}  // namespace diskprobe::probes
