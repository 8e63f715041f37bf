#include "scrape/scraper.h"

#include <chrono>
#include <exception>

#include "scrape/exposition.h"
#include "util/log.h"
#include "version.h"

namespace diskprobe {

using prometheus::MetricType;

Scraper::Scraper(collectors::Paths paths, DeviceRegistry* devices, std::vector<NamedCollector> collectors)
    : paths_(std::move(paths)), devices_(devices) {
  entries_.reserve(collectors.size());
  for (auto& c : collectors) entries_.push_back({std::move(c.name), std::move(c.collector), "", 0, true});
}

void Scraper::SetReloadResult(bool ok, double unix_seconds) {
  reload_ok_.store(ok);
  if (ok) reload_success_ts_.store(unix_seconds);
}

void Scraper::SetError(Entry& e, std::string error) {
  if (error == e.last_error) return;
  if (error.empty()) log::Info("collector recovered", {{"collector", e.name}});
  else log::Error("collector failed", {{"collector", e.name}, {"err", error}});
  e.last_error = std::move(error);
}

std::string Scraper::Render() {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<const DeviceList> devices = devices_->Snapshot();
  collectors::ScrapeContext ctx{paths_, *devices, devices_->LastError()};

  std::string out;
  out.reserve(last_size_ + last_size_ / 8);
  FamilySink sink(&out);
  // Each collector writes its families in its place in the page, in registry order.
  for (Entry& e : entries_) {
    auto start = std::chrono::steady_clock::now();
    collectors::CollectResult r;
    try {
      r = e.collector->Collect(ctx, sink);
    } catch (const std::exception& ex) {
      // A collector must not throw; if one does, the scrape still answers.
      r = collectors::CollectResult::Failed(std::string("exception: ") + ex.what());
    } catch (...) {
      r = collectors::CollectResult::Failed("exception");
    }
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    e.ok = r.ok();
    SetError(e, std::move(r.error));
  }

  sink.Family("diskprobe_build_info", "Version and git revision diskprobe_exporter was built from; value 1.",
              MetricType::Gauge);
  sink.Sample({{"revision", kRevision}, {"version", kVersion}}, 1);
  sink.Family("diskprobe_collector_duration_seconds", "Time the collector took in this scrape.", MetricType::Gauge);
  for (const Entry& e : entries_) sink.Sample({{"collector", e.name}}, e.seconds);
  sink.Family("diskprobe_collector_success",
              "1 when the collector read its source in this scrape, 0 when it failed (reason in the log).",
              MetricType::Gauge);
  for (const Entry& e : entries_) sink.Sample({{"collector", e.name}}, e.ok ? 1 : 0);
  sink.Family("diskprobe_config_last_reload_successful",
              "1 when the last configuration load (start-up or SIGHUP) succeeded.", MetricType::Gauge);
  sink.Sample({}, reload_ok_.load() ? 1 : 0);
  sink.Family("diskprobe_config_last_reload_success_timestamp_seconds",
              "Unix time of the last successful configuration load.", MetricType::Gauge);
  sink.Sample({}, reload_success_ts_.load());

  last_size_ = out.size();
  if (log::Enabled(log::Level::kDebug)) {
    double total = 0;
    std::string failed;
    for (const Entry& e : entries_) {
      total += e.seconds;
      if (!e.ok) failed += (failed.empty() ? "" : ",") + e.name;
    }
    log::Debug("scrape", {{"bytes", std::to_string(out.size())},
                          {"collectors_seconds", std::to_string(total)},
                          {"failed_collectors", failed}});
  }
  return out;
}

}  // namespace diskprobe
