#pragma once
// Reads the vendor health block of the SD cards named in health.sd_vendor.devices with CMD56
// (GEN_CMD), in its own thread, every health.sd_vendor.interval (6 h by default); scrapes copy
// the last results (Snapshot) and never wait on a card. Off (no thread, no command) while the
// list is empty.
//
// How a block is read: ioctl(MMC_IOC_CMD) on the whole card's node <devfs>/<name> (opened
// O_RDONLY; <linux/mmc/ioctl.h>) with opcode 56, the layout's argument, one 512-byte block, and
// response flags R1 + ADTC (include/linux/mmc/core.h), as sdmon sends it. The kernel
// (drivers/mmc/core/block.c, mmc_blk_check_blkdev) refuses it with EPERM unless the caller has
// CAP_SYS_RAWIO and the node is the whole device, not a partition: reason "permission". On a
// block device that is not an MMC card the ioctl is unknown (ENOTTY, EINVAL): reason "not_mmc";
// a card that rejects the command fails it with ETIMEDOUT or EILSEQ: reason "card_error" (auto
// then tries the next layout; any other failure ends the card's pass). The command is queued with the card's normal I/O (the kernel dispatches it
// through the block request queue), so it waits for requests in flight.
//
// Bound: each command runs in a helper thread; the reader waits at most health.sd_vendor.timeout
// for it. A command still running then is abandoned (reason "timeout"; its thread and buffer live
// on until the kernel returns), the card gets no further command while it runs (reason "busy"),
// and the reader goes on with the next card. So a hanging card stalls neither scrapes nor the
// other cards nor the exporter's stop.
//
// What is exported: a reply that ParseSdVendorReply accepts (and CheckSdVendorProgress finds
// plausible after the last accepted one); a rejected reply is counted by layout and reason and
// exports nothing, and the card's health values are absent until a reply is accepted again.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "parsers/sd_vendor_health.h"
#include "util/periodic_thread.h"

namespace diskprobe {

// One CMD56 command: `write` sends *block to the card (a two-step layout's first step), else the
// card's reply lands in *block. Returns 0 or the errno of open(2)/ioctl(2). Blocks for as long as
// the kernel takes.
using Cmd56Fn = std::function<int(const std::string& path, std::uint32_t arg, bool write, parsers::SdGenCmdBlock* block)>;

// The real command through MMC_IOC_CMD (header comment). A node that opens but is no block device
// (a FIFO, a regular file, a symlink to /dev/zero under --path.devfs) gets no ioctl: reason
// not_mmc, and it is not counted in diskprobe_sd_health_commands_total (nor is a failed open).
int SendCmd56(const std::string& path, std::uint32_t arg, bool write, parsers::SdGenCmdBlock* block);

// One card's latest state.
struct SdVendorHealthEntry {
  // The last accepted reply: exported only while state is "ok"; after a failed or rejected pass
  // it is kept only as the reference CheckSdVendorProgress holds the next reply to.
  std::optional<parsers::SdVendorHealth> health;
  // "ok"; "rejected" (replies came back, none accepted); or the failure reason of the pass. ""
  // before the first pass.
  std::string state;
  // Failed commands by reason: open, permission (EPERM/EACCES), not_mmc (ENOTTY/EINVAL: not an
  // MMC block device), card_error (ETIMEDOUT/EILSEQ/EIO/ENOMEDIUM: the card failed the command, as
  // cards without that vendor command do), timeout (ours), busy (an earlier command still running),
  // ioctl (any other errno).
  std::map<std::string, std::uint64_t> failures;
  // Rejected replies by (layout, reason).
  std::map<std::pair<std::string, std::string>, std::uint64_t> rejected;
  std::uint64_t reads = 0;            // passes that gave accepted health
  std::uint64_t commands = 0;         // CMD56 commands sent (both steps of a two-step layout count)
  double last_success_unix = 0;       // wall time of the last accepted reply, 0 = never
  double last_pass_seconds = 0;       // wall-clock duration of the last pass over this card
  double cpu_seconds = 0;             // CPU time of the reader thread in this card's passes (sum)
};

struct SdVendorHealthSnapshot {
  std::map<std::string, SdVendorHealthEntry> cards;  // by kernel name, the configured ones
  std::uint64_t passes = 0;
};

class SdVendorHealthReader {
 public:
  // `cmd` empty: SendCmd56.
  SdVendorHealthReader(std::string devfs, config::SdVendorHealthConfig cfg, Cmd56Fn cmd = {});
  ~SdVendorHealthReader();  // Stop()
  SdVendorHealthReader(const SdVendorHealthReader&) = delete;
  SdVendorHealthReader& operator=(const SdVendorHealthReader&) = delete;

  // Starts the thread (a pass at once, then one every interval) when devices are configured.
  void Start();
  // Asks the thread to end after the command in progress; returns at once.
  void RequestStop() { thread_.RequestStop(); }
  // Waits until `deadline` for the thread (a command in progress is waited for at most its
  // timeout); false when it had not ended (then detached: exit without destroying the reader).
  // Safe to call twice.
  bool StopBy(util::PeriodicThread::Clock::time_point deadline) { return thread_.StopBy(deadline); }
  bool Stop(std::chrono::milliseconds wait = std::chrono::milliseconds::max()) { return thread_.Stop(wait); }
  // A reloaded config: new devices, layout, interval and timeout from the next pass on (a card
  // no longer listed leaves the snapshot at once). Starts the thread if devices appear.
  void Reconfigure(config::SdVendorHealthConfig cfg);
  // One pass over the configured cards, in the caller's thread (tests; the thread runs the same).
  void PassNow();

  SdVendorHealthSnapshot Snapshot() const;

 private:
  struct Pending;  // a command's helper-thread state, shared with it
  // Runs one command with the timeout; 0, an errno, or ETIME on timeout (then *stuck is set).
  int Run(const std::string& card, const std::string& path, std::uint32_t arg, bool write,
          parsers::SdGenCmdBlock* block, std::chrono::milliseconds timeout);

  const std::string devfs_;
  Cmd56Fn cmd_;
  mutable std::mutex mu_;
  config::SdVendorHealthConfig cfg_;  // under mu_
  SdVendorHealthSnapshot snap_;  // under mu_
  // Per card: the layout auto found (tried first next time) and the command still running.
  std::map<std::string, const parsers::SdVendorLayoutInfo*> found_;  // under pass_mu_
  std::map<std::string, std::shared_ptr<Pending>> stuck_;            // under pass_mu_
  std::mutex pass_mu_;
  util::PeriodicThread thread_;  // last: stopped before the members its passes use go
};

}  // namespace diskprobe
