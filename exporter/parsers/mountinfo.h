#pragma once
// Pure parser for /proc/<pid>/mountinfo and the read-only decision for a mounted filesystem.
// No I/O, no exceptions: malformed lines give std::nullopt.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace diskprobe::parsers {

// One line of /proc/<pid>/mountinfo (proc(5), Documentation/filesystems/proc.rst 3.5):
//   36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//   (1)(2)(3)   (4)   (5)      (6)      (7)   (8) (9)    (10)         (11)
struct MountInfo {
  std::uint64_t mount_id = 0;
  std::uint64_t parent_id = 0;
  unsigned major = 0, minor = 0;             // st_dev of the filesystem
  std::string root;                          // decoded (octal escapes)
  std::string mount_point;                   // decoded: "\040" -> ' ', "\011" tab, "\012" newline, "\134" '\'
  std::string mount_options;                 // per-mount options, raw (see DecodeMountinfoEscapes)
  std::vector<std::string> optional_fields;  // "shared:1", "master:2", ... possibly none
  std::string fstype;                        // decoded, e.g. "ext4", "fuse.sshfs"
  std::string source;                        // decoded, e.g. "/dev/mmcblk0p2", "none"
  std::string super_options;                 // per-superblock options, raw
};

// Parses one line (trailing '\n' allowed). nullopt when fields are missing, numbers are bad or
// there is no "-" separator (e.g. a /proc/mounts line).
std::optional<MountInfo> ParseMountinfoLine(std::string_view line);

// Every parsable line of a whole file; `bad_lines` (if given) receives the count of lines that
// were not empty and did not parse.
std::vector<MountInfo> ParseMountinfo(std::string_view text, std::size_t* bad_lines = nullptr);

// Decodes the kernel's octal escapes (fs/proc_namespace.c mangle(): space, tab, newline and
// backslash as \ooo). Other text is kept. Options are left raw on purpose: a decoded "\054"
// would be a ',' that splits an option value.
std::string DecodeMountinfoEscapes(std::string_view text);

// True when the comma-separated `options` contain exactly `name` as an option ("ro" is not
// found in "errors=remount-ro").
bool HasMountOption(std::string_view options, std::string_view name);

// Whether writes to the filesystem fail: "ro" in the per-mount OR the superblock options
// (https://github.com/prometheus/node_exporter/issues/3157: super "ro" while the mount says "rw"), or "emergency_ro" in
// the superblock options (Linux 6.15+, node_exporter PR 3717). "errors=remount-ro" is a policy, not a state.
// Kernels 6.12-6.14 show neither after an ext4 error remount: see ext4_sysfs.h and kmsg.
bool IsReadOnly(std::string_view mount_options, std::string_view super_options);

}  // namespace diskprobe::parsers
