#pragma once
// Scrape-time collectors: each reads one source through the configured root paths and writes
// metric families. Collectors never do disk I/O on a monitored device (probes do, in their own
// threads); they read kernel attribute files only, so a scrape cannot hang on a card.
//
// A collector has one method, Collect. Everything around it belongs to the Scraper
// (scrape/scraper.h): its name (given once, in the registry, collectors/registry.h), timing,
// diskprobe_collector_success/_duration_seconds and logging a failure once per change of its
// reason. What a collector needs besides the scrape context (the probe scheduler, the kernel
// log follower) comes through its constructor; background sources are started by the wiring,
// not by a collector.
#include <string>

#include "scrape/exposition.h"
#include "sources/device_registry.h"

namespace diskprobe::collectors {

// Where the host's pseudo-filesystems are (node_exporter's --path.* flags), so every collector
// runs on a fixture tree recorded from a real machine.
struct Paths {
  std::string sysfs = "/sys";
  std::string procfs = "/proc";
  std::string rootfs = "/";
  std::string debugfs = "/sys/kernel/debug";  // mmc_ios: <debugfs>/mmcN/ios (root only)
  // boot_config: the firmware's config.txt; empty = <rootfs>/boot/firmware/config.txt, then
  // <rootfs>/boot/config.txt.
  std::string bootconfig = "";
  std::string kmsg = "/dev/kmsg";  // kmsg follower: the kernel log, followed from the start of its ring buffer
};

// What every collector sees in one scrape: the same device list for all of them.
struct ScrapeContext {
  const Paths& paths;
  const DeviceList& devices;         // whole disks selected by the config, sorted by name
  std::string discovery_error = {};  // why device discovery failed; "" when it worked
};

// Outcome of one Collect: success, or failure with the reason (diskprobe_collector_success 0,
// the reason logged by the scraper when it differs from the previous scrape's).
struct CollectResult {
  std::string error;  // "" = success; otherwise a path or source and what went wrong

  bool ok() const { return error.empty(); }
  static CollectResult Ok() { return {}; }
  // A failure always has a reason: an empty one becomes "failed".
  static CollectResult Failed(std::string why) { return {why.empty() ? std::string("failed") : std::move(why)}; }
};

class Collector {
 public:
  virtual ~Collector() = default;
  // Writes this collector's families to `out`. Returns a failure when its source could not be
  // read; what could be read is still written. Scrapes are serialised: no two Collect calls
  // overlap. Must not throw (the scraper reports an exception as a failure).
  virtual CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) = 0;
};

}  // namespace diskprobe::collectors
