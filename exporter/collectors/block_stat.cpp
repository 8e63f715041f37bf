#include "collectors/block_stat.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "parsers/block_stat.h"
#include "util/file.h"
#include "util/strings.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;
using parsers::BlockStat;
using parsers::kSectorBytes;

// Milliseconds to seconds by division, not by * 1e-3: division is correctly rounded, so 60730 ms
// is written as 60.73 and not 60.730000000000004.
double Seconds(std::uint64_t ms) { return static_cast<double>(ms) / 1000.0; }

using Facts = BlockStatCollector::Facts;

struct DeviceData {
  const Device* dev;
  // Absent when the device is there but its stat could not be read or parsed: only the series
  // that come from stat are then missing, the facts from the other attributes stay.
  std::optional<BlockStat> stat;
  std::optional<unsigned long long> size_sectors, ro;
  const Facts* facts;
};

std::optional<unsigned long long> ParseU64(const util::FileContent& f) {
  if (!f.ok()) return std::nullopt;
  return util::ParseU64(f.text);
}
std::optional<unsigned long long> ReadU64(const std::string& path) { return ParseU64(util::ReadAttribute(path)); }

// First readable, non-empty attribute among `names` (relative to `dir`), trimmed.
std::string ReadFirst(const std::string& dir, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    util::FileContent f = util::ReadAttribute(dir + "/" + n);
    if (!f.ok()) continue;
    std::string_view v = util::Trim(f.text);
    if (!v.empty()) return std::string(v);
  }
  return {};
}

// queue/scheduler lists the choices with the active one in brackets: "none [mq-deadline] kyber".
// A queue without an elevator shows just "none".
std::string ActiveScheduler(std::string_view text) {
  auto open = text.find('[');
  auto close = text.find(']', open == std::string_view::npos ? 0 : open);
  if (open != std::string_view::npos && close != std::string_view::npos)
    return std::string(text.substr(open + 1, close - open - 1));
  return std::string(util::Trim(text));
}

// One counter/gauge family with one sample per device for which `get` yields a value.
template <typename Get>
void Family(FamilySink& out, const std::vector<DeviceData>& data, const char* name, const char* help, MetricType type,
            Get get) {
  out.Family(name, help, type);
  for (const auto& d : data) {
    std::optional<double> v = get(d);
    if (v) out.Sample({{"device", d.dev->name}}, *v);
  }
}

// A family read from the stat file: devices whose stat is unreadable have no sample.
template <typename Get>
void StatFamily(FamilySink& out, const std::vector<DeviceData>& data, const char* name, const char* help,
                MetricType type, Get get) {
  Family(out, data, name, help, type, [&](const DeviceData& d) -> std::optional<double> {
    if (!d.stat) return std::nullopt;
    return get(*d.stat);
  });
}

Facts ReadFacts(const Device& dev, std::optional<unsigned long long> size) {
  const std::string& dir = dev.sysfs_path;
  Facts f;
  f.major = dev.major;
  f.minor = dev.minor;
  f.size_sectors = size;
  f.removable = ReadU64(dir + "/removable");
  f.rotational = ReadU64(dir + "/queue/rotational");
  f.logical_bs = ReadU64(dir + "/queue/logical_block_size");
  f.physical_bs = ReadU64(dir + "/queue/physical_block_size");
  util::FileContent sched = util::ReadAttribute(dir + "/queue/scheduler");
  if (sched.ok()) f.scheduler = ActiveScheduler(sched.text);
  // mmc cards name their product in device/name; SCSI/NVMe/virtio use device/model.
  f.model = ReadFirst(dir, {"device/model", "device/name"});
  f.vendor = ReadFirst(dir, {"device/vendor"});
  f.serial = ReadFirst(dir, {"device/serial", "serial"});
  // The firmware revision: SCSI `rev`, NVMe `firmware_rev`, SD/eMMC `fwrev`. An eMMC also has a
  // `rev`, but that is EXT_CSD_REV (the register layout version, 0x8 = eMMC 5.1), not firmware:
  // an mmc card (it has a `cid`) is read from `fwrev` only.
  const bool mmc_card = util::ReadAttribute(dir + "/device/cid").ok();
  f.revision = mmc_card ? ReadFirst(dir, {"device/fwrev"}) : ReadFirst(dir, {"device/rev", "device/firmware_rev"});
  f.read_at = std::chrono::steady_clock::now();
  return f;
}

std::optional<double> Opt(const std::optional<std::uint64_t>& v, double scale = 1) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}
std::optional<double> OptSeconds(const std::optional<std::uint64_t>& v) {
  if (!v) return std::nullopt;
  return Seconds(*v);
}
std::optional<double> OptU(const std::optional<unsigned long long>& v, double scale = 1) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v) * scale;
}

}  // namespace

