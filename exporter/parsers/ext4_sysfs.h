#pragma once
// Pure parsers for the error attributes of an ext4 filesystem under /sys/fs/ext4/<dev>/.
// No I/O: the collector reads the files named in kExt4ErrorAttributes and hands their contents in.
// Source of truth: fs/ext4/sysfs.c (ext4_attr_show, print_tstamp), fs/ext4/ext4.h (EXT4_ERR_*),
// Documentation/ABI/testing/sysfs-fs-ext4.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace diskprobe::parsers {

// Attribute files ParseExt4Errors understands. <dev> is the kernel name of the block device
// (mmcblk0p2, sda1, dm-0), not the mount point; the directory disappears on umount. Older kernels
// lack all but errors_count/first_error_time/last_error_time; *_errcode arrived in 5.6,
// warning_count/msg_count in 5.x: missing files are simply absent.
inline constexpr std::array<std::string_view, 15> kExt4ErrorAttributes{
    "errors_count",      "first_error_time",    "first_error_func",   "first_error_line", "first_error_ino",
    "first_error_block", "first_error_errcode", "last_error_time",    "last_error_func",  "last_error_line",
    "last_error_ino",    "last_error_block",    "last_error_errcode", "warning_count",    "msg_count",
};

// Unsigned decimal attribute ("%u\n", "%llu\n"), surrounding whitespace allowed.
// nullopt on empty, signed or non-numeric text.
std::optional<std::uint64_t> ParseExt4Counter(std::string_view contents);

// first_error_time / last_error_time: seconds since the epoch ("%lld\n", 40-bit on disk).
// 0 means "never" and gives nullopt. Small values are real: a Pi without RTC logs errors in 1970
// (kmsg sample 11: first error at 33 s) - never turn them into ages without checking the year.
std::optional<std::int64_t> ParseExt4Time(std::string_view contents);

// *_error_func: up to 32 characters plus '\n'; empty (no error recorded) gives nullopt.
std::optional<std::string> ParseExt4String(std::string_view contents);

// ext4's architecture-independent error codes stored in *_error_errcode (fs/ext4/ext4.h
// EXT4_ERR_*): 1 "UNKNOWN", 2 "EIO", 3 "ENOMEM", 4 "EFSBADCRC", 5 "EFSCORRUPTED", 6 "ENOSPC",
// 7 "ENOKEY", 8 "EROFS", 9 "EFBIG", 10 "EEXIST", 11 "ERANGE", 12 "EOVERFLOW", 13 "EBUSY",
// 14 "ENOTDIR", 15 "ENOTEMPTY", 16 "ESHUTDOWN", 17 "EFAULT". Other values give "".
std::string_view Ext4ErrcodeName(unsigned code);

// One of the two error records the superblock keeps. Zero values mean "not recorded" on disk and
// are absent here (block 0 included: ext4 stores 0 when the error had no block).
struct Ext4ErrorRecord {
  std::optional<std::int64_t> time;     // epoch seconds
  std::optional<std::string> function;  // e.g. "ext4_journal_check_start"
  std::optional<std::uint32_t> line;
  std::optional<std::uint64_t> inode;
  std::optional<std::uint64_t> block;
  std::optional<unsigned> errcode;  // EXT4_ERR_* (see Ext4ErrcodeName), not an errno
};

struct Ext4Errors {
  // s_error_count of the on-disk superblock: survives reboots until fsck clears it. 0 is a value.
  std::optional<std::uint64_t> errors_count;
  Ext4ErrorRecord first, last;
  // In-memory counters since mount ("%d\n", atomic_t).
  std::optional<std::int64_t> warning_count;
  std::optional<std::int64_t> msg_count;
};

// Builds Ext4Errors from attribute name -> file contents; names not present (file missing or
// unreadable) leave their field absent, as do contents that do not parse.
Ext4Errors ParseExt4Errors(const std::map<std::string, std::string, std::less<>>& files);

}  // namespace diskprobe::parsers
