#pragma once
// mounts: the filesystems on monitored disks (partitions included), whether each is read-only,
// and the error records of the ext4 ones.
//
// Sources:
//   <procfs>/1/mountinfo, else <procfs>/self/mountinfo   proc(5); parsers/mountinfo.h
//       pid 1 first, as node_exporter does: it is the host's mount namespace when the exporter
//       runs in a container with the host's /proc, and it is not the exporter's own view, which a
//       systemd unit with ProtectSystem= makes read-only on purpose. self is the fallback where
//       pid 1 is hidden (hidepid=, ProtectProc=) and for fixture trees that only have self.
//   <sysfs>/block/<disk>/dev, <sysfs>/block/<disk>/<partition>/dev
//       major:minor of each monitored disk and its partitions; a mountinfo line whose st_dev is
//       one of these is on that disk. Cached, rebuilt when the device list changes or after 60 s.
//   <sysfs>/fs/ext4/<partition>/{errors_count,first_error_time,last_error_time,warning_count}
//       fs/ext4/sysfs.c; parsers/ext4_sysfs.h. Four single-read attributes per ext4 filesystem,
//       kept open (util::SysfsAttributes).
// Read-only is parsers::IsReadOnly: "ro" in the mount or superblock options, or "emergency_ro"
// (6.15+). Kernels 6.12-6.14 show no sign of an ext4 error remount in mountinfo: the ext4 error
// counter and the kmsg collector's remount_ro kind cover them.
// mountinfo unreadable: no series, the collector fails, the reason is logged once.
//
// Bounds (a host with tens of thousands of mounts, series labelled with pod ids):
//   - series: one per mount of a filesystem's root (mountinfo root "/"); bind mounts of a
//     subdirectory are counted in diskprobe_filesystem_mounts_omitted{reason="bind"} (they share
//     the superblock, whose read-only state the root mount shows). A filesystem seen only through
//     such bind mounts gets one series, its first mount. At most kMaxFilesystemSeries series: one
//     per filesystem first, then the others, each in label order; the rest in
//     diskprobe_filesystem_mounts_omitted{reason="limit"}.
//   - memory: only the lines of monitored disks' filesystems are kept, not the table.
//   - mountinfo is read whole up to kMaxMountinfoBytes: fs.mount-max (default 100,000 mounts per
//     namespace, Documentation/admin-guide/sysctl/fs.rst) at ~300 bytes a line is 30 MB. Beyond
//     it the whole lines read are used, and the collector fails ("larger than 67108864 bytes; read the
//     first N mounts, the rest not seen"): diskprobe_collector_success{collector="mounts"} 0.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "scrape/collector.h"
#include "parsers/mountinfo.h"
#include "util/file.h"

namespace diskprobe::collectors {

// st_dev (major, minor) -> the monitored whole disk and the block device itself (a partition of
// it, or the disk when the filesystem is on the whole disk).
struct BlockLocation {
  std::string disk;       // "mmcblk0"
  std::string partition;  // "mmcblk0p2", or "mmcblk0"
  bool operator==(const BlockLocation&) const = default;
};
using PartitionMap = std::map<std::pair<unsigned, unsigned>, BlockLocation>;

// Builds the map for `devices` from <sysfs>/block/<disk>/ and its partition subdirectories
// (entries named <disk>... that hold a `dev` file). Missing files leave entries out; never throws.
PartitionMap BuildPartitionMap(const std::string& sysfs, const DeviceList& devices);

class MountsCollector : public Collector {
 public:
  // `max_mountinfo_bytes`: kMaxMountinfoBytes; smaller in tests.
  explicit MountsCollector(std::size_t max_mountinfo_bytes = kMaxMountinfoBytes)
      : max_mountinfo_bytes_(max_mountinfo_bytes) {}
  ~MountsCollector() override;
  MountsCollector(const MountsCollector&) = delete;
  MountsCollector& operator=(const MountsCollector&) = delete;
  static constexpr std::chrono::seconds kPartitionMapMaxAge{60};
  static constexpr std::size_t kMaxMountinfoBytes = std::size_t{64} << 20;
  static constexpr std::size_t kMaxFilesystemSeries = 64;

  // The text is kept and written again for as long as the mount table, the partition map and
  // the ext4 attributes (read every scrape) stay the same.
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  // The ext4 attributes of one filesystem as read: file name -> text.
  struct Ext4Files {
    std::string disk, partition;
    std::map<std::string, std::string, std::less<>> files;
    bool operator==(const Ext4Files&) const = default;
  };
  // Brings map_, mounts_ and what is derived from them (fs_, ext4_) up to date; false with
  // *error when mountinfo cannot be read.
  bool Refresh(const ScrapeContext& ctx, std::string* error);
  std::vector<Ext4Files> ReadExt4(const ScrapeContext& ctx);
  void Write(const std::vector<Ext4Files>& ext4, FamilySink& out) const;
  // Reads mountinfo into mounts_ only when it changed: procfs signals a change of the mount table
  // (mount, umount, remount ro) with POLLPRI|POLLERR on an open mountinfo descriptor
  // (fs/proc_namespace.c mounts_poll), so a scrape costs one poll(2) instead of reading and parsing
  // the whole table. Files that are not on procfs (fixture trees) are read every time, and
  // parsed only when their text changed.
  // Returns false with *error when neither mountinfo can be read.
  bool RefreshMounts(const ScrapeContext& ctx, std::string* error);

  const std::size_t max_mountinfo_bytes_;
  int fd_ = -1;            // open mountinfo (kept for poll), -1 before the first scrape
  std::string fd_procfs_;  // the procfs root fd_ was opened under
  bool fd_on_procfs_ = false;
  // fd_ is <procfs>/self/mountinfo because /proc/1 is hidden (systemd's ProtectProc=invisible,
  // a container without hostPID): our own mount namespace, where ProtectSystem=strict or a
  // read-only container mount make mounts "ro" that are writable on the host. Then only the
  // superblock options tell whether the filesystem is read-only.
  bool fd_is_self_ = false;
  std::vector<parsers::MountInfo> mounts_;  // the mounts on map_'s devices only
  std::string mounts_text_;                 // the mountinfo text mounts_ was parsed from (not kept on procfs)
  bool force_read_ = false;                 // map_ changed: mounts_ must be filtered anew from the table
  std::size_t mounts_seen_ = 0;             // lines of the table as read
  std::string truncation_error_;            // "" unless the table was larger than kMaxMountinfoBytes
  std::size_t omitted_bind_ = 0, omitted_limit_ = 0;
  DeviceList map_devices_;  // the device list map_ was built for
  PartitionMap map_;
  std::chrono::steady_clock::time_point map_built_{};
  util::SysfsAttributes ext4_files_;  // the ext4 error attributes, kept open
  std::uint64_t version_ = 0;         // moves whenever mounts_ or map_ changes
  // From mounts_ and map_ as of derived_version_: (device, fstype, mountpoint, partition) -> read
  // only, and the ext4 filesystems (partition -> disk).
  std::uint64_t derived_version_ = ~std::uint64_t{0};
  std::map<std::tuple<std::string, std::string, std::string, std::string>, bool> fs_;
  std::map<std::string, std::string> ext4_;
  // The scrape text, for mount table version text_version_ and ext4 attributes text_ext4_.
  std::uint64_t text_version_ = ~std::uint64_t{0};
  std::vector<Ext4Files> text_ext4_;
  std::string text_;
};

}  // namespace diskprobe::collectors
