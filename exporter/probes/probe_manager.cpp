#include "probes/probe_manager.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "probes/device_lock.h"
#include "probes/probe_file.h"
#include "util/log.h"

namespace diskprobe {

using probes::DeviceWorker;
using probes::WorkerPlan;

namespace {

// The disk that holds `dir`, or of its nearest existing ancestor (the state directory may not
// exist yet). "" when it has no block device; *dev gets the filesystem's device number.
std::string DiskOfDirectory(const std::string& sysfs, const std::string& dir, dev_t* dev) {
  std::filesystem::path p(dir);
  *dev = 0;
  while (true) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0) {
      *dev = st.st_dev;
      return probes::DiskOfDev(sysfs, st.st_dev);
    }
    if (!p.has_parent_path() || p.parent_path() == p) return "";
    p = p.parent_path();
  }
}

bool AnyRawDeviceKind(const config::ProbeSet& set) {
  for (const config::ProbeKindRow& row : config::kProbeKindTable)
    if (row.target == config::ProbeTarget::kRawDevice && set[row.kind].enabled) return true;
  return false;
}

}  // namespace

ProbeManager::ProbeManager(std::string sysfs, std::string devfs, DeviceRegistry* devices)
    : ProbeManager(std::move(sysfs), probes::Env::Real(std::move(devfs), probes::kDefaultLockDirectory), devices) {}

ProbeManager::ProbeManager(std::string sysfs, std::shared_ptr<probes::Env> env, DeviceRegistry* devices)
    : sysfs_(std::move(sysfs)), env_(std::move(env)), registry_(devices) {}

ProbeManager::~ProbeManager() { Stop(std::chrono::milliseconds(1000)); }

bool ProbeManager::Start(std::shared_ptr<const config::Config> cfg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cfg_ = std::move(cfg);
    stop_ = false;
    dirty_ = true;
  }
  try {
    supervisor_ = env_->StartThread("supervisor", [this] { SupervisorLoop(); });
  } catch (const std::system_error& e) {
    log::Error("cannot start the probes' supervisor thread; no probes run", {{"err", e.what()}});
    return false;
  }
  return true;
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
    env_->WaitUntil(lock, cv_, env_->Now() + std::chrono::seconds(1), [this] { return stop_ || dirty_; });
    if (stop_) break;
    auto devices = registry_->Snapshot();
    // A disk without a thread is retried every tick: the task limit may have been lifted.
    if (dirty_ || devices != last_devices_ || !unstarted_.empty()) {
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

// Called with mu_ held.
void ProbeManager::Reconcile() {
  const auto& cfg = cfg_;
  std::map<std::string, WorkerPlan> desired;
  std::vector<DirectorySnapshot> unresolved;
  if (cfg->probes.enabled && last_devices_) {
    for (const Device& d : *last_devices_)
      desired[d.name] = WorkerPlan{d, cfg, AnyRawDeviceKind(cfg->probes.For(d.name)), {}};
    for (const std::string& dir : cfg->probes.WriteDirectories()) {
      if (std::string refusal = probes::CheckProbeDirectory(dir); !refusal.empty()) {
        if (FirstTime("dir|" + dir + "|" + refusal))
          log::Warn("no write probes for a probe directory", {{"directory", dir}, {"reason", refusal}});
        unresolved.push_back({dir, "", false});
        continue;
      }
      dev_t dev = 0;
      std::string disk = DiskOfDirectory(sysfs_, dir, &dev);
      auto it = disk.empty() ? desired.end() : desired.find(disk);
      if (it == desired.end()) {
        // Anonymous devices (tmpfs, overlay, NFS, FUSE, btrfs subvolumes) have major 0; a block
        // device number that sysfs no longer lists is a disk that vanished under its mount.
        std::string why = !disk.empty() ? "its disk " + disk + " is not monitored (devices.include/exclude)"
                          : major(dev) != 0
                              ? "the disk that held it (block device " + std::to_string(major(dev)) + ":" +
                                    std::to_string(minor(dev)) + ") is gone; its filesystem is still mounted"
                              : "its filesystem is not on a block device (tmpfs, overlay, network?)";
        if (FirstTime("dir|" + dir + "|" + why))
          log::Warn("no write probes for a probe directory", {{"directory", dir}, {"reason", why}});
        unresolved.push_back({dir, disk, false});
        continue;
      }
      it->second.write_dirs.push_back(dir);
    }
  }
  // Whether the published set (workers, unresolved directories) changed: scrapes re-render then.
  bool changed = unresolved != unresolved_;
  unresolved_ = std::move(unresolved);
  for (auto it = workers_.begin(); it != workers_.end();) {
    auto d = desired.find(it->first);
    bool keep = d != desired.end() && (d->second.read_probes || !d->second.write_dirs.empty()) &&
                d->second.device == it->second->device();
    if (keep) {
      ++it;
      continue;
    }
    it->second->RequestStop();
    changed = true;
    retired_.push_back(it->second);
    it = workers_.erase(it);
  }
  std::set<std::string> unstarted;
  for (auto& [name, plan] : desired) {
    if (!plan.read_probes && plan.write_dirs.empty()) continue;
    auto it = workers_.find(name);
    if (it != workers_.end()) {
      it->second->SetPlan(plan);
      continue;
    }
    auto w = std::make_shared<DeviceWorker>(env_, sysfs_, plan, generation_);
    try {
      w->Start(w);
    } catch (const std::system_error& e) {
      // One line per disk until a thread starts for it (then it may be logged again later).
      if (FirstTime("thread|" + name))
        log::Error("cannot start the probe thread of a disk; its probes do not run",
                   {{"device", name}, {"err", e.what()}});
      unstarted.insert(name);
      continue;
    }
    logged_.erase("thread|" + name);
    workers_[name] = w;
    changed = true;
  }
  unstarted_ = std::move(unstarted);
  if (changed) generation_->fetch_add(1, std::memory_order_acq_rel);
}

void ProbeManager::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;  // the supervisor reconciles no more: no thread starts after this
    for (auto& [n, w] : workers_) w->RequestStop();
    for (auto& w : retired_) w->RequestStop();
  }
  cv_.notify_all();
}

bool ProbeManager::StopBy(std::chrono::steady_clock::time_point deadline) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !supervisor_.joinable() && workers_.empty() && retired_.empty()) return true;
  }
  RequestStop();
  if (supervisor_.joinable()) supervisor_.join();
  std::vector<std::shared_ptr<DeviceWorker>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [n, w] : workers_) all.push_back(w);
    for (auto& w : retired_) all.push_back(w);
    workers_.clear();
    retired_.clear();
  }
  // Real time: this bounds the process's exit, whatever clock the probes run on.
  bool clean = true;
  for (auto& w : all) {
    while (!w->Done() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
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

std::vector<std::string> ProbeManager::Unstarted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {unstarted_.begin(), unstarted_.end()};
}

}  // namespace diskprobe