CollectResult BlockStatCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  std::vector<DeviceData> data;
  data.reserve(ctx.devices.size());
  // No device list at all (a wrong --path.sysfs, sysfs not mounted) is a failure, not "no disks".
  std::string failure = ctx.discovery_error;
  const auto now = std::chrono::steady_clock::now();
  // Devices whose stat could not be read or parsed while the device is still there: their
  // counters are absent, and diskprobe_block_stat_readable says so (0) next to the failure; their
  // other series (identity, size, ro, queue facts) are exported as for any device.
  for (const Device& dev : ctx.devices) {
    const std::string& dir = dev.sysfs_path;
    util::FileContent statf = files_.Read(dir + "/stat");
    std::optional<BlockStat> stat;
    if (!statf.ok()) {
      // Unplugged since discovery: its directory went with it. Anything else is an error.
      struct stat st {};
      if ((statf.error == ENOENT || statf.error == ENODEV) && ::stat(dir.c_str(), &st) != 0) continue;
      if (failure.empty()) failure = dir + "/stat: " + std::strerror(statf.error);
    } else {
      stat = parsers::ParseBlockStat(statf.text);
      if (!stat && failure.empty()) failure = dir + "/stat: unrecognised format";
    }
    DeviceData d{&dev, stat, ParseU64(files_.Read(dir + "/size")), ParseU64(files_.Read(dir + "/ro")), nullptr};
    // A loop device detached since the last discovery keeps its sysfs entry with size 0:
    // it is gone (discovery skips such devices too).
    if (d.stat && dev.name.rfind("loop", 0) == 0 && d.size_sectors == 0ull) continue;
    auto it = facts_.find(dev.name);
    if (it == facts_.end() || it->second.major != dev.major || it->second.minor != dev.minor ||
        it->second.size_sectors != d.size_sectors || now - it->second.read_at > kFactsMaxAge) {
      it = facts_.insert_or_assign(dev.name, ReadFacts(dev, d.size_sectors)).first;
    }
    d.facts = &it->second;
    data.push_back(d);
  }
  // Forget devices that are gone, so a device that comes back is read afresh.
  for (auto it = facts_.begin(); it != facts_.end();) {
    bool present = false;
    for (const auto& d : data) present = present || d.dev->name == it->first;
    it = present ? std::next(it) : facts_.erase(it);
  }
  files_.CloseUnread();

  using MT = MetricType;
  StatFamily(out, data, "diskprobe_block_reads_completed_total", "Read requests completed (stat field 1).", MT::Counter,
             [](const BlockStat& s) { return std::optional<double>(s.read_ios); });
  StatFamily(out, data, "diskprobe_block_reads_merged_total", "Adjacent read requests merged (stat field 2).",
             MT::Counter, [](const BlockStat& s) { return std::optional<double>(s.read_merges); });
  StatFamily(out, data, "diskprobe_block_read_bytes_total", "Bytes read: 512-byte sectors read (stat field 3) x 512.",
             MT::Counter,
             [](const BlockStat& s) { return std::optional<double>(double(s.read_sectors) * kSectorBytes); });
  StatFamily(out, data, "diskprobe_block_read_time_seconds_total", "Time spent on read requests (stat field 4).",
             MT::Counter, [](const BlockStat& s) { return std::optional<double>(Seconds(s.read_ticks_ms)); });
  StatFamily(out, data, "diskprobe_block_writes_completed_total", "Write requests completed (stat field 5).",
             MT::Counter, [](const BlockStat& s) { return std::optional<double>(s.write_ios); });
  StatFamily(out, data, "diskprobe_block_writes_merged_total", "Adjacent write requests merged (stat field 6).",
             MT::Counter, [](const BlockStat& s) { return std::optional<double>(s.write_merges); });
  StatFamily(out, data, "diskprobe_block_written_bytes_total",
             "Bytes written: 512-byte sectors written (stat field 7) x 512.", MT::Counter,
             [](const BlockStat& s) { return std::optional<double>(double(s.write_sectors) * kSectorBytes); });
  StatFamily(out, data, "diskprobe_block_write_time_seconds_total", "Time spent on write requests (stat field 8).",
             MT::Counter, [](const BlockStat& s) { return std::optional<double>(Seconds(s.write_ticks_ms)); });
  StatFamily(out, data, "diskprobe_block_io_now", "Requests in flight now (stat field 9).", MT::Gauge,
             [](const BlockStat& s) { return std::optional<double>(s.in_flight); });
  StatFamily(out, data, "diskprobe_block_io_time_seconds_total",
             "Time the device had requests in flight, io_ticks (stat field 10); its rate is utilisation.", MT::Counter,
             [](const BlockStat& s) { return std::optional<double>(Seconds(s.io_ticks_ms)); });
  StatFamily(
      out, data, "diskprobe_block_io_time_weighted_seconds_total",
      "Sum of the time every request spent in flight, time_in_queue (stat field 11); its rate is the average queue "
      "size.",
      MT::Counter, [](const BlockStat& s) { return std::optional<double>(Seconds(s.time_in_queue_ms)); });
  StatFamily(out, data, "diskprobe_block_discards_completed_total",
             "Discard requests completed (stat field 12, kernel 4.18+).", MT::Counter,
             [](const BlockStat& s) { return Opt(s.discard_ios); });
  StatFamily(out, data, "diskprobe_block_discards_merged_total",
             "Adjacent discard requests merged (stat field 13, kernel 4.18+).", MT::Counter,
             [](const BlockStat& s) { return Opt(s.discard_merges); });
  StatFamily(out, data, "diskprobe_block_discarded_bytes_total",
             "Bytes discarded: 512-byte sectors discarded (stat field 14, kernel 4.18+) x 512.", MT::Counter,
             [](const BlockStat& s) { return Opt(s.discard_sectors, kSectorBytes); });
  StatFamily(out, data, "diskprobe_block_discard_time_seconds_total",
             "Time spent on discard requests (stat field 15, kernel 4.18+).", MT::Counter,
             [](const BlockStat& s) { return OptSeconds(s.discard_ticks_ms); });
  StatFamily(out, data, "diskprobe_block_flushes_completed_total",
             "Flush requests completed (stat field 16, kernel 5.5+).", MT::Counter,
             [](const BlockStat& s) { return Opt(s.flush_ios); });
  StatFamily(out, data, "diskprobe_block_flush_time_seconds_total",
             "Time spent on flush requests (stat field 17, kernel 5.5+).", MT::Counter,
             [](const BlockStat& s) { return OptSeconds(s.flush_ticks_ms); });

  Family(out, data, "diskprobe_block_size_bytes", "Size of the device: sysfs size (512-byte sectors) x 512.", MT::Gauge,
         [](const DeviceData& d) { return OptU(d.size_sectors, kSectorBytes); });
  Family(out, data, "diskprobe_block_read_only", "1 when the block device is read-only (sysfs ro).", MT::Gauge,
         [](const DeviceData& d) { return OptU(d.ro); });
  Family(out, data, "diskprobe_block_removable", "1 when the device has removable media (sysfs removable).", MT::Gauge,
         [](const DeviceData& d) { return OptU(d.facts->removable); });
  Family(out, data, "diskprobe_block_rotational", "1 for a rotational (spinning) device (sysfs queue/rotational).",
         MT::Gauge, [](const DeviceData& d) { return OptU(d.facts->rotational); });
  Family(out, data, "diskprobe_block_logical_block_size_bytes",
         "Smallest unit the device can address (sysfs queue/logical_block_size).", MT::Gauge,
         [](const DeviceData& d) { return OptU(d.facts->logical_bs); });
  Family(out, data, "diskprobe_block_physical_block_size_bytes",
         "Smallest unit the device writes without read-modify-write (sysfs queue/physical_block_size).", MT::Gauge,
         [](const DeviceData& d) { return OptU(d.facts->physical_bs); });

  out.Family("diskprobe_block_stat_readable",
             "1 when the device's sysfs stat was read and understood at this scrape, 0 when not (its I/O counters "
             "are then absent and the collector fails with the reason).",
             MetricType::Gauge);
  {
    std::vector<std::pair<std::string_view, double>> rows;
    for (const auto& d : data) rows.emplace_back(d.dev->name, d.stat ? 1 : 0);
    std::sort(rows.begin(), rows.end());
    for (const auto& [name, v] : rows) out.Sample({{"device", name}}, v);
  }

  out.Family("diskprobe_block_info", "Identity of a monitored block device; value 1. Empty label: sysfs does not say.",
             MetricType::Gauge);
  for (const auto& d : data) {
    out.Sample({{"device", d.dev->name},
                {"major", std::to_string(d.dev->major)},
                {"minor", std::to_string(d.dev->minor)},
                {"model", d.facts->model},
                {"revision", d.facts->revision},
                {"scheduler", d.facts->scheduler},
                {"serial", d.facts->serial},
                {"vendor", d.facts->vendor}},
               1);
  }
  return failure.empty() ? CollectResult::Ok() : CollectResult::Failed(std::move(failure));
}

}  // namespace diskprobe::collectors
