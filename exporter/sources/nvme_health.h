#pragma once
// Reads each NVMe controller's SMART / Health Information log page (parsers/nvme_smart.h) in its
// own thread, at a slow interval (config health.nvme_interval, 10 minutes by default); scrapes copy
// the last results (Snapshot) and never wait on a device.
//
// How a page is read: the Get Log Page admin command (opcode 02h, Log Identifier 02h, NUMDL =
// 512 / 4 - 1, NSID FFFFFFFFh: the controller as a whole) through the kernel's admin passthrough,
// ioctl(NVME_IOCTL_ADMIN_CMD) on the controller's character device <devfs>/nvmeN
// (<linux/nvme_ioctl.h>). The kernel requires CAP_SYS_ADMIN for it (drivers/nvme/host/ioctl.c:
// without it, only some Identify commands pass, from 6.2; before 6.2 no passthrough at all);
// without it every read fails with EACCES, counted as reason "permission".
//
// Waking devices: a Get Log Page is an admin command. The NVMe Base Specification ("Power
// Management") has admin commands processed in a non-operational power state without leaving it
// (only an I/O submission queue doorbell returns the controller to an operational state), so a
// controller parked by APST stays parked. A controller whose PCI function is runtime-suspended
// (<sysfs>/class/nvme/nvmeN/device/power/runtime_status "suspended", D3) would have to be resumed
// for the command: such a controller is skipped (counted, reason "suspended"), its last values kept.
//
// Which devices: every monitored whole disk (DeviceRegistry) that is an NVMe namespace; its
// controller comes from <sysfs>/block/<disk>/device (-> nvmeN), or, with native NVMe multipath,
// where that link names the subsystem (nvme-subsysN), from the first controller listed under
// <sysfs>/class/nvme-subsystem/nvme-subsysN/. One page is read per controller per pass, however
// many namespaces it has.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "parsers/nvme_smart.h"
#include "sources/device_registry.h"
#include "util/periodic_thread.h"

namespace diskprobe {

using NvmeSmartPage = std::array<std::uint8_t, parsers::kNvmeSmartLogSize>;

// What one Get Log Page returned.
struct NvmeReadOutcome {
  int error = 0;        // errno of open(2) or ioctl(2); 0 when the command reached the device
  int nvme_status = 0;  // the command's NVMe status (ioctl's positive return), 0 = success
  bool ok() const { return error == 0 && nvme_status == 0; }
};

// Sends Get Log Page 02h to the controller node `path` (/dev/nvme0), opened O_RDONLY; the page
// in *page when ok(). Blocks for as long as the controller takes (the kernel's admin timeout,
// 60 s by default).
NvmeReadOutcome ReadNvmeSmartLog(const std::string& path, NvmeSmartPage* page);

// The controller of whole disk `disk` ("nvme0n1" -> "nvme0"), "" when it is not an NVMe
// namespace. Sources in the header comment.
std::string NvmeControllerOf(const std::string& sysfs, const std::string& disk);

// One disk's latest state. `log` is the page of the last successful read, and is cleared when a
// later read fails (a value that could not be read is absent, not stale).
struct NvmeHealthEntry {
  std::string controller;  // "nvme0"
  std::optional<parsers::NvmeSmartLog> log;
  std::string error;                       // reason of the last attempt that failed; "" after a success
  std::map<std::string, std::uint64_t> failures;  // by reason: open, permission, ioctl, nvme_status, parse
  std::uint64_t reads = 0;                 // successful reads
  std::uint64_t skipped_suspended = 0;     // passes skipped because the controller was runtime-suspended
  double last_success_unix = 0;            // wall time of the last successful read, 0 = never
  double last_read_seconds = 0;            // wall-clock duration of the last successful read
  double read_cpu_seconds = 0;             // CPU time of the reader thread in its controller's reads (sum)
};

struct NvmeHealthSnapshot {
  std::map<std::string, NvmeHealthEntry> disks;  // by whole-disk name ("nvme0n1")
  std::uint64_t passes = 0;                      // completed passes over all disks
};

class NvmeHealthReader {
 public:
  using Reader = std::function<NvmeReadOutcome(const std::string& path, NvmeSmartPage* page)>;

  // `registry` must outlive the reader. `reader` empty: ReadNvmeSmartLog.
  NvmeHealthReader(std::string sysfs, std::string devfs, const DeviceRegistry* registry,
                   std::chrono::milliseconds interval, Reader reader = {});
  ~NvmeHealthReader();  // Stop()
  NvmeHealthReader(const NvmeHealthReader&) = delete;
  NvmeHealthReader& operator=(const NvmeHealthReader&) = delete;

  // Starts the thread: a pass at once, then one every interval.
  void Start();
  // Asks the thread to end after the read in progress; returns at once (util::PeriodicThread).
  void RequestStop() { thread_.RequestStop(); }
  // Waits until `deadline` for the thread to end. A read in progress cannot be interrupted (the
  // kernel's admin timeout is 60 s): if the thread has not ended by then it is left running
  // (detached) and false is returned; the caller must then exit the process without destroying
  // the reader (the app's bounded stop, std::_Exit). Safe to call twice.
  bool StopBy(util::PeriodicThread::Clock::time_point deadline) { return thread_.StopBy(deadline); }
  bool Stop(std::chrono::milliseconds wait = std::chrono::milliseconds::max()) { return thread_.Stop(wait); }
  // A new interval (config reload); the next pass is due `interval` after the last one.
  void SetInterval(std::chrono::milliseconds interval);
  // One pass over the current disks, in the caller's thread (tests; the thread runs the same).
  void PassNow();

  NvmeHealthSnapshot Snapshot() const;

 private:
  const std::string sysfs_, devfs_;
  const DeviceRegistry* registry_;
  Reader reader_;
  std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  NvmeHealthSnapshot snap_;  // under mu_
  std::mutex pass_mu_;       // one pass at a time (PassNow and the thread)
  util::PeriodicThread thread_;  // last: stopped before the members its passes use go
};

}  // namespace diskprobe
