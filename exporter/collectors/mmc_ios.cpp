#include "collectors/mmc_ios.h"

#include <cerrno>
#include <cstring>

#include "util/sysfs_dir.h"
#include "parsers/mmc_ios.h"
#include "util/file.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;

struct HostData {
  MmcHost host;
  const std::string* driver;
  parsers::MmcIos ios;
};

template <typename Get>
void Family(FamilySink& out, const std::vector<HostData>& data, const char* name, const char* help, Get get) {
  out.Family(name, help, MetricType::Gauge);
  for (const auto& d : data) {
    std::optional<double> v = get(d.ios);
    if (v) out.Sample({{"device", d.host.device}, {"host", d.host.host}}, *v);
  }
}

template <typename T>
std::optional<double> D(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

std::string Reason(const std::string& path, int err, const std::string& debugfs) {
  std::string r = path + ": " + std::strerror(err);
  if (err == ENOENT) r += " (is debugfs mounted at " + debugfs + "?)";
  if (err == EACCES || err == EPERM)
    r += " (debugfs is readable by root only, unless granted: the systemd unit gives its group read on mmc*/ios at "
         "start)";
  return r;
}

}  // namespace

std::vector<MmcHost> ListMmcHosts(const std::string& sysfs) {
  std::vector<MmcHost> out;
  const std::string cls = util::JoinPath(sysfs, "class/mmc_host");
  for (const std::string& host : util::ListDir(cls)) {
    MmcHost h{host, ""};
    // The card is a child named "<host>:<RCA>"; its block/ directory names the disk.
    const std::string prefix = host + ":";
    for (const std::string& child : util::ListDir(cls + "/" + host)) {
      if (child.compare(0, prefix.size(), prefix) != 0) continue;
      std::vector<std::string> blocks = util::ListDir(cls + "/" + host + "/" + child + "/block");
      if (!blocks.empty()) {
        h.device = blocks.front();
        break;
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

CollectResult MmcIosCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  std::vector<MmcHost> hosts = ListMmcHosts(ctx.paths.sysfs);
  if (hosts.empty()) return CollectResult::Ok();  // not an SD/eMMC machine: nothing to read is not a failure
  std::string failure;
  std::vector<HostData> data;
  std::vector<std::pair<MmcHost, const std::string*>> all;
  for (const MmcHost& h : hosts) {
    auto it = drivers_.find(h.host);
    if (it == drivers_.end()) {
      std::string driver =
          util::LinkBasename(util::JoinPath(ctx.paths.sysfs, "class/mmc_host/" + h.host + "/device/driver"));
      it = drivers_.emplace(h.host, std::move(driver)).first;
    }
    all.push_back({h, &it->second});
    const std::string path = util::JoinPath(ctx.paths.debugfs, h.host + "/ios");
    util::FileContent f = util::ReadAttribute(path);
    if (!f.ok()) {
      if (failure.empty()) failure = Reason(path, f.error, ctx.paths.debugfs);
      continue;
    }
    auto ios = parsers::ParseMmcIos(f.text);
    if (!ios) {
      if (failure.empty()) failure = path + ": " + ios.error;
      continue;
    }
    data.push_back({h, &it->second, *ios});
  }

  out.Family("diskprobe_mmc_host_info",
             "An mmc host, the block device of its card (empty: SDIO or no card) and its driver; value 1.",
             MetricType::Gauge);
  for (const auto& [h, driver] : all) out.Sample({{"device", h.device}, {"driver", *driver}, {"host", h.host}}, 1);

  Family(out, data, "diskprobe_mmc_ios_clock_hertz",
         "Bus clock the mmc core requested (debugfs ios 'clock'); 0 when the card is powered off or runtime-suspended.",
         [](const parsers::MmcIos& i) { return D(i.clock_hz); });
  Family(out, data, "diskprobe_mmc_ios_actual_clock_hertz",
         "Bus clock the host controller delivers (debugfs ios 'actual clock'); absent when the driver does not say.",
         [](const parsers::MmcIos& i) { return D(i.actual_clock_hz); });
  Family(out, data, "diskprobe_mmc_ios_bus_width", "Data bus width in bits: 1, 4 or 8 (debugfs ios 'bus width').",
         [](const parsers::MmcIos& i) { return D(i.bus_width_bits); });
  Family(out, data, "diskprobe_mmc_ios_signal_voltage_volts",
         "I/O signalling voltage: 3.3, 1.8 or 1.2 (debugfs ios 'signal voltage').",
         [](const parsers::MmcIos& i) { return D(i.signal_voltage_volts); });
  Family(out, data, "diskprobe_mmc_ios_power_mode",
         "Card power: 0 off, 1 up (powering up), 2 on (debugfs ios 'power mode').",
         [](const parsers::MmcIos& i) { return D(i.power_mode); });
  Family(out, data, "diskprobe_mmc_ios_vdd_volts",
         "Lower bound of the card supply voltage window selected (debugfs ios 'vdd'); absent when invalid (off).",
         [](const parsers::MmcIos& i) { return D(i.vdd_min_volts); });
  out.Family("diskprobe_mmc_ios_timing_spec",
             "Bus timing: the kernel's MMC_TIMING_* code, its name in the timing label (debugfs ios 'timing spec').",
             MetricType::Gauge);
  for (const auto& d : data) {
    if (!d.ios.timing_code) continue;
    std::string name =
        d.ios.timing_name ? *d.ios.timing_name : std::string(parsers::MmcTimingName(*d.ios.timing_code).value_or(""));
    out.Sample({{"device", d.host.device}, {"host", d.host.host}, {"timing", name}}, *d.ios.timing_code);
  }
  return failure.empty() ? CollectResult::Ok() : CollectResult::Failed(std::move(failure));
}

}  // namespace diskprobe::collectors
