#include "parsers/kmsg.h"

#include <array>
#include <limits>

#include "util/strings.h"

namespace diskprobe::parsers {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLower(char c) { return c >= 'a' && c <= 'z'; }

// Leading decimal digits of s (possibly with a leading '-'), advancing s past them.
template <typename T>
std::optional<T> TakeNumber(std::string_view& s) {
  std::size_t n = (!s.empty() && s[0] == '-') ? 1 : 0;
  std::size_t start = n;
  while (n < s.size() && IsDigit(s[n])) ++n;
  if (n == start) return std::nullopt;
  auto value = util::ParseNumber<T>(s.substr(0, n));
  if (value) s.remove_prefix(n);
  return value;
}

bool Contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

bool ConsumePrefix(std::string_view& s, std::string_view prefix) {
  if (!s.starts_with(prefix)) return false;
  s.remove_prefix(prefix.size());
  return true;
}

// Text up to (not including) the first of `stops`, advancing s to that character.
std::string_view TakeUntilAny(std::string_view& s, std::string_view stops) {
  std::size_t n = s.find_first_of(stops);
  if (n == std::string_view::npos) n = s.size();
  std::string_view out = s.substr(0, n);
  s.remove_prefix(n);
  return out;
}

// A kernel device name: letters, digits and the few separators disk names use.
bool IsDeviceName(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    bool ok =
        IsDigit(c) || IsLower(c) || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' || c == '.' || c == '!' || c == ':';
    if (!ok) return false;
  }
  return true;
}

// "mmc<N>" exactly.
bool IsMmcHost(std::string_view s) {
  if (!ConsumePrefix(s, "mmc") || s.empty()) return false;
  for (char c : s)
    if (!IsDigit(c)) return false;
  return true;
}

