#pragma once
// Pure parsers for the kernel log: /dev/kmsg records and the messages that tell a failing card.
// No I/O, no exceptions: malformed input gives std::nullopt.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace diskprobe::parsers {

// One record as one read() of /dev/kmsg returns it:
//   "prio,seq,ts_usec,flags[,more fields];message\n"
// followed by zero or more dictionary lines " KEY=value\n" (SUBSYSTEM=, DEVICE=, ...).
// Source of truth: Documentation/ABI/testing/dev-kmsg (kernel 3.5+).
struct KmsgRecord {
  int facility = 0;                // prio >> 3 (0 = kernel; userspace writes to /dev/kmsg are never 0)
  int level = 0;                   // prio & 7 (0 emerg .. 7 debug)
  std::uint64_t seq = 0;           // sequence number; a gap between two reads means lost records
  std::uint64_t timestamp_us = 0;  // CLOCK_MONOTONIC at log time, microseconds
  // 'c': this record is a fragment of a line continued by later records.
  bool fragment = false;
  // '+': continuation of the previous fragment. Kernels before 4.9 only
  // (printk commit 5aa068ea4082 "remove games with previous record flags" made every fragment 'c').
  bool continuation = false;
  std::string message;  // text with \xNN escapes decoded (may contain '\n' from \x0a)
  // Dictionary lines in order, key and decoded value, e.g. {"DEVICE", "b179:0"}.
  std::vector<std::pair<std::string, std::string>> properties;

  // First value of a dictionary key, nullopt when absent.
  std::optional<std::string_view> Property(std::string_view key) const;
};

// Parses one record. Unknown extra prefix fields are ignored (the ABI allows more to be added).
// Returns nullopt when the prefix is not "number,number,number,flags...;" (e.g. a truncated read).
std::optional<KmsgRecord> ParseKmsgRecord(std::string_view record);

// Decodes the kernel's \xNN escapes (used for non-printable bytes and '\' itself).
// A backslash not followed by 'x' and two hex digits is kept as is.
std::string DecodeKmsgEscapes(std::string_view text);

// The DEVICE= dictionary value: "b179:0" (block major:minor), "c4:1" (char), "n2" (netdev
// ifindex) or "+subsystem:name". Source: Documentation/ABI/testing/dev-kmsg.
struct KmsgDevice {
  char type = 0;                  // 'b', 'c', 'n' or '+'
  unsigned major = 0, minor = 0;  // 'b' and 'c'
  unsigned ifindex = 0;           // 'n'
  std::string subsystem, name;    // '+'
};
std::optional<KmsgDevice> ParseKmsgDevice(std::string_view value);

// What a failing card looks like in the log.
enum class KmsgKind {
  kIoError,           // block layer / buffer / journal I/O errors, ext4 "I/O error" warnings
  kTimeout,           // host interrupt timeouts, mmc errors -110 (ETIMEDOUT), stuck cards
  kCrcError,          // mmc errors -84 (EILSEQ): bad signal / CRC on the bus
  kCardRemoved,       // card removed, HW reset failed, block recovery failed
  kOverclockReduced,  // bcm2835-sdhost fell back from sd_overclock
  kFilesystemError,   // EXT4-fs error, FAT-fs error
  kRemountRo,         // ext4 "Remounting filesystem read-only", jbd2 "Aborting journal", FAT set ro
  kUnderVoltage,      // Pi firmware under-voltage (no device)
  kCqeRecovery,       // mmc command queue engine recovery
  kCqeError,          // mmc command queue engine (cqhci) failed to halt, clear or exit halt
  kReset,             // a device reset by its driver's error handling: USB (usb_reset_device), UAS/SCSI
                      // error handler (device/target/bus/host reset), NVMe controller reset
};
std::string_view ToString(KmsgKind kind);

// Result of classifying one message. At most one of device / host / controller is set:
//  - device: block device exactly as logged, partition included ("mmcblk0", "mmcblk0p2", "sda1",
//    "loop3", "zram0"); map a partition to its disk with DiskOfPartition().
//  - host: mmc host ("mmc0").
//  - controller: the kernel device name of a dev_printk() prefix "<driver> <name>: " when the line
//    names no disk: a SCSI device "0:0:0:0", host "host0" or target "target0:0:0", a USB device
//    "2-1" or interface "2-1:1.0", an NVMe controller "nvme0" or its PCI function "0000:01:00.0",
//    an mmc host controller's platform device "fe340000.mmc". The disks below it in sysfs
//    (/sys/block/<disk> resolves through a directory of that name) are the ones it concerns.
//  - all empty: under_voltage, a journal message naming no journal, a "callbacks suppressed" line.
struct KmsgEvent {
  KmsgKind kind = KmsgKind::kIoError;
  std::string device;
  std::string host;
  std::string controller;
  // How many messages this line stands for: 1, or N for "<func>: N callbacks suppressed".
  std::uint64_t count = 1;
  // True for "<func>: N callbacks suppressed". The kernel (lib/ratelimit.c ___ratelimit) prints
  // it right before the next message of the same call site that gets through, and the line
  // names no device. Decision: the classifier leaves device/host empty; the caller attributes
  // the N messages to the device of the next event of the same kind (the message that follows),
  // or counts them with an empty device if none follows.
  bool suppressed = false;
  // A suppressed line that names no known call site ("__ratelimit: N callbacks suppressed",
  // "printk: N messages suppressed.", a function of no counted message): `kind` means nothing,
  // and the N belong to the very next message only if that one is counted.
  bool any_kind = false;
  std::optional<int> error;             // negative errno when the line carries one (-110, -84, -5)
  std::optional<std::uint64_t> sector;  // 512-byte sector of block-layer errors
};

