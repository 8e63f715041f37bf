#pragma once
// Reads the health of each SATA/USB disk (sd*) by running smartmontools' smartctl as a child
// process in its own thread, at a slow interval (config health.smart_interval, 30 minutes by
// default); scrapes copy the last results (Snapshot) and never wait on a device or a process.
//
// Why smartctl and not our own SAT pass-through (docs/architecture.md, "SATA/USB SSD health"):
// a USB disk is reached through its bridge's dialect (SAT ATA PASS-THROUGH 12/16 for ASMedia
// ASM1153/ASM235CM and most JMicron JMS578 bridges, JMicron's and Sunplus's vendor commands for
// older ones, NVMe wrapped in vendor SCSI commands for Realtek RTL9210 / JMicron JMS583 /
// ASMedia ASM2362), chosen by smartctl's drive database from the USB vendor:product ID; and an
// attribute's meaning and raw encoding depend on the drive family (the same database). Both
// change with every new bridge and drive; Debian updates them with smartmontools.
//
// The command: <smartctl_path> --json=c --info --health --attributes --nocheck=standby,3 [-d TYPE]
// /dev/sdX, with -d TYPE when health.smart_device_types names a type for the disk (a bridge
// smartctl's drive database does not know: it then says "Unknown USB bridge" and reads nothing).
// --nocheck=standby makes smartctl ask the drive's power mode (ATA CHECK POWER MODE, which does
// not spin a disk up) and exit with status 3 without further commands when it is in STANDBY or
// SLEEP: such a pass is counted as skipped (reason standby), the last values kept. A disk whose
// SCSI device is runtime-suspended (<sysfs>/block/sdX/device/power/runtime_status "suspended")
// is not opened at all (skipped, reason suspended): opening it would resume it.
//
// Privileges: ATA PASS-THROUGH through SG_IO needs CAP_SYS_RAWIO (the kernel's SCSI command
// filter, scsi_cmd_allowed(), lets only a fixed list of read commands through without it).
// smartctl inherits the exporter's ambient capabilities; the packaged systemd unit grants none for
// it (opt-in drop-in smart.conf). When the child would not hold it (ChildGetsRawio) smartctl is
// not run and each disk counts reason "permission".
//
// Which devices: every monitored whole disk (DeviceRegistry) whose name starts with "sd" (the
// SCSI disk driver: SATA through libata, USB mass storage and UAS). smartctl missing at
// smartctl_path (posix_spawn fails with ENOENT or EACCES): the source is off for that pass
// (SmartHealthSnapshot::smartctl_available false, no per-disk entries), logged once per change.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "config/yaml_reader.h"
#include "parsers/smartctl_json.h"
#include "sources/child_process.h"
#include "sources/device_registry.h"
#include "util/periodic_thread.h"

