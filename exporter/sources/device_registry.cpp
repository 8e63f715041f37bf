#include "sources/device_registry.h"

#include <tuple>
#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/file.h"
#include "util/strings.h"
#include "util/log.h"

namespace diskprobe {
namespace {

bool IsLoop(std::string_view name) { return name.rfind("loop", 0) == 0; }

}  // namespace

DeviceList DiscoverDevices(const std::string& sysfs_root, const config::DevicesConfig& cfg, std::string* error) {
  DeviceList out;
  const std::string block_dir = util::JoinPath(sysfs_root, "block");
  DIR* d = ::opendir(block_dir.c_str());
  if (d == nullptr) {
    if (error) *error = block_dir + ": " + std::strerror(errno);
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (!cfg.Selects(name)) continue;
    Device dev;
    dev.name = name;
    dev.sysfs_path = util::JoinPath(block_dir, name);
    if (util::ReadFile(dev.sysfs_path + "/partition").ok()) continue;
    util::FileContent devno = util::ReadFile(dev.sysfs_path + "/dev");
    auto number = devno.ok() ? util::ParseDevNumber(devno.text) : std::nullopt;
    if (!number) continue;
    std::tie(dev.major, dev.minor) = *number;
    if (IsLoop(name)) {
      auto size = util::ParseU64(util::ReadFile(dev.sysfs_path + "/size").text);
      if (!size || *size == 0) continue;
    }
    // No medium: an empty card-reader slot or an optical drive without a disc has nothing to
    // measure, and probing it only logs errors.
    if (cfg.skip_empty_removable && util::ParseU64(util::ReadFile(dev.sysfs_path + "/removable").text) == 1ull &&
        util::ParseU64(util::ReadFile(dev.sysfs_path + "/size").text) == 0ull)
      continue;
    out.push_back(std::move(dev));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const Device& a, const Device& b) { return a.name < b.name; });
  if (error) error->clear();
  return out;
}

DeviceRegistry::DeviceRegistry(std::string sysfs_root, config::DevicesConfig cfg)
    : sysfs_root_(std::move(sysfs_root)), cfg_(std::move(cfg)), devices_(std::make_shared<DeviceList>()) {}

DeviceRegistry::~DeviceRegistry() { Stop(); }

void DeviceRegistry::Refresh() {
  config::DevicesConfig cfg;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cfg = cfg_;
  }
  std::string error;
  auto fresh = std::make_shared<DeviceList>(DiscoverDevices(sysfs_root_, cfg, &error));
  std::shared_ptr<const DeviceList> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = devices_;
    devices_ = fresh;
    if (error != last_error_) {
      if (!error.empty()) log::Error("device discovery failed", {{"err", error}});
      else if (!last_error_.empty()) log::Info("device discovery recovered");
      last_error_ = error;
    }
  }
  for (const auto& dev : *fresh) {
    if (std::find_if(old->begin(), old->end(), [&](const Device& o) { return o.name == dev.name; }) == old->end())
      log::Info("device appeared",
                {{"device", dev.name}, {"dev", std::to_string(dev.major) + ":" + std::to_string(dev.minor)}});
  }
  for (const auto& dev : *old) {
    if (std::find_if(fresh->begin(), fresh->end(), [&](const Device& n) { return n.name == dev.name; }) == fresh->end())
      log::Info("device disappeared", {{"device", dev.name}});
  }
}

void DeviceRegistry::Reconfigure(config::DevicesConfig cfg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cfg_ = std::move(cfg);
    wake_ = true;
  }
  cv_.notify_all();
  if (!thread_.joinable()) Refresh();
}

std::shared_ptr<const DeviceList> DeviceRegistry::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return devices_;
}

std::string DeviceRegistry::LastError() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

void DeviceRegistry::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void DeviceRegistry::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeviceRegistry::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, cfg_.discovery_interval, [this] { return stop_ || wake_; });
    if (stop_) break;
    wake_ = false;
    lock.unlock();
    Refresh();
    lock.lock();
  }
}

}  // namespace diskprobe
