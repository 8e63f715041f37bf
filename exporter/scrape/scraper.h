#pragma once
// One scrape: runs every enabled collector, adds the exporter's own metrics, and renders the
// Prometheus text exposition format 0.0.4. Scrapes are serialised; collectors read kernel
// attribute files only, and probe results (when present) are snapshots, so no scrape waits on
// a device's I/O.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "scrape/collector.h"
#include "sources/device_registry.h"

namespace diskprobe {

class ProbeManager;

class Scraper {
 public:
  // `probes` may be null (probes disabled, tests).
  Scraper(collectors::Paths paths, DeviceRegistry* devices,
          std::vector<std::unique_ptr<collectors::Collector>> collectors, const ProbeManager* probes = nullptr);

  // Renders the whole exposition. Thread-safe; never throws.
  std::string Render();

  // Outcome of the last configuration (re)load, Prometheus' own names and semantics:
  // diskprobe_config_last_reload_successful and ..._success_timestamp_seconds.
  void SetReloadResult(bool ok, double unix_seconds);

  const collectors::Paths& paths() const { return paths_; }

 private:
  collectors::Paths paths_;
  DeviceRegistry* devices_;
  const ProbeManager* probes_;
  std::vector<std::unique_ptr<collectors::Collector>> collectors_;
  std::mutex mu_;
  std::atomic<bool> reload_ok_{true};
  std::atomic<double> reload_success_ts_{0};
  std::size_t last_size_ = 4096;  // size of the previous exposition, to reserve the buffer once
  // Kept between scrapes for their capacity (scrapes are serialised by mu_).
  struct CollectorResult {
    std::string_view name;
    double seconds;
    bool ok;
  };
  std::vector<CollectorResult> results_;
  std::string tail_;  // text collectors put at the end of the exposition
};

}  // namespace diskprobe
