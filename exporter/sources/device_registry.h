#pragma once
// Block device discovery: which whole disks the exporter monitors.
//
// Source of truth: the kernel's Documentation/ABI/stable/sysfs-block. /sys/block/<name> holds one
// entry per whole disk (partitions live below it and under /sys/class/block with a `partition`
// attribute); `dev` is "major:minor"; `size` is in 512-byte sectors whatever the block size.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"

namespace diskprobe {

struct Device {
  std::string name;        // kernel name: "mmcblk0", "sda", "nvme0n1", "vda", "loop3"
  std::string sysfs_path;  // <sysfs>/block/<name>
  unsigned major = 0;
  unsigned minor = 0;
  bool operator==(const Device&) const = default;
};

using DeviceList = std::vector<Device>;  // sorted by name

// Lists the whole disks under <sysfs_root>/block selected by `cfg`, sorted by name. Skips
// partitions (an entry with a `partition` attribute, for fixture trees built from /sys/class/block),
// loop devices of size 0 (nothing attached), removable devices of size 0 (no medium) when
// cfg.skip_empty_removable, and entries without a readable `dev`. Returns an
// empty list with *error set when <sysfs_root>/block cannot be listed.
DeviceList DiscoverDevices(const std::string& sysfs_root, const config::DevicesConfig& cfg, std::string* error);

// Holds the current device list and refreshes it every discovery interval in its own thread.
// Readers get an immutable snapshot; a refresh logs each device that appeared or disappeared once.
class DeviceRegistry {
 public:
  DeviceRegistry(std::string sysfs_root, config::DevicesConfig cfg);
  ~DeviceRegistry();
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;

  // Re-reads sysfs now (also used at start-up, before Start()).
  void Refresh();
  // New filters/interval (config reload); refreshes at once.
  void Reconfigure(config::DevicesConfig cfg);
  std::shared_ptr<const DeviceList> Snapshot() const;
  // Why the last discovery failed ("" when it worked), e.g. "/nonexistent/block: No such file".
  std::string LastError() const;

  void Start();  // background refresh thread
  void Stop();   // joins it; safe to call twice

 private:
  void Loop();

  const std::string sysfs_root_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  config::DevicesConfig cfg_;
  std::shared_ptr<const DeviceList> devices_;
  std::string last_error_;
  bool stop_ = false;
  bool wake_ = false;
  std::thread thread_;
};

}  // namespace diskprobe
