#pragma once
// Every collector, one row each: the only place a collector's name is written. The name is the
// --collector.NAME / --no-collector.NAME flag and the collector label of
// diskprobe_collector_success; the row order is the order of the families in the page.
#include <memory>
#include <string>
#include <vector>

#include "scrape/collector.h"
#include "scrape/scraper.h"

namespace diskprobe {
class KmsgFollower;
class NvmeHealthReader;
class SmartHealthReader;
class ProbeManager;
class SdVendorHealthReader;
}  // namespace diskprobe

namespace diskprobe::collectors {

// A background source whose results a collector exports. The wiring runs a source only when an
// enabled collector needs it: with --no-collector.probes the probes do no I/O at all, as nobody
// would see their results.
enum class Source { kNone, kProbes, kKmsg, kNvme, kSdVendor, kSmart };

// What collectors are built with. A pointer is null when its source does not run; the
// collector then behaves as documented in its header (probes: nothing exported; kmsg: fails).
// The objects must outlive the collectors.
struct Dependencies {
  const ProbeManager* probes = nullptr;  // the probe scheduler (Source::kProbes)
  const KmsgFollower* kmsg = nullptr;    // the kernel log follower, started (Source::kKmsg)
  const NvmeHealthReader* nvme = nullptr;  // the NVMe SMART log reader, started (Source::kNvme)
  const SdVendorHealthReader* sd_vendor = nullptr;  // the SD CMD56 health reader (Source::kSdVendor)
  const SmartHealthReader* smart = nullptr;  // the smartctl runner for sd disks, started (Source::kSmart)
};

struct CollectorInfo {
  std::string name;
  std::string help;  // for --help: what it exports, from where
  bool enabled_by_default;
  Source needs;  // the background source it exports, kNone for files read at scrape time
  std::unique_ptr<Collector> (*make)(const Dependencies&);
};

// Every collector, in exposition order.
const std::vector<CollectorInfo>& AllCollectors();

// True when one of `enabled` needs `source`.
bool Needs(const std::vector<const CollectorInfo*>& enabled, Source source);

// Builds the collectors of `enabled`, in that order, named for the Scraper.
std::vector<NamedCollector> Build(const std::vector<const CollectorInfo*>& enabled, const Dependencies& deps);

}  // namespace diskprobe::collectors
