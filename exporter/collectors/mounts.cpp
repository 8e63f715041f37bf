#include "collectors/mounts.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "util/sysfs_dir.h"
#include "parsers/ext4_sysfs.h"
#include "parsers/mountinfo.h"
#include "util/file.h"
#include "util/strings.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;

// "179:2\n" -> (179, 2).
std::optional<std::pair<unsigned, unsigned>> ReadDevNumber(const std::string& path) {
  util::FileContent f = util::ReadAttribute(path);
  return f.ok() ? util::ParseDevNumber(f.text) : std::nullopt;
}

// The third field of a mountinfo line, "179:2" -> (179, 2); nullopt when it is not there.
std::optional<std::pair<unsigned, unsigned>> DevField(std::string_view line) {
  for (int skip = 0; skip < 2; ++skip) {
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    line.remove_prefix(sp + 1);
  }
  return util::ParseDevNumber(line.substr(0, line.find(' ')));
}

struct Filesystem {
  BlockLocation where;
  std::string mountpoint, fstype;
  bool read_only = false;
};

}  // namespace

PartitionMap BuildPartitionMap(const std::string& sysfs, const DeviceList& devices) {
  PartitionMap map;
  for (const Device& d : devices) {
    map[{d.major, d.minor}] = {d.name, d.name};
    const std::string dir = util::JoinPath(sysfs, "block/" + d.name);
    for (const std::string& entry : util::ListDir(dir)) {
      // Partitions are subdirectories named after the disk (mmcblk0p1, sda1, nvme0n1p2);
      // holders/, queue/, mmcblk0boot0 links and attributes are not: they have no dev file or
      // do not start with the disk's name.
      if (entry.size() <= d.name.size() || entry.compare(0, d.name.size(), d.name) != 0) continue;
      auto dev = ReadDevNumber(dir + "/" + entry + "/dev");
      if (dev) map[*dev] = {d.name, entry};
    }
  }
  return map;
}

MountsCollector::~MountsCollector() {
  if (fd_ >= 0) ::close(fd_);
}

