#include "scrape.h"

#include <chrono>

#include "exposition.h"
#include "version.h"

namespace diskprobe {

using collectors::AddFamily;
using collectors::AddSample;
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

  Families families;
  std::string cached_text;  // exposition text collectors keep ready-made
  std::vector<std::pair<std::string_view, std::pair<double, bool>>> results;
  for (auto& c : collectors_) {
    auto start = std::chrono::steady_clock::now();
    bool ok = false;
    try {
      ok = c->CollectWithText(ctx, &families, &cached_text);
    } catch (...) {
      ok = false;  // a collector must not throw; if one does, the scrape still answers
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    results.push_back({c->Name(), {secs, ok}});
  }

  auto& build = AddFamily(&families, "diskprobe_build_info",
                          "Version and git revision diskprobe_exporter was built from; value 1.", MetricType::Gauge);
  AddSample(build, {{"revision", kRevision}, {"version", kVersion}}, 1);
  if (!results.empty()) {
    auto& dur = AddFamily(&families, "diskprobe_collector_duration_seconds",
                          "Time the collector took in this scrape.", MetricType::Gauge);
    for (const auto& [name, r] : results) AddSample(dur, {{"collector", std::string(name)}}, r.first);
    auto& ok = AddFamily(&families, "diskprobe_collector_success",
                         "1 when the collector read its source in this scrape, 0 when it failed (reason in the log).",
                         MetricType::Gauge);
    for (const auto& [name, r] : results) AddSample(ok, {{"collector", std::string(name)}}, r.second ? 1 : 0);
  }
  auto& rl = AddFamily(&families, "diskprobe_config_last_reload_successful",
                       "1 when the last configuration load (start-up or SIGHUP) succeeded.", MetricType::Gauge);
  AddSample(rl, {}, reload_ok_.load() ? 1 : 0);
  auto& rts = AddFamily(&families, "diskprobe_config_last_reload_success_timestamp_seconds",
                        "Unix time of the last successful configuration load.", MetricType::Gauge);
  AddSample(rts, {}, reload_success_ts_.load());

  std::string out;
  out.reserve(last_size_ + last_size_ / 8);
  WriteExposition(families, &out);
  out += cached_text;
  last_size_ = out.size();
  return out;
}

}  // namespace diskprobe