// Classifies one decoded message (KmsgRecord::message, or a dmesg line without its
// "[ seconds] " prefix). Returns nullopt for anything that is not one of the kinds above.
// Source of truth: the kernel-message catalogue tests/fixtures/kernel-messages/<series>.tsv (every
// print format of the storage paths of 5.10, 6.1, 6.12 and Raspberry Pi's downstream sdhost
// driver, with the kind each maps to; scripts/kernel-catalogue.py regenerates it from a kernel
// tree), plus older wordings from real reports: block/blk-core.c (end_request: 3.x,
// blk_update_request: 4.x, print_req_error: 4.19-5.x, bare "I/O error, dev X, sector N op ..."
// 5.17+), mmc "r/w command failed, status = " and "tried to reset card" (3.x).
// Hand-written scanning, no std::regex: the ring buffer at start-up can be ~1 MB.
std::optional<KmsgEvent> ClassifyKmsg(std::string_view message);

// The largest record one read() of /dev/kmsg returns: CONSOLE_EXT_LOG_MAX (include/linux/printk.h,
// 8192), the size of struct devkmsg_user's buffer. printk itself keeps a message's text shorter
// (LOG_LINE_MAX / PRINTKRB_RECORD_MAX, 1024 - 32 bytes in 5.x/6.x), but the \xNN escapes and the
// dictionary lines make the record longer; a longer read buffer is never filled. Lines and
// records of file and pipe inputs are held to the same size.
inline constexpr std::size_t kKmsgRecordMax = 8192;

// The kernel's own record that a (new) disk or medium appeared under `name`, the whole-disk name:
//   "mmcblk0: mmc0:aaaa SD32G 29.7 GiB"        drivers/mmc/core/block.c mmc_blk_alloc_req
//                                                (also "mmcblk0boot0: mmc0:0001 ... partition 1")
//   "sd 0:0:0:0: [sda] 62333952 512-byte logical blocks: (31.9 GB/29.7 GiB)"
//                                                drivers/scsi/sd.c sd_print_capacity: first scan
//                                                or a capacity change (a new medium in a reader)
//   "virtio_blk virtio1: [vda] 2097152 512-byte logical blocks (1.07 GB/1.00 GiB)"
//   "loop0: detected capacity change from 0 to 8192"   block/genhd.c set_capacity_and_notify
//                                                (loop attach, and any medium change that resizes)
// Each is printed before the disk's partitions are scanned, so the new device's first I/O errors
// come after it. nullopt for anything else (NVMe namespaces print no such line).
std::optional<std::string> ParseKmsgDiskAppeared(std::string_view message);

// Whole-disk name of a partition by name alone: mmcblk0p2 -> mmcblk0, sda1 -> sda,
// nvme0n1p3 -> nvme0n1, loop0p1 -> loop0, md127p1 -> md127. Names that are not partitions by these
// rules come back unchanged (mmcblk0, sda, dm-0, zram0, mmcblk0boot0). The sysfs "partition"
// attribute is the authority; this is the fallback when sysfs is not available.
std::string DiskOfPartition(std::string_view name);

// The device part of a jbd2 journal name: internal journals are "<dev>-<journal inode>"
// (fs/jbd2/journal.c jbd2_journal_init_inode), e.g. "mmcblk0p2-8" -> "mmcblk0p2",
// "dm-0-8" -> "dm-0"; external journals are just "<dev>" ("sdb1", "dm-0" stays "dm-0").
std::string JournalDevice(std::string_view journal_name);

// An ext4 error/warning message:
//   "EXT4-fs error (device D): func:line: [inode #I: ][block B: ]comm C: text"
//   "EXT4-fs error (device D) in func:line: text"          (__ext4_std_error)
//   "EXT4-fs warning (device D): func:line: text"
// Source: fs/ext4/super.c __ext4_error*, __ext4_warning*.
struct Ext4Message {
  std::string level;     // "error" or "warning"
  std::string device;    // as logged (partition), e.g. "mmcblk0p2"
  std::string function;  // e.g. "ext4_find_extent"
  std::uint32_t line = 0;
  std::optional<std::uint64_t> inode;
  std::optional<std::uint64_t> block;
  // Task name. It may contain spaces and ':' (rsyslog's "rs:main Q:Reg"), so it ends at the
  // first ": " after "comm " - a comm that itself contains ": " is split wrongly (not seen).
  std::optional<std::string> comm;
  std::string detail;  // remaining free text
};
std::optional<Ext4Message> ParseExt4Message(std::string_view message);

// The daily ext4 error summary (fs/ext4/super.c print_daily_error_info):
//   "EXT4-fs (D): error count: N"  /  "... error count since last fsck: N"   (5.x+)
//   "EXT4-fs (D): initial error at [time ]T: func:line[: inode I][: block B]"
//   "EXT4-fs (D): last error at [time ]T: func:line[: inode I][: block B]"
// These repeat every 24 h, so ClassifyKmsg ignores them; they carry the same counters as
// /sys/fs/ext4/<dev>/ (see ext4_sysfs.h). T is epoch seconds as the (possibly unset) RTC saw it.
struct Ext4ErrorSummary {
  enum class Type { kErrorCount, kFirstError, kLastError };
  Type type = Type::kErrorCount;
  std::string device;
  std::uint64_t error_count = 0;  // error_count only
  std::int64_t time = 0;          // first_error / last_error
  std::string function;
  std::uint32_t line = 0;
  std::optional<std::uint64_t> inode;
  std::optional<std::uint64_t> block;
};
std::optional<Ext4ErrorSummary> ParseExt4ErrorSummary(std::string_view message);

}  // namespace diskprobe::parsers