bool MountsCollector::RefreshMounts(const ScrapeContext& ctx, std::string* error) {
  if (fd_ >= 0 && fd_procfs_ != ctx.paths.procfs) {
    ::close(fd_);
    fd_ = -1;
  }
  if (fd_ >= 0 && fd_on_procfs_ && !force_read_) {
    // 0 ready: the mount table is as it was at the last read (the poll itself consumes an event).
    pollfd p{fd_, POLLPRI, 0};
    if (::poll(&p, 1, 0) == 0) return true;
  }
  if (fd_ < 0) {
    const std::string pid1 = util::JoinPath(ctx.paths.procfs, "1/mountinfo");
    const std::string self = util::JoinPath(ctx.paths.procfs, "self/mountinfo");
    fd_ = ::open(pid1.c_str(), O_RDONLY | O_CLOEXEC);
    int e1 = errno;
    fd_is_self_ = fd_ < 0;
    if (fd_ < 0) fd_ = ::open(self.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      *error = pid1 + ": " + std::strerror(e1) + "; " + self + ": " + std::strerror(errno);
      return false;
    }
    struct statfs fs {};
    fd_on_procfs_ = ::fstatfs(fd_, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
    fd_procfs_ = ctx.paths.procfs;
    ++version_;  // fd_is_self_ may have changed what the same table means
  }
  std::string text;
  std::vector<char> buf(1 << 16);
  ssize_t n;
  off_t off = 0;
  bool truncated = false;
  while ((n = ::pread(fd_, buf.data(), buf.size(), off)) > 0) {
    const std::size_t room = max_mountinfo_bytes_ - text.size();
    if (static_cast<std::size_t>(n) > room) {
      text.append(buf.data(), room);
      truncated = true;
      break;
    }
    text.append(buf.data(), static_cast<std::size_t>(n));
    off += n;
  }
  if (n < 0) {
    *error = fd_procfs_ + " mountinfo: " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  if (truncated) {
    // Only whole lines: the cut one is neither parsed nor counted.
    std::size_t last_nl = text.rfind('\n');
    text.resize(last_nl == std::string::npos ? 0 : last_nl + 1);
  }
  if (force_read_ || text != mounts_text_) {
    mounts_.clear();
    mounts_seen_ = 0;
    std::string_view rest = text;
    while (!rest.empty()) {
      std::size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (line.empty()) continue;
      ++mounts_seen_;
      // Only mounts of monitored disks are kept: a host with 50,000 mounts (bind mounts of
      // kubelet volumes) holds a few of them, not the table.
      // Field 3 ("major:minor") decides before the line is parsed and decoded.
      if (auto dev = DevField(line); !dev || map_.count(*dev) == 0) continue;
      std::optional<parsers::MountInfo> m = parsers::ParseMountinfoLine(line);
      if (m && map_.count({m->major, m->minor}) != 0) mounts_.push_back(std::move(*m));
    }
    truncation_error_ = truncated ? fd_procfs_ + " mountinfo: larger than " + std::to_string(max_mountinfo_bytes_) +
                                        " bytes; read the first " + std::to_string(mounts_seen_) +
                                        " mounts, the rest not seen"
                                  : std::string();
    // On procfs the poll says when the table changed: the text need not be kept.
    mounts_text_ = fd_on_procfs_ ? std::string() : std::move(text);
    force_read_ = false;
    ++version_;
  }
  return true;
}

CollectResult MountsCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  std::string error;
  if (!Refresh(ctx, &error)) return CollectResult::Failed(std::move(error));
  std::vector<Ext4Files> ext4 = ReadExt4(ctx);
  // The text is a function of the mount table, the partition map and the ext4 attributes' text:
  // written anew when one of them changed, copied otherwise.
  if (text_version_ != version_ || ext4 != text_ext4_) {
    text_.clear();
    FamilySink cache(&text_);
    Write(ext4, cache);
    text_version_ = version_;
    text_ext4_ = std::move(ext4);
  }
  out.Text(text_);
  // What was read is written; the cut is the collector's failure, not a silent success.
  if (!truncation_error_.empty()) return CollectResult::Failed(truncation_error_);
  return CollectResult::Ok();
}

bool MountsCollector::Refresh(const ScrapeContext& ctx, std::string* error) {
  const auto now = std::chrono::steady_clock::now();
  if (ctx.devices != map_devices_ || now - map_built_ > kPartitionMapMaxAge) {
    PartitionMap map = BuildPartitionMap(ctx.paths.sysfs, ctx.devices);
    if (map != map_) {
      ++version_;
      force_read_ = true;  // mounts_ holds only the mounts of the old map's devices
    }
    map_ = std::move(map);
    map_devices_ = ctx.devices;
    map_built_ = now;
  }

  if (!RefreshMounts(ctx, error)) return false;
  if (derived_version_ == version_) return true;

  // One series per (device, partition, mountpoint, fstype) for the mounts of a filesystem's root
  // (mountinfo field 4 "/"); when a mount point is mounted over, the later line (the visible
  // mount) wins. Bind mounts of a subdirectory (root "/var/lib/kubelet/pods/...") share the
  // superblock and its read-only state with the root mount, and come and go with pods: counted,
  // not exported. A filesystem visible only through such bind mounts (a container's namespace)
  // gets one series, its first mount. At most kMaxFilesystemSeries series: each filesystem's first
  // (in label order), then the others in label order.
  fs_.clear();
  ext4_.clear();
  omitted_bind_ = omitted_limit_ = 0;
  std::map<std::tuple<std::string, std::string, std::string, std::string>, bool> all;
  std::set<std::string> with_root;
  for (const parsers::MountInfo& m : mounts_)
    if (auto it = map_.find({m.major, m.minor}); it != map_.end() && m.root == "/")
      with_root.insert(it->second.partition);
  std::set<std::string> fallback_done;
  for (const parsers::MountInfo& m : mounts_) {
    auto it = map_.find({m.major, m.minor});
    if (it == map_.end()) continue;
    const BlockLocation& where = it->second;
    // ext2/ext3 mounted by the ext4 driver have their directory under /sys/fs/ext4 too.
    if (m.fstype == "ext4" || m.fstype == "ext3" || m.fstype == "ext2") ext4_[where.partition] = where.disk;
    if (m.root != "/") {
      if (with_root.count(where.partition) != 0 || !fallback_done.insert(where.partition).second) {
        ++omitted_bind_;
        continue;
      }
    }
    // In our own namespace (fd_is_self_) per-mount "ro" is the sandbox's, not the host's.
    all[{where.disk, m.fstype, m.mount_point, where.partition}] =
        parsers::IsReadOnly(fd_is_self_ ? std::string_view() : std::string_view(m.mount_options), m.super_options);
  }
  // Every filesystem's first series before any filesystem's second: a hundred mounts of the root
  // filesystem must not crowd out the boot partition.
  std::set<std::string> has_series;
  for (const auto& [k, v] : all)
    if (fs_.size() < kMaxFilesystemSeries && has_series.insert(std::get<3>(k)).second) fs_.emplace(k, v);
  for (const auto& [k, v] : all)
    if (fs_.size() < kMaxFilesystemSeries) fs_.emplace(k, v);
  omitted_limit_ = all.size() - fs_.size();
  derived_version_ = version_;
  return true;
}

std::vector<MountsCollector::Ext4Files> MountsCollector::ReadExt4(const ScrapeContext& ctx) {
  std::vector<Ext4Files> out;
  for (const auto& [partition, disk] : ext4_) {
    const std::string dir = util::JoinPath(ctx.paths.sysfs, "fs/ext4/" + partition);
    Ext4Files f{disk, partition, {}};
    for (const char* name : {"errors_count", "first_error_time", "last_error_time", "warning_count"}) {
      util::FileContent a = ext4_files_.Read(dir + "/" + name);
      if (a.ok()) f.files.emplace(name, std::move(a.text));
    }
    if (f.files.empty()) continue;  // not the ext4 driver, or a kernel without these attributes
    out.push_back(std::move(f));
  }
  ext4_files_.CloseUnread();
  return out;
}

void MountsCollector::Write(const std::vector<Ext4Files>& ext4, FamilySink& out) const {
  out.Family("diskprobe_filesystem_read_only",
             "1 when writes to the filesystem fail: ro in the mount or superblock options, or "
             "emergency_ro (Linux 6.15+) after an error.",
             MetricType::Gauge);
  for (const auto& [k, v] : fs_)
    out.Sample({{"device", std::get<0>(k)},
                {"fstype", std::get<1>(k)},
                {"mountpoint", std::get<2>(k)},
                {"partition", std::get<3>(k)}},
               v ? 1 : 0);
  out.Family("diskprobe_filesystem_mounts_omitted",
             "Mounts of filesystems on monitored disks without a diskprobe_filesystem_read_only series: "
             "bind mounts of a subdirectory (reason bind), or beyond the series limit (reason limit).",
             MetricType::Gauge);
  out.Sample({{"reason", "bind"}}, static_cast<double>(omitted_bind_));
  out.Sample({{"reason", "limit"}}, static_cast<double>(omitted_limit_));

  struct Ext4Data {
    const std::string& disk;
    const std::string& partition;
    parsers::Ext4Errors e;
  };
  std::vector<Ext4Data> data;
  for (const Ext4Files& f : ext4) data.push_back({f.disk, f.partition, parsers::ParseExt4Errors(f.files)});
  auto family = [&](const char* name, const char* help, MetricType type, auto get) {
    out.Family(name, help, type);
    for (const auto& d : data) {
      auto v = get(d.e);
      if (v) out.Sample({{"device", d.disk}, {"partition", d.partition}}, static_cast<double>(*v));
    }
  };
  family("diskprobe_ext4_errors_total",
         "Errors ext4 recorded in the superblock (errors_count): kept across reboots until fsck clears it.",
         MetricType::Counter, [](const parsers::Ext4Errors& e) { return e.errors_count; });
  family("diskprobe_ext4_warnings_total", "ext4 warnings since the filesystem was mounted (warning_count).",
         MetricType::Counter, [](const parsers::Ext4Errors& e) { return e.warning_count; });
  family("diskprobe_ext4_first_error_timestamp_seconds",
         "Time of the first recorded ext4 error (first_error_time; the clock of a Pi without RTC may be wrong).",
         MetricType::Gauge, [](const parsers::Ext4Errors& e) { return e.first.time; });
  family("diskprobe_ext4_last_error_timestamp_seconds", "Time of the last recorded ext4 error (last_error_time).",
         MetricType::Gauge, [](const parsers::Ext4Errors& e) { return e.last.time; });
}

}  // namespace diskprobe::collectors
