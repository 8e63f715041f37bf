#include "scrape/scraper.h"

#include <chrono>

#include "scrape/exposition.h"
#include "util/log.h"
#include "version.h"

namespace diskprobe {

using collectors::Families;
using prometheus::MetricType;

Scraper::Scraper(collectors::Paths paths, DeviceRegistry* devices,
                 std::vector<std::unique_ptr<collectors::Collector>> collectors, const ProbeManager* probes)
    : paths_(std::move(paths)), devices_(devices), probes_(probes), collectors_(std::move(collectors)) {}

void Scraper::SetReloadResult(bool ok, double unix_seconds) {
  reload_ok_.store(ok);
  if (ok) reload_success_ts_.store(unix_seconds);
}

std::string Scraper::Render() {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const DeviceList> devices = devices_->Snapshot();
  collectors::ScrapeContext ctx{paths_, *devices, probes_, devices_->LastError()};

  std::string out;
  out.reserve(last_size_ + last_size_ / 8);
  tail_.clear();
  Families families;
  results_.clear();
  // Each collector's output is written as soon as it has run: its text, then its families.
  for (auto& c : collectors_) {
    auto start = std::chrono::steady_clock::now();
    bool ok = false;
    try {
      ok = c->CollectWithText(ctx, &families, &out, &tail_);
    } catch (...) {
      ok = false;  // a collector must not throw; if one does, the scrape still answers
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results_.push_back({c->Name(), secs, ok});
    WriteExposition(families, &out);
    families.clear();
  }

  collectors::TextSink own(&out);
  own.Family("diskprobe_build_info", "Version and git revision diskprobe_exporter was built from; value 1.",
             MetricType::Gauge);
  own.Sample({{"revision", kRevision}, {"version", kVersion}}, 1);
  own.Family("diskprobe_collector_duration_seconds", "Time the collector took in this scrape.", MetricType::Gauge);
  for (const auto& r : results_) own.Sample({{"collector", r.name}}, r.seconds);
  own.Family("diskprobe_collector_success",
             "1 when the collector read its source in this scrape, 0 when it failed (reason in the log).",
             MetricType::Gauge);
  for (const auto& r : results_) own.Sample({{"collector", r.name}}, r.ok ? 1 : 0);
  own.Family("diskprobe_config_last_reload_successful",
             "1 when the last configuration load (start-up or SIGHUP) succeeded.", MetricType::Gauge);
  own.Sample({}, reload_ok_.load() ? 1 : 0);
  own.Family("diskprobe_config_last_reload_success_timestamp_seconds",
             "Unix time of the last successful configuration load.", MetricType::Gauge);
  own.Sample({}, reload_success_ts_.load());

  out += tail_;
  last_size_ = out.size();
  if (log::Enabled(log::Level::kDebug)) {
    double total = 0;
    std::string failed;
    for (const auto& r : results_) {
      total += r.seconds;
      if (!r.ok) failed += (failed.empty() ? "" : ",") + std::string(r.name);
    }
    log::Debug("scrape", {{"bytes", std::to_string(out.size())}, {"collectors_seconds", std::to_string(total)},
                          {"failed_collectors", failed}});
  }
  return out;
}

}  // namespace diskprobe
