#pragma once
// One scrape: runs every enabled collector, adds the exporter's own metrics, and renders the
// Prometheus text exposition format 0.0.4. Scrapes are serialised; collectors read kernel
// attribute files only, and probe results (when present) are snapshots, so no scrape waits on
// a device's I/O.
//
// The scraper owns what every collector would otherwise repeat: it times each Collect, writes
// diskprobe_collector_duration_seconds and diskprobe_collector_success under the collector's
// name, and logs a failure once when its reason changes ("collector failed", then "collector
// recovered"), never once per scrape.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "scrape/collector.h"
#include "sources/device_registry.h"

namespace diskprobe {

// A collector and the name it is known by (--collector.NAME, the collector label).
struct NamedCollector {
  std::string name;
  std::unique_ptr<collectors::Collector> collector;
};

class Scraper {
 public:
  // Collectors run, and appear in the exposition, in the order given.
  Scraper(collectors::Paths paths, DeviceRegistry* devices, std::vector<NamedCollector> collectors);

  // Renders the whole exposition. Thread-safe; never throws.
  std::string Render();

  // Outcome of the last configuration (re)load, Prometheus' own names and semantics:
  // diskprobe_config_last_reload_successful and ..._success_timestamp_seconds.
  void SetReloadResult(bool ok, double unix_seconds);

 private:
  struct Entry {
    std::string name;
    std::unique_ptr<collectors::Collector> collector;
    std::string last_error;  // of the previous scrape; "" healthy (logged on change only)
    double seconds = 0;      // of this scrape
    bool ok = true;
  };
  // Logs `error` for `e` when it differs from the last one; "" logs a recovery once.
  static void SetError(Entry& e, std::string error);

  collectors::Paths paths_;
  DeviceRegistry* devices_;
  std::vector<Entry> entries_;
  std::mutex mu_;
  std::atomic<bool> reload_ok_{true};
  std::atomic<double> reload_success_ts_{0};
  std::size_t last_size_ = 4096;  // size of the previous exposition, to reserve the buffer once
};

}  // namespace diskprobe