// Splits "name: rest" where name has no spaces; returns nullopt when the message has no such prefix.
std::optional<std::pair<std::string_view, std::string_view>> SplitPrefix(std::string_view message) {
  std::size_t colon = message.find(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view name = message.substr(0, colon);
  if (name.find(' ') != std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(colon + 1);
  if (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  return std::pair{name, rest};
}

KmsgEvent MakeEvent(KmsgKind kind, std::string_view device, std::string_view host = {}) {
  KmsgEvent e;
  e.kind = kind;
  e.device = std::string(device);
  e.host = std::string(host);
  return e;
}

// mmc errno -> kind: -110 ETIMEDOUT, -84 EILSEQ (the mmc core's CRC error), anything else I/O.
KmsgKind KindOfMmcErrno(int err) {
  if (err == -110) return KmsgKind::kTimeout;
  if (err == -84) return KmsgKind::kCrcError;
  return KmsgKind::kIoError;
}

bool EndsWith(std::string_view s, std::string_view tail) { return s.ends_with(tail); }

// ASCII lower case, for the few checks of free text that the kernel words in either case.
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Functions whose printk_ratelimited() produce "<func>: N callbacks suppressed" (the name is the
// enclosing function's __func__, or the string given to ___ratelimit), and the kind of what was
// suppressed: the rate-limited call sites of counted messages in the catalogue, and older ones.
// "EXT4-fs warning" is left out on purpose: it rate-limits every ext4 warning, most of which are
// not card failures; so is "_btrfs_printk" (one limit for all btrfs levels).
struct SuppressedSource {
  std::string_view function;
  KmsgKind kind;
};
constexpr std::array<SuppressedSource, 10> kSuppressedSources{{
    {"blk_update_request", KmsgKind::kIoError},   // 3.x-5.x block/blk-core.c
    {"print_req_error", KmsgKind::kIoError},      // 4.19-5.x block/blk-core.c
    {"blk_print_req_error", KmsgKind::kIoError},  // 5.17+ block/blk-mq.c
    {"buffer_io_error", KmsgKind::kIoError},      // fs/buffer.c
    {"end_buffer_async_write", KmsgKind::kIoError},
    {"quiet_error", KmsgKind::kIoError},            // 3.x fs/buffer.c (printk_ratelimit)
    {"nvme_log_error", KmsgKind::kIoError},         // 6.x drivers/nvme/host/core.c
    {"nvme_timeout", KmsgKind::kTimeout},           // drivers/nvme/host/pci.c dev_warn_ratelimited
    {"EXT4-fs error", KmsgKind::kFilesystemError},  // fs/ext4/super.c ext4_error_ratelimit
    {"btrfs_dev_stat_print_on_error", KmsgKind::kIoError},  // fs/btrfs/volumes.c "bdev %s errs: ..."
}};

// "<func>: N callbacks suppressed" (lib/ratelimit.c, every kernel since 2.6.33) and
// "printk: N messages suppressed." (kernel/printk.c printk_ratelimit, 2.6.x-3.x).
std::optional<KmsgEvent> ClassifySuppressed(std::string_view message) {
  std::string_view head;
  bool generic = false;
  if (message.ends_with(" callbacks suppressed")) {
    head = message.substr(0, message.size() - std::string_view(" callbacks suppressed").size());
  } else if (message.starts_with("printk: ") && message.ends_with(" messages suppressed.")) {
    head = message.substr(0, message.size() - std::string_view(" messages suppressed.").size());
    generic = true;
  } else {
    return std::nullopt;
  }
  std::size_t sep = head.rfind(": ");
  if (sep == std::string_view::npos) return std::nullopt;
  // ___ratelimit prints rs->missed, an int ("%s: %d callbacks suppressed"): a larger figure is no
  // kernel's, and summed into a counter it could wrap it.
  auto count = util::ParseNumber<std::uint64_t>(head.substr(sep + 2));
  if (!count || *count > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) return std::nullopt;
  std::string_view function = head.substr(0, sep);
  KmsgEvent e = MakeEvent(KmsgKind::kIoError, {});
  e.count = *count;
  e.suppressed = true;
  // 2.6.3x named ___ratelimit's own caller, not the call site: of no kind.
  if (generic || function == "__ratelimit") {
    e.any_kind = true;
    return e;
  }
  // Any other call site is one of no counted message (net_ratelimit, "EXT4-fs warning", ...).
  for (const auto& source : kSuppressedSources) {
    if (source.function == function) {
      e.kind = source.kind;
      return e;
    }
  }
  return std::nullopt;
}

// Block layer: "[<func>: ]<name> error, dev <disk>, sector <N>[ op ...]".
// <name> comes from blk_errors[] (block/blk-core.c). Errors that say nothing about the medium
// ("operation not supported" for discard/write-zeroes on USB bridges, reservation conflicts,
// thin-provisioning space, zoned resources) are ignored.
std::optional<KmsgEvent> ClassifyBlockError(std::string_view message) {
  constexpr std::string_view kMarker = " error, dev ";
  std::size_t at = message.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view name = message.substr(0, at);
  std::size_t sep = name.rfind(": ");
  if (sep != std::string_view::npos) name.remove_prefix(sep + 2);
  static constexpr std::array<std::string_view, 4> kIgnored{"operation not supported", "reservation conflict",
                                                            "critical space allocation", "zone"};
  for (std::string_view ignored : kIgnored)
    if (name.starts_with(ignored)) return std::nullopt;
  std::string_view rest = message.substr(at + kMarker.size());
  std::string_view device = TakeUntilAny(rest, ", ");
  if (!IsDeviceName(device) || device == "?") return std::nullopt;
  KmsgEvent e = MakeEvent(name == "timeout" ? KmsgKind::kTimeout : KmsgKind::kIoError, device);
  if (ConsumePrefix(rest, ", sector ")) e.sector = TakeNumber<std::uint64_t>(rest);
  return e;
}

// "Buffer I/O error on dev|device <part>, logical block N[, lost ... page write]" (fs/buffer.c).
std::optional<KmsgEvent> ClassifyBufferError(std::string_view message) {
  std::string_view rest = message;
  if (!ConsumePrefix(rest, "Buffer I/O error on ")) return std::nullopt;
  if (!ConsumePrefix(rest, "device ") && !ConsumePrefix(rest, "dev ")) return std::nullopt;
  std::string_view device = TakeUntilAny(rest, ", ");
  if (!IsDeviceName(device)) return std::nullopt;
  return MakeEvent(KmsgKind::kIoError, device);
}

// Device in "... for|on device <journal>." of jbd2 messages.
std::optional<std::string> JournalAfter(std::string_view message, std::string_view marker) {
  std::size_t at = message.find(marker);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = message.substr(at + marker.size());
  std::string_view name = TakeUntilAny(rest, " \n");
  while (!name.empty() && name.back() == '.') name.remove_suffix(1);
  if (!IsDeviceName(name)) return std::nullopt;
  return JournalDevice(name);
}

std::optional<KmsgEvent> ClassifyJbd2(std::string_view message) {
  if (message.starts_with("Aborting journal on device ")) {
    auto dev = JournalAfter(message, "Aborting journal on device ");
    if (!dev) return std::nullopt;
    return MakeEvent(KmsgKind::kRemountRo, *dev);
  }
  if (!message.starts_with("JBD2: ")) return std::nullopt;
  std::string_view rest = message.substr(6);
  // Recovery (fs/jbd2/recovery.c) names no journal: counted with no device.
  //   "JBD2: IO error %d recovering block %lu in log", "JBD2: Failed to read block at offset %u"
  //   "JBD2: Invalid checksum recovering [data ]block ...", "JBD2: Invalid checksum found in transaction %u"
  //   "JBD2: journal transaction %u on %s is corrupt."
  if ((rest.starts_with("IO error ") && Contains(rest, " recovering block ")) ||
      rest.starts_with("Failed to read block at offset ")) {
    KmsgEvent e = MakeEvent(KmsgKind::kIoError, {});
    if (ConsumePrefix(rest, "IO error ")) e.error = TakeNumber<int>(rest);
    return e;
  }
  if (rest.starts_with("Invalid checksum ")) return MakeEvent(KmsgKind::kFilesystemError, {});
  if (rest.starts_with("journal transaction ") && EndsWith(rest, " is corrupt.")) {
    std::string_view name = rest.substr(0, rest.size() - std::string_view(" is corrupt.").size());
    std::size_t on = name.rfind(" on ");
    if (on == std::string_view::npos) return std::nullopt;
    name.remove_prefix(on + 4);
    if (!IsDeviceName(name)) return std::nullopt;
    return MakeEvent(KmsgKind::kFilesystemError, JournalDevice(name));
  }
  // "JBD2: Error -5 detected when updating journal superblock for sda1-8." (3.x-6.x)
  // "JBD2: I/O error when updating journal superblock for mmcblk1p5-8"     (6.x)
  // "JBD2: Detected IO errors while flushing file data on sda1-8"
  std::optional<std::string> dev;
  if (Contains(message, "updating journal superblock for "))
    dev = JournalAfter(message, "updating journal superblock for ");
  else if (Contains(message, "Detected IO errors while flushing file data on "))
    dev = JournalAfter(message, "Detected IO errors while flushing file data on ");
  if (!dev) return std::nullopt;
  KmsgEvent e = MakeEvent(KmsgKind::kIoError, *dev);
  if (ConsumePrefix(rest, "Error ")) e.error = TakeNumber<int>(rest);
  return e;
}

// "EXT4-fs error (device D): ...", "EXT4-fs warning (device D): ...: I/O error ...",
// "EXT4-fs (D): Remounting filesystem read-only", "EXT4-fs (D): I/O error while writing superblock".
std::optional<KmsgEvent> ClassifyExt4(std::string_view message) {
  std::string_view rest = message;
  if (!ConsumePrefix(rest, "EXT4-fs ")) return std::nullopt;
  if (ConsumePrefix(rest, "error (device ")) {
    std::string_view dev = TakeUntilAny(rest, ")");
    if (!IsDeviceName(dev)) return std::nullopt;
    return MakeEvent(KmsgKind::kFilesystemError, dev);
  }
  if (ConsumePrefix(rest, "warning (device ")) {
    std::string_view dev = TakeUntilAny(rest, ")");
    if (!IsDeviceName(dev) || !Contains(rest, "I/O error")) return std::nullopt;
    return MakeEvent(KmsgKind::kIoError, dev);
  }
  if (ConsumePrefix(rest, "(")) {
    std::string_view dev = TakeUntilAny(rest, ")");
    if (!IsDeviceName(dev) || !ConsumePrefix(rest, "): ")) return std::nullopt;
    if (rest.starts_with("Remounting filesystem read-only")) return MakeEvent(KmsgKind::kRemountRo, dev);
    // "previous I/O error to superblock detected" repeats an error counted when it happened.
    if (Contains(rest, "I/O error") && !rest.starts_with("previous I/O error")) return MakeEvent(KmsgKind::kIoError, dev);
  }
  return std::nullopt;
}

// "<FS>-fs (D): rest" of FAT, exFAT and F2FS: the device and the text after it.
std::optional<std::pair<std::string_view, std::string_view>> FsPrefix(std::string_view message,
                                                                      std::string_view fs) {
  std::string_view rest = message;
  if (!ConsumePrefix(rest, fs) || !ConsumePrefix(rest, "-fs (")) return std::nullopt;
  std::string_view dev = TakeUntilAny(rest, ")");
  if (!IsDeviceName(dev) || !ConsumePrefix(rest, "): ")) return std::nullopt;
  return std::pair{dev, rest};
}

// "FAT-fs (D): error, ..." and "FAT-fs (D): Filesystem has been set read-only" (fs/fat/misc.c):
// the Pi's boot partition is FAT; exFAT (fs/exfat/super.c exfat_fs_error) words them the same.
std::optional<KmsgEvent> ClassifyFat(std::string_view message, std::string_view fs) {
  auto split = FsPrefix(message, fs);
  if (!split) return std::nullopt;
  auto [dev, rest] = *split;
  if (rest.starts_with("Filesystem has been set read-only")) return MakeEvent(KmsgKind::kRemountRo, dev);
  if (rest.starts_with("error,")) return MakeEvent(KmsgKind::kFilesystemError, dev);
  // fat_msg(KERN_ERR) when sb_bread failed: fatent.c "FAT read failed (blocknr %llu)", dir.c
  // "Directory bread(block %llu) failed", inode.c/nfs.c "unable to read boot sector", "unable to
  // read inode block ...", "unable to read block(%llu) ...": the device returned an error.
  if (Contains(rest, "read failed") || rest.starts_with("unable to read") ||
      (rest.starts_with("Directory bread(") && Contains(rest, ") failed")))
    return MakeEvent(KmsgKind::kIoError, dev);
  return std::nullopt;
}

// "F2FS-fs (D): ..." (fs/f2fs/super.c f2fs_printk): the filesystem stopped (f2fs_stop_checkpoint,
// 6.x "Stopped filesystem due to reason: %d"; "Remounting filesystem read-only"), or found an
// inconsistency: its messages say "corrupt", "inconsistent", "sanity check" or "run fsck".
std::optional<KmsgEvent> ClassifyF2fs(std::string_view message) {
  auto split = FsPrefix(message, "F2FS");
  if (!split) return std::nullopt;
  auto [dev, rest] = *split;
  if (rest.starts_with("Stopped filesystem due to reason") || rest.starts_with("Remounting filesystem read-only"))
    return MakeEvent(KmsgKind::kRemountRo, dev);
  const std::string lower = Lower(rest);
  std::string_view l = lower;
  bool sanity = false;
  if (std::size_t at = l.find("sanity"); at != std::string_view::npos) {
    std::string_view after = l.substr(at + 6);
    sanity = after.starts_with("check") || (after.size() > 1 && after.substr(1).starts_with("check"));
  }
  // checkpoint.c "access invalid blkaddr:%u" (f2fs_is_valid_blkaddr: a block address outside its
  // area, SBI_NEED_FSCK set).
  if (sanity || Contains(l, "corrupt") || Contains(l, "inconsisten") || Contains(l, "fsck") ||
      Contains(l, "invalid blkaddr"))
    return MakeEvent(KmsgKind::kFilesystemError, dev);
  return std::nullopt;
}

// The kind of btrfs_dev_stat_print_on_error's "wr N, rd N, flush N, corrupt N, gen N" (the
// device's cumulative error counters, printed when one grows): the device failed an I/O when a
// write, read or flush count is above 0; with those at 0 only checksum (corrupt) or generation
// mismatches were seen: data that came back wrong, a filesystem error.
KmsgKind BtrfsDevStatKind(std::string_view counters) {
  for (std::string_view name : {"wr ", "rd ", "flush "}) {
    std::size_t at = counters.find(name);
    if (at == std::string_view::npos || (at != 0 && counters[at - 1] != ' ')) return KmsgKind::kIoError;
    std::string_view num = counters.substr(at + name.size());
    auto n = TakeNumber<std::uint64_t>(num);
    if (!n || *n > 0) return KmsgKind::kIoError;
  }
  return KmsgKind::kFilesystemError;
}

// btrfs (fs/btrfs/messages.c, super.c btrfs_printk):
//   "BTRFS <level> (device D[ state S]): text"   level: emergency alert critical error warning notice info
//   "BTRFS: error (device D[ state S]) in func:line: errno=N text"   (btrfs_handle_fs_error)
// Error levels and checksum/tree/I-O failures at any level are filesystem errors (not "read error
// corrected", an info line after a repair from another copy: the failure itself was logged before
// it), "forced readonly" is the filesystem going read-only, "bdev D errs: wr N, rd N, ..." the
// device's error counters (BtrfsDevStatKind).
std::optional<KmsgEvent> ClassifyBtrfs(std::string_view message) {
  std::string_view rest = message;
  if (!ConsumePrefix(rest, "BTRFS")) return std::nullopt;
  // The state follows the name: "(device sda3 state EA)" (6.x), "(device sda3: state E)" (5.x).
  if (ConsumePrefix(rest, ": error (device ")) {
    std::string_view dev = TakeUntilAny(rest, " ):");
    if (!IsDeviceName(dev)) return std::nullopt;
    return MakeEvent(KmsgKind::kFilesystemError, dev);
  }
  // 3.x-5.x volumes.c btrfs_dev_stat_print_on_error without the device prefix: "BTRFS: bdev
  // /dev/sda1 errs: wr N, rd N, flush N, corrupt N, gen N".
  if (ConsumePrefix(rest, ": bdev ")) {
    std::string_view dev = TakeUntilAny(rest, " ");
    if (dev.starts_with("/dev/")) dev.remove_prefix(5);
    if (!IsDeviceName(dev) || !ConsumePrefix(rest, " errs: ")) return std::nullopt;
    return MakeEvent(BtrfsDevStatKind(rest), dev);
  }
  if (!ConsumePrefix(rest, " ")) return std::nullopt;
  std::string_view level = TakeUntilAny(rest, " ");
  if (!ConsumePrefix(rest, " (device ")) return std::nullopt;
  std::string_view dev = TakeUntilAny(rest, " ):");
  if (!IsDeviceName(dev)) return std::nullopt;
  std::size_t close = rest.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(close + 3);
  if (rest == "forced readonly") return MakeEvent(KmsgKind::kRemountRo, dev);
  if (rest.starts_with("bdev ") && Contains(rest, " errs: wr ")) {
    return MakeEvent(BtrfsDevStatKind(rest.substr(rest.find(" errs: ") + 7)), dev);
  }
  if (level == "error" || level == "critical" || level == "alert" || level == "emergency")
    return MakeEvent(KmsgKind::kFilesystemError, dev);
  static constexpr std::array<std::string_view, 10> kFailures{
      "csum failed",       "checksum verify failed", "csum mismatch",   "bad tree block",
      "parent transid verify failed", "level verify failed", "unable to fixup",
      "i/o error",         "IO failure",             "failed to repair"};
  for (std::string_view f : kFailures)
    if (Contains(rest, f)) return MakeEvent(KmsgKind::kFilesystemError, dev);
  return std::nullopt;
}

// Text of an mmc host controller's message after its "mmcN: " (pr_err with mmc_hostname) or its
// "<driver> <platform device>: " (dev_err) prefix: sdhci, bcm2835 (upstream sdhost), Raspberry Pi's
// bcm2835-sdhost, cqhci.
std::optional<KmsgKind> MmcHostKind(std::string_view rest) {
  // One scan per distinctive word; the rest are prefix or suffix compares (the common mmc line
  // is none of these and must stay cheap).
  // bcm2835-sdhost: pr_warn without '\n', so on old kernels the next printk may be glued to it.
  if (Contains(rest, "reducing overclock due to errors")) return KmsgKind::kOverclockReduced;
  // bcm2835(-sdhost) "%s transfer error - HSTS %x": CRC7/CRC16/FIFO errors (data->error = -EILSEQ);
  // "%s timeout error - HSTS %x": a read/write timeout.
  if (std::size_t at = rest.find(" error - HSTS "); at != std::string_view::npos) {
    std::string_view head = rest.substr(0, at);
    if (head.ends_with(" transfer") || head == "transfer") return KmsgKind::kCrcError;
    if (head.ends_with(" timeout") || head == "timeout") return KmsgKind::kTimeout;
  }
  // "unexpected command %d error": a command error that is not a timeout (-EILSEQ).
  if (rest.starts_with("unexpected command ") && EndsWith(rest, " error")) return KmsgKind::kCrcError;
  // core/block.c card_busy_detect, printed with the controller's name: "Card stuck in wrong state!
  // %s %s status: %#x" (the card did not return to transfer state after a write).
  if (rest.starts_with("Card stuck")) return KmsgKind::kTimeout;
  // sdhci.c "Timeout waiting for hardware [cmd ]interrupt.", bcm2835(-sdhost) "timeout waiting for
  // hardware interrupt.", "[previous ]command [%d ]never completed.", "PIO %s timeout - EDM %x",
  // "command %d timeout", "previous command (%d) not complete", "wait_transfer_complete - still
  // waiting", "%s: timeout (%d ms)"; sdhci "Reset 0x%x never completed.", "Controller never
  // released inhibit bit(s).", cqhci "cqhci: timeout for tag %d".
  if (rest.starts_with("Timeout waiting for hardware") || rest.starts_with("timeout waiting for hardware") ||
      (rest.starts_with("PIO ") && Contains(rest, " timeout - EDM")) ||
      (rest.starts_with("command ") && EndsWith(rest, " timeout")) ||
      (rest.starts_with("previous command (") && Contains(rest, ") not complete")) ||
      rest.starts_with("wait_transfer_complete - still waiting") ||
      (EndsWith(rest, " ms)") && Contains(rest, ": timeout (")) || rest.starts_with("cqhci: timeout for tag") ||
      rest.starts_with("Controller never released inhibit") || Contains(rest, "never completed"))
    return KmsgKind::kTimeout;
  // cqhci-core.c: the engine would not halt, clear its tasks or leave the halt state; a WARN of a
  // task completion for no task ("cqhci: spurious TCN for tag %d", seen on the Pi 5).
  if (rest.starts_with("cqhci: ") &&
      (Contains(rest, "CQE failed to exit halt state") || Contains(rest, "Failed to clear tasks") ||
       Contains(rest, "Failed to halt") || Contains(rest, "CQE stuck on") || Contains(rest, "spurious ")))
    return KmsgKind::kCqeError;
  return std::nullopt;
}

// An mmc message carrying an errno, after its "mmcN: ", "mmcblkN: " or controller prefix:
// drivers/mmc/core/*.c "error %d whilst initialising SD card", "error %d transferring data,
// sector ...", "error %d sending stop command, ...", "error %d requesting status", "cache flush
// error %d", "%s failed, error %d". Not setup failures that carry one ("Failed to enable CQE",
// "failed to initialize"), nor the errors of MMC_IOC_CMD ioctls from userspace (mmc-utils:
// "__mmc_blk_ioctl_cmd: cmd error %d").
std::optional<KmsgEvent> MmcErrno(std::string_view rest) {
  std::size_t at = rest.find("error -");
  if (at == std::string_view::npos || (at != 0 && rest[at - 1] != ' ')) return std::nullopt;
  if (rest.starts_with("Failed to enable CQE") || Contains(rest, "failed to initialize") ||
      rest.starts_with("__mmc_blk_ioctl_cmd"))
    return std::nullopt;
  std::string_view num = rest.substr(at + 6);
  auto err = TakeNumber<int>(num);
  if (!err) return std::nullopt;
  KmsgEvent e = MakeEvent(KindOfMmcErrno(*err), {});
  e.error = err;
  std::size_t s = rest.find(", sector ");
  if (s != std::string_view::npos) {
    std::string_view sector = rest.substr(s + 9);
    e.sector = TakeNumber<std::uint64_t>(sector);
  }
  return e;
}

// Messages of the mmc core and host drivers: "mmc0: ..." (host) or "mmcblk0: ..." (disk).
std::optional<KmsgEvent> ClassifyMmc(std::string_view message) {
  auto split = SplitPrefix(message);
  if (!split) return std::nullopt;
  // Named copies, not a structured binding: the lambda below captures `name`, and capturing a
  // structured binding is C++20 (P1091R3) that clang implements only from version 16.
  const std::string_view name = split->first;
  std::string_view rest = split->second;
  bool host = IsMmcHost(name);
  bool disk = !host && name.starts_with("mmcblk") && IsDeviceName(name);
  if (!host && !disk) return std::nullopt;
  auto event = [&](KmsgKind kind) { return host ? MakeEvent(kind, {}, name) : MakeEvent(kind, name); };

  if (auto kind = MmcHostKind(rest)) return event(*kind);
  // drivers/mmc/core/core.c mmc_cqe_recovery
  if (rest.starts_with("running CQE recovery")) return event(KmsgKind::kCqeRecovery);
  // drivers/mmc/core/bus.c mmc_remove_card: "card %04x removed"; old core "Card removed during transfer!"
  if ((rest.starts_with("card ") && Contains(rest, " removed")) || rest.starts_with("Card removed during transfer"))
    return event(KmsgKind::kCardRemoved);
  // drivers/mmc/core/core.c mmc_hw_reset / mmc_sw_reset: "tried to HW|SW reset card, got error %d"
  // (the reset failed); 3.x mmc_do_hw_reset "tried to reset card" (a reset was done).
  if (rest.starts_with("tried to HW reset card") || rest.starts_with("tried to SW reset card")) {
    KmsgEvent e = event(KmsgKind::kCardRemoved);
    std::size_t at = rest.find("error ");
    if (at != std::string_view::npos) {
      std::string_view num = rest.substr(at + 6);
      e.error = TakeNumber<int>(num);
    }
    return e;
  }
  if (rest.starts_with("tried to reset card")) return event(KmsgKind::kReset);
  // drivers/mmc/core/block.c: "%s: recovery failed!"
  if (rest.starts_with("recovery failed")) return event(KmsgKind::kCardRemoved);
  // block.c "Card stuck in programming state!", core "Card stuck being busy!"; 3.x/4.x block.c
  // "timed out sending r/w cmd command, card status %#x"; sd_ops.c "card never left busy state"
  // (the card kept answering busy to ACMD41: it never finished powering up).
  if (rest.starts_with("Card stuck") || rest.starts_with("timed out sending") ||
      rest.starts_with("card never left busy state"))
    return event(KmsgKind::kTimeout);
  // 3.x block.c mmc_blk_issue_rw_rq: "r/w command failed, status = %#x"
  if (rest.starts_with("r/w command failed")) return event(KmsgKind::kIoError);
  if (auto e = MmcErrno(rest)) {
    KmsgEvent ev = event(e->kind);
    ev.error = e->error;
    ev.sector = e->sector;
    return ev;
  }
  return std::nullopt;
}

// A dev_printk() prefix "<driver> <device>: " (drivers/base/core.c __dev_printk: the bound
// driver's name, else the bus or class name, then dev_name()). The driver is lower-case letters,
// digits, '-' and '_'; the device name has no space.
struct DevPrefix {
  std::string_view driver, name, rest;
};
std::optional<DevPrefix> SplitDevPrefix(std::string_view message) {
  std::size_t space = message.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 32) return std::nullopt;
  std::string_view driver = message.substr(0, space);
  for (char c : driver)
    if (!(IsLower(c) || IsDigit(c) || c == '-' || c == '_')) return std::nullopt;
  std::string_view after = message.substr(space + 1);
  std::size_t sep = after.find(": ");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  std::string_view name = after.substr(0, sep);
  if (name.find(' ') != std::string_view::npos || !IsDeviceName(name)) return std::nullopt;
  return DevPrefix{driver, name, after.substr(sep + 2)};
}

KmsgEvent ControllerEvent(KmsgKind kind, std::string_view controller) {
  KmsgEvent e = MakeEvent(kind, {});
  e.controller = std::string(controller);
  return e;
}

// SCSI (drivers/scsi/{scsi_error,sd}.c) and UAS (drivers/usb/storage/uas.c) messages after the
// "sd H:C:T:L: [sdX] ", "sd H:C:T:L: ", "scsi hostN: " or "scsi targetH:C:T: " prefix.
std::optional<KmsgKind> ScsiKind(std::string_view rest) {
  if (rest.starts_with("tag#")) {  // scmd_printk's "tag#%d "
    std::size_t sp = rest.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(sp + 1);
  }
  // scsi_error.c scsi_timeout / sd: "timing out command, waited %lus"; uas: the SCSI layer aborts
  // a command that timed out ("uas_eh_abort_handler 0 uas-tag 1 inflight: CMD "); uas_pre_reset /
  // uas_suspend "%s: timed out" waiting for commands.
  if (rest.starts_with("timing out command") || rest.starts_with("uas_eh_abort_handler ") ||
      EndsWith(rest, ": timed out"))
    return KmsgKind::kTimeout;
  // uas "uas_eh_device_reset_handler start"; scsi_error.c "%s: Sending BDR", "Sending target
  // reset to target %d", "Sending BRST chan: %d", "Sending HRST".
  if (rest.starts_with("uas_eh_device_reset_handler start") || Contains(rest, ": Sending BDR") ||
      Contains(rest, ": Sending target reset") || Contains(rest, ": Sending BRST") || Contains(rest, ": Sending HRST"))
    return KmsgKind::kReset;
  // The disk taken offline: scsi_error.c, scsi_lib.c, sd.c sd_eh_action.
  if (rest.starts_with("Device offlined - not ready after error recovery") ||
      rest.starts_with("rejecting I/O to offline device") ||
      rest.starts_with("Medium access timeout failure. Offlining disk"))
    return KmsgKind::kCardRemoved;
  return std::nullopt;
}

// NVMe controller messages after "nvme nvmeN: " or "nvme <pci function>: " (drivers/nvme/host).
std::optional<KmsgKind> NvmeKind(std::string_view rest) {
  // pci.c nvme_timeout: "I/O %d QID %d timeout, aborting|reset controller|completion polled|
  // disable controller", "I/O %d (%s) QID %d timeout, aborting", 6.6+ "I/O tag %d (%04x) opcode
  // %#x (%s) QID %d timeout, ...".
  if (rest.starts_with("I/O ") && Contains(rest, "QID ") && Contains(rest, " timeout, ")) return KmsgKind::kTimeout;
  if (rest.starts_with("controller is down; will reset") || rest.starts_with("Fw activation timeout, reset controller") ||
      rest.starts_with("resetting controller") || rest.starts_with("frozen state error detected, reset controller"))
    return KmsgKind::kReset;
  if (rest.starts_with("Removing after probe failure")) return KmsgKind::kCardRemoved;
  return std::nullopt;
}

// Lines with a dev_printk prefix: SCSI, USB, NVMe and mmc host controllers.
std::optional<KmsgEvent> ClassifyDevPrefixed(std::string_view message) {
  auto p = SplitDevPrefix(message);
  if (!p) return std::nullopt;
  const std::string_view driver = p->driver;
  std::string_view rest = p->rest;
  if (driver == "sd" || driver == "scsi") {
    std::string_view disk;
    if (rest.starts_with("[")) {
      std::size_t close = rest.find("] ");
      if (close == std::string_view::npos) return std::nullopt;
      disk = rest.substr(1, close - 1);
      if (!IsDeviceName(disk)) return std::nullopt;
      rest.remove_prefix(close + 2);
    }
    auto kind = ScsiKind(rest);
    if (!kind) return std::nullopt;
    return disk.empty() ? ControllerEvent(*kind, p->name) : MakeEvent(*kind, disk);
  }
  if (driver == "usb") {
    // hub.c hub_port_init: "reset <speed> USB device number %d using %s" (usb_reset_device).
    if (rest.starts_with("reset ") && Contains(rest, " USB device number ")) return ControllerEvent(KmsgKind::kReset, p->name);
    return std::nullopt;
  }
  if (driver == "nvme") {
    if (auto kind = NvmeKind(rest)) return ControllerEvent(*kind, p->name);
    return std::nullopt;
  }
  if (driver.starts_with("sdhci") || driver.starts_with("sdhost") || driver.starts_with("bcm2835") ||
      driver.starts_with("mmc-bcm2835")) {
    if (auto kind = MmcHostKind(rest)) return ControllerEvent(*kind, p->name);
    // The mmc core's dev_err(mmc_dev(host), ...): block.c card_busy_detect "error %d requesting status".
    if (auto e = MmcErrno(rest)) {
      e->controller = std::string(p->name);
      return e;
    }
  }
  return std::nullopt;
}

// drivers/nvme/host/core.c nvme_log_error: "nvme0n1: Read(0x2) @ LBA 2048, 8 blocks, ... (sct 0x2 / sc 0x81)".
std::optional<KmsgEvent> ClassifyNvmeDisk(std::string_view message) {
  auto split = SplitPrefix(message);
  if (!split || !split->first.starts_with("nvme") || !IsDeviceName(split->first)) return std::nullopt;
  if (!Contains(split->second, ") @ LBA ")) return std::nullopt;
  return MakeEvent(KmsgKind::kIoError, split->first);
}

// Pi firmware: "Under-voltage detected! (0x00050005)" (older raspberrypi-hwmon / firmware driver)
// and "hwmon hwmon1: Undervoltage detected!" (newer raspberrypi-hwmon dev_crit).
std::optional<KmsgEvent> ClassifyUnderVoltage(std::string_view message) {
  if (message.starts_with("Under-voltage detected!") || Contains(message, "Undervoltage detected!"))
    return MakeEvent(KmsgKind::kUnderVoltage, {});
  return std::nullopt;
}

}  // namespace

std::optional<std::string_view> KmsgRecord::Property(std::string_view key) const {
  for (const auto& [k, v] : properties)
    if (k == key) return std::string_view(v);
  return std::nullopt;
}

std::string DecodeKmsgEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x') {
      int hi = util::HexDigitValue(text[i + 2]), lo = util::HexDigitValue(text[i + 3]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::optional<KmsgRecord> ParseKmsgRecord(std::string_view record) {
  std::size_t semi = record.find(';');
  std::size_t first_nl = record.find('\n');
  if (semi == std::string_view::npos || (first_nl != std::string_view::npos && first_nl < semi)) return std::nullopt;
  std::string_view prefix = record.substr(0, semi);
  std::array<std::string_view, 4> fields;
  std::size_t n = 0;
  while (n < fields.size()) {
    std::size_t comma = prefix.find(',');
    fields[n++] = prefix.substr(0, comma);
    if (comma == std::string_view::npos) break;
    prefix.remove_prefix(comma + 1);
  }
  if (n < 4) return std::nullopt;
  auto prio = util::ParseNumber<unsigned>(fields[0]);
  auto seq = util::ParseNumber<std::uint64_t>(fields[1]);
  auto ts = util::ParseNumber<std::uint64_t>(fields[2]);
  if (!prio || !seq || !ts || fields[3].empty()) return std::nullopt;

  KmsgRecord r;
  r.facility = static_cast<int>(*prio >> 3);
  r.level = static_cast<int>(*prio & 7);
  r.seq = *seq;
  r.timestamp_us = *ts;
  r.fragment = fields[3].find('c') != std::string_view::npos;
  r.continuation = fields[3].find('+') != std::string_view::npos;

  std::string_view body = record.substr(semi + 1);
  std::size_t nl = body.find('\n');
  r.message = DecodeKmsgEscapes(body.substr(0, nl));
  while (nl != std::string_view::npos) {
    body.remove_prefix(nl + 1);
    nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    if (line.empty() || line[0] != ' ') continue;  // only " KEY=value" lines belong to the record
    line.remove_prefix(1);
    std::size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    r.properties.emplace_back(std::string(line.substr(0, eq)), DecodeKmsgEscapes(line.substr(eq + 1)));
  }
  return r;
}

std::optional<KmsgDevice> ParseKmsgDevice(std::string_view value) {
  if (value.size() < 2) return std::nullopt;
  KmsgDevice d;
  d.type = value[0];
  std::string_view rest = value.substr(1);
  switch (d.type) {
    case 'b':
    case 'c': {
      std::size_t colon = rest.find(':');
      if (colon == std::string_view::npos) return std::nullopt;
      auto major = util::ParseNumber<unsigned>(rest.substr(0, colon));
      auto minor = util::ParseNumber<unsigned>(rest.substr(colon + 1));
      if (!major || !minor) return std::nullopt;
      d.major = *major;
      d.minor = *minor;
      return d;
    }
    case 'n': {
      auto ifindex = util::ParseNumber<unsigned>(rest);
      if (!ifindex) return std::nullopt;
      d.ifindex = *ifindex;
      return d;
    }
    case '+': {
      std::size_t colon = rest.find(':');
      if (colon == std::string_view::npos || colon == 0) return std::nullopt;
      d.subsystem = std::string(rest.substr(0, colon));
      d.name = std::string(rest.substr(colon + 1));
      return d;
    }
    default: return std::nullopt;
  }
}

std::string_view ToString(KmsgKind kind) {
  switch (kind) {
    case KmsgKind::kIoError: return "io_error";
    case KmsgKind::kTimeout: return "timeout";
    case KmsgKind::kCrcError: return "crc_error";
    case KmsgKind::kCardRemoved: return "card_removed";
    case KmsgKind::kOverclockReduced: return "overclock_reduced";
    case KmsgKind::kFilesystemError: return "filesystem_error";
    case KmsgKind::kRemountRo: return "remount_ro";
    case KmsgKind::kUnderVoltage: return "under_voltage";
    case KmsgKind::kCqeRecovery: return "cqe_recovery";
    case KmsgKind::kCqeError: return "cqe_error";
    case KmsgKind::kReset: return "reset";
  }
  return "unknown";
}

std::optional<KmsgEvent> ClassifyKmsg(std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.remove_suffix(1);
  if (message.empty()) return std::nullopt;
  // Cheap dispatch on the first byte keeps the common (unrelated) line to a couple of compares.
  switch (message[0]) {
    case 'E':
      if (message.starts_with("EXT4-fs")) {
        if (auto e = ClassifySuppressed(message)) return e;
        return ClassifyExt4(message);
      }
      break;
    case 'F':
      if (message.starts_with("FAT-fs")) return ClassifyFat(message, "FAT");
      if (message.starts_with("F2FS-fs")) return ClassifyF2fs(message);
      break;
    case 'e':
      if (message.starts_with("exFAT-fs")) return ClassifyFat(message, "exFAT");
      break;
    case 'B':
      if (auto e = ClassifyBufferError(message)) return e;
      if (message.starts_with("BTRFS")) return ClassifyBtrfs(message);
      break;
    case 'A':
    case 'J':
      if (auto e = ClassifyJbd2(message)) return e;
      break;
    case 'U':
      if (auto e = ClassifyUnderVoltage(message)) return e;
      break;
    case 'm':
      if (message.starts_with("mmc")) {
        if (auto e = ClassifyMmc(message)) return e;
        if (auto e = ClassifyDevPrefixed(message)) return e;  // "mmc-bcm2835 3f300000.mmcnr: "
        return std::nullopt;
      }
      break;
    case 'n':
      if (message.starts_with("nvme")) {
        if (auto e = ClassifyDevPrefixed(message)) return e;
        if (auto e = ClassifyNvmeDisk(message)) return e;
      }
      break;
    case 's':
    case 'u':
    case 'b':
      if (auto e = ClassifyDevPrefixed(message)) return e;
      break;
    default: break;
  }
  if (Contains(message, " callbacks suppressed") || message.starts_with("printk: "))
    return ClassifySuppressed(message);
  if (Contains(message, " error, dev ")) return ClassifyBlockError(message);
  if (Contains(message, "Undervoltage detected!")) return ClassifyUnderVoltage(message);
  return std::nullopt;
}

std::optional<std::string> ParseKmsgDiskAppeared(std::string_view message) {
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.remove_suffix(1);
  // "[name] <blocks> <size>-byte logical blocks"
  constexpr std::string_view kBlocks = "-byte logical blocks";
  if (std::size_t at = message.find(kBlocks); at != std::string_view::npos) {
    std::string_view head = message.substr(0, at);
    auto strip_digits = [&head]() {
      std::size_t n = head.size();
      while (n > 0 && IsDigit(head[n - 1])) --n;
      bool any = n != head.size();
      head = head.substr(0, n);
      return any;
    };
    if (!strip_digits() || !head.ends_with(' ')) return std::nullopt;
    head.remove_suffix(1);
    if (!strip_digits() || !head.ends_with("] ")) return std::nullopt;
    head.remove_suffix(2);
    std::size_t open = head.rfind('[');
    if (open == std::string_view::npos) return std::nullopt;
    std::string_view name = head.substr(open + 1);
    if (!IsDeviceName(name)) return std::nullopt;
    return std::string(name);
  }
  auto split = SplitPrefix(message);
  if (!split) return std::nullopt;
  auto [name, rest] = *split;
  if (!IsDeviceName(name)) return std::nullopt;
  if (rest.starts_with("detected capacity change from ")) return std::string(name);
  // "mmcblkN: mmcH:RCA ...": the card's id after the host name.
  if (name.starts_with("mmcblk")) {
    auto host = SplitPrefix(rest);
    if (host && IsMmcHost(host->first) && rest.size() > host->first.size() + 1 &&
        util::HexDigitValue(rest[host->first.size() + 1]) >= 0)
      return std::string(name);
  }
  return std::nullopt;
}

std::string DiskOfPartition(std::string_view name) {
  // <disk ending in a digit>p<N>: mmcblk0p2, nvme0n1p3, loop0p1, md127p1, nbd0p1.
  std::size_t end = name.size();
  std::size_t digits = end;
  while (digits > 0 && IsDigit(name[digits - 1])) --digits;
  if (digits == end) return std::string(name);
  if (digits >= 2 && name[digits - 1] == 'p' && IsDigit(name[digits - 2])) {
    std::string_view disk = name.substr(0, digits - 1);
    for (std::string_view prefix : {"mmcblk", "nvme", "loop", "md", "nbd"})
      if (disk.starts_with(prefix)) return std::string(disk);
    return std::string(name);
  }
  // sd<letters><N>, vd..., hd..., xvd...: SCSI/USB, virtio, IDE, Xen.
  for (std::string_view prefix : {"sd", "vd", "hd", "xvd"}) {
    if (!name.starts_with(prefix)) continue;
    std::string_view letters = name.substr(prefix.size(), digits - prefix.size());
    if (letters.empty()) return std::string(name);
    for (char c : letters)
      if (!IsLower(c)) return std::string(name);
    return std::string(name.substr(0, digits));
  }
  return std::string(name);
}

std::string JournalDevice(std::string_view journal_name) {
  std::size_t dash = journal_name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == journal_name.size()) return std::string(journal_name);
  std::string_view inode = journal_name.substr(dash + 1);
  for (char c : inode)
    if (!IsDigit(c)) return std::string(journal_name);
  std::string_view device = journal_name.substr(0, dash);
  // "dm-0" is an external journal on a device-mapper device, not device "dm" with inode 0.
  if (device == "dm") return std::string(journal_name);
  return std::string(device);
}

std::optional<Ext4Message> ParseExt4Message(std::string_view message) {
  std::string_view rest = message;
  Ext4Message m;
  if (ConsumePrefix(rest, "EXT4-fs error (device ")) m.level = "error";
  else if (ConsumePrefix(rest, "EXT4-fs warning (device ")) m.level = "warning";
  else return std::nullopt;
  std::string_view dev = TakeUntilAny(rest, ")");
  if (!IsDeviceName(dev) || !ConsumePrefix(rest, ")")) return std::nullopt;
  m.device = std::string(dev);
  // "): func:line: " or ") in func:line: "
  if (!ConsumePrefix(rest, ": ") && !ConsumePrefix(rest, " in ")) return std::nullopt;
  std::string_view function = TakeUntilAny(rest, ":");
  if (function.empty() || function.find(' ') != std::string_view::npos || !ConsumePrefix(rest, ":"))
    return std::nullopt;
  m.function = std::string(function);
  auto line = TakeNumber<std::uint32_t>(rest);
  if (!line) return std::nullopt;
  m.line = *line;
  if (!ConsumePrefix(rest, ": ")) {
    ConsumePrefix(rest, ":");
    m.detail = std::string(rest);
    return m;
  }
  // "inode #N: " and "block N: " only when they are whole fields; otherwise they stay in detail.
  if (rest.starts_with("inode #")) {
    std::string_view probe = rest.substr(7);
    auto inode = TakeNumber<std::uint64_t>(probe);
    if (inode && ConsumePrefix(probe, ": ")) {
      m.inode = inode;
      rest = probe;
    }
  }
  if (rest.starts_with("block ")) {
    std::string_view probe = rest.substr(6);
    auto block = TakeNumber<std::uint64_t>(probe);
    if (block && ConsumePrefix(probe, ": ")) {
      m.block = block;
      rest = probe;
    }
  }
  if (ConsumePrefix(rest, "comm ")) {
    std::size_t sep = rest.find(": ");
    if (sep == std::string_view::npos) {
      m.comm = std::string(rest);
      rest = {};
    } else {
      m.comm = std::string(rest.substr(0, sep));
      rest.remove_prefix(sep + 2);
    }
  }
  m.detail = std::string(rest);
  return m;
}

std::optional<Ext4ErrorSummary> ParseExt4ErrorSummary(std::string_view message) {
  std::string_view rest = message;
  if (!ConsumePrefix(rest, "EXT4-fs (")) return std::nullopt;
  std::string_view dev = TakeUntilAny(rest, ")");
  if (!IsDeviceName(dev) || !ConsumePrefix(rest, "): ")) return std::nullopt;
  Ext4ErrorSummary s;
  s.device = std::string(dev);
  if (ConsumePrefix(rest, "error count")) {
    ConsumePrefix(rest, " since last fsck");
    if (!ConsumePrefix(rest, ": ")) return std::nullopt;
    auto count = TakeNumber<std::uint64_t>(rest);
    if (!count || !rest.empty()) return std::nullopt;
    s.type = Ext4ErrorSummary::Type::kErrorCount;
    s.error_count = *count;
    return s;
  }
  if (ConsumePrefix(rest, "initial error at ")) s.type = Ext4ErrorSummary::Type::kFirstError;
  else if (ConsumePrefix(rest, "last error at ")) s.type = Ext4ErrorSummary::Type::kLastError;
  else return std::nullopt;
  ConsumePrefix(rest, "time ");
  auto time = TakeNumber<std::int64_t>(rest);
  if (!time || !ConsumePrefix(rest, ": ")) return std::nullopt;
  s.time = *time;
  std::string_view function = TakeUntilAny(rest, ":");
  if (function.empty() || !ConsumePrefix(rest, ":")) return std::nullopt;
  s.function = std::string(function);
  auto line = TakeNumber<std::uint32_t>(rest);
  if (!line) return std::nullopt;
  s.line = *line;
  if (ConsumePrefix(rest, ": inode ")) {
    s.inode = TakeNumber<std::uint64_t>(rest);
    if (!s.inode) return std::nullopt;
  }
  if (ConsumePrefix(rest, ": block ")) {
    s.block = TakeNumber<std::uint64_t>(rest);
    if (!s.block) return std::nullopt;
  }
  if (!rest.empty()) return std::nullopt;
  return s;
}

}  // namespace diskprobe::parsers
