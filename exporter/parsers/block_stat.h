#pragma once
// Parsers for the block layer's I/O statistics.
//
// Source of truth: the kernel's Documentation/block/stat.rst (fields of /sys/block/<dev>/stat) and
// Documentation/admin-guide/iostats.rst (/proc/diskstats = "major minor name" + the same fields).
// Field count by kernel: 11 before 4.18, 15 from 4.18 (discard), 17 from 5.5 (flush). A field the
// kernel does not have is std::nullopt, never 0. Sectors are always 512-byte units, whatever the
// device's logical block size; times are milliseconds. On 32-bit kernels (armhf Raspberry Pi OS)
// the fields are `unsigned long` and wrap at 2^32; on 64-bit kernels they exceed 2^32 (seen in
// https://github.com/giampaolo/psutil/issues/807: sectors_read 4732260326).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace diskprobe::parsers {

inline constexpr std::uint64_t kSectorBytes = 512;

struct BlockStat {
  int field_count = 0;  // 11, 15, 17 (or more on a future kernel; extra fields ignored)
  // Fields 1-11 (always present).
  std::uint64_t read_ios = 0;  // requests completed
  std::uint64_t read_merges = 0;
  std::uint64_t read_sectors = 0;  // 512-byte sectors
  std::uint64_t read_ticks_ms = 0;
  std::uint64_t write_ios = 0;
  std::uint64_t write_merges = 0;
  std::uint64_t write_sectors = 0;
  std::uint64_t write_ticks_ms = 0;
  std::uint64_t in_flight = 0;         // requests in flight now (a gauge)
  std::uint64_t io_ticks_ms = 0;       // time the device had I/O in flight
  std::uint64_t time_in_queue_ms = 0;  // weighted: sum of the time each request spent
  // Fields 12-15 (kernel 4.18+).
  std::optional<std::uint64_t> discard_ios, discard_merges, discard_sectors, discard_ticks_ms;
  // Fields 16-17 (kernel 5.5+).
  std::optional<std::uint64_t> flush_ios, flush_ticks_ms;
};

// Parses the contents of /sys/block/<dev>/stat: whitespace-separated decimal fields (right-aligned
// in %8lu columns; wider values push columns right). Returns nullopt when there are fewer than 11
// fields, a field is not a decimal u64, or the count is 12-14 or 16 (no kernel writes those).
std::optional<BlockStat> ParseBlockStat(std::string_view text);

struct DiskstatsLine {
  unsigned major = 0;
  unsigned minor = 0;
  std::string name;  // kernel name; need not match sd*/mmcblk* (Synology: "sata1",
                     // https://github.com/henrygd/beszel/issues/365)
  BlockStat stat;
};

// Parses one /proc/diskstats line ("major minor name" + 11/15/17 fields). Returns nullopt on
// malformed input, including a Linux 2.4 /proc/partitions line (a #blocks number where the
// name belongs).
std::optional<DiskstatsLine> ParseDiskstatsLine(std::string_view line);

}  // namespace diskprobe::parsers