namespace diskprobe {

// smartctl's stdout is bounded: a full --attributes report of a drive is 10-30 KiB.
inline constexpr std::size_t kSmartctlMaxOutput = 1 << 20;

// One disk's latest state. `report` is the last successful read, cleared when a later read
// fails (a value that could not be read is absent, not stale).
struct SmartHealthEntry {
  std::optional<parsers::SmartctlReport> report;
  std::string error;                              // reason of the last failed attempt; "" after a success
  std::map<std::string, std::uint64_t> failures;  // by reason: see SmartFailureReason
  std::uint64_t reads = 0;                        // successful reads
  std::map<std::string, std::uint64_t> skipped;   // passes skipped, by reason: standby, suspended
  double last_success_unix = 0;                   // wall time of the last successful read, 0 = never
  double last_read_seconds = 0;                   // wall-clock duration of the last successful run
  double read_cpu_seconds = 0;                    // CPU time of all smartctl runs for this disk (sum)
  std::uint64_t read_input_blocks = 0;            // file system input of those runs, 512-byte blocks
  std::uint64_t runs = 0;                         // smartctl runs (successful or not)
};

struct SmartHealthSnapshot {
  bool smartctl_available = false;  // false before the first pass, and while smartctl cannot be run
  std::map<std::string, SmartHealthEntry> disks;  // by whole-disk name ("sda")
  std::uint64_t passes = 0;
};

// What a run meant. Exit status bits from smartctl(8), "EXIT STATUS": bit 0 command line did not
// parse; bit 1 device open failed, or it did not answer IDENTIFY, or it is in a low-power mode;
// bit 2 a SMART or other command to the disk failed (the report is still used: what did answer
// is in it); bits 3-7 describe the disk's health (they are data, exported as such).
// Returns "" when the report is usable, else the failure reason: timeout, output_too_large,
// killed, command_line, unknown_usb_bridge, permission, open, parse; `standby` set when
// smartctl exited 3 saying the drive is in STANDBY or SLEEP mode (--nocheck=standby,3: not a
// failure, a skip).
// True when a program this process executes gets CAP_SYS_RAWIO: the capability is in its
// ambient set, or it runs as root with the capability in its bounding set (<procfs>/self/status
// CapAmb, CapBnd; capabilities(7), "Transformation of capabilities during execve()"). smartctl
// carries no file capabilities in Debian. Without it smartctl is not run: its SAT detection
// would fail and fall back to plain SCSI, a report that looks like data but has none of the
// drive's (seen in tests/e2e/sata_qemu_e2e.sh); every sd disk is reason "permission" instead.
bool ChildGetsRawio();

std::string SmartFailureReason(const ChildResult& run, const parsers::ParseResult<parsers::SmartctlReport>& parsed,
                               bool* standby);

class SmartHealthReader {
 public:
  using Runner = std::function<ChildResult(const std::vector<std::string>& argv, std::chrono::milliseconds timeout)>;

  struct Options {
    std::chrono::milliseconds interval{std::chrono::minutes(30)};
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    std::string smartctl_path = "/usr/sbin/smartctl";
    // Kernel-name pattern -> smartctl -d TYPE (config::HealthConfig::smart_device_types: types
    // already validated); the first match wins, none = smartctl's own detection.
    std::vector<std::pair<config::Pattern, std::string>> device_types;
  };

  // Whether a child started now would hold CAP_SYS_RAWIO (see ChildGetsRawio).
  using RawioCheck = std::function<bool()>;

  // `registry` must outlive the reader. `runner` empty: RunChild with kSmartctlMaxOutput;
  // `rawio` empty: ChildGetsRawio.
  SmartHealthReader(std::string sysfs, std::string devfs, const DeviceRegistry* registry, Options options,
                    Runner runner = {}, RawioCheck rawio = {});
  ~SmartHealthReader();  // Stop()
  SmartHealthReader(const SmartHealthReader&) = delete;
  SmartHealthReader& operator=(const SmartHealthReader&) = delete;

  // Starts the thread: a pass at once, then one every interval.
  void Start();
  // Asks the thread to end after the run in progress; returns at once (util::PeriodicThread).
  void RequestStop() { thread_.RequestStop(); }
  // Waits until `deadline` for the thread to end. A smartctl run in progress is not interrupted
  // (it ends within the timeout): if the thread has not ended by then it is left running
  // (detached) and false is returned; the caller must then exit without destroying the reader
  // (the app's bounded stop, std::_Exit). Safe to call twice.
  bool StopBy(util::PeriodicThread::Clock::time_point deadline) { return thread_.StopBy(deadline); }
  bool Stop(std::chrono::milliseconds wait = std::chrono::milliseconds::max()) { return thread_.Stop(wait); }
  // New options (config reload); the next pass is due `interval` after the last one.
  void SetOptions(Options options);
  // One pass over the current disks, in the caller's thread (tests; the thread runs the same).
  void PassNow();

  SmartHealthSnapshot Snapshot() const;

  // The argv of one run for /dev/<disk>; `device_type` non-empty adds "-d", device_type (two
  // elements: no shell ever parses them).
  static std::vector<std::string> Command(const std::string& smartctl, const std::string& device_node,
                                          const std::string& device_type = "");

 private:
  const std::string sysfs_, devfs_;
  const DeviceRegistry* registry_;
  Runner runner_;
  RawioCheck rawio_;
  mutable std::mutex mu_;
  Options options_;  // under mu_
  SmartHealthSnapshot snap_;  // under mu_
  std::mutex pass_mu_;
  util::PeriodicThread thread_;  // last: stopped before the members its passes use go
};

}  // namespace diskprobe
