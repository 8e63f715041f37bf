#include "collectors/sd_vendor.h"

#include <functional>
#include <optional>
#include <string>

namespace diskprobe::collectors {

using prometheus::MetricType;

CollectResult SdVendorCollector::Collect(const ScrapeContext&, FamilySink& out) {
  if (reader_ == nullptr) return CollectResult::Failed("the SD vendor health reader was not started");
  const SdVendorHealthSnapshot snap = reader_->Snapshot();
  using Entry = std::pair<const std::string, SdVendorHealthEntry>;
  auto each = [&](const char* name, const char* help, MetricType type, const std::function<void(const Entry&)>& f) {
    out.Family(name, help, type);
    for (const Entry& e : snap.cards)
      if (!e.second.state.empty()) f(e);
  };
  auto sample = [&](const Entry& e, double v) { out.Sample({{"device", e.first}}, v); };
  // Health families: cards whose last pass was accepted, and only the fields their layout has.
  auto health = [&](const char* name, const char* help, MetricType type,
                    const std::function<std::optional<double>(const parsers::SdVendorHealth&)>& value) {
    each(name, help, type, [&](const Entry& e) {
      if (e.second.state != "ok" || !e.second.health) return;
      if (auto v = value(*e.second.health))
        out.Sample({{"device", e.first}, {"layout", std::string(parsers::InfoOf(e.second.health->layout).name)}}, *v);
    });
  };
  auto u64 = [](const std::optional<std::uint64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  };

  each("diskprobe_sd_health_up",
       "1 when the card's last CMD56 pass gave an accepted vendor health reply, 0 when it failed or every reply was "
       "rejected (the health series are then absent).",
       MetricType::Gauge, [&](const Entry& e) { sample(e, e.second.state == "ok" ? 1 : 0); });
  each("diskprobe_sd_health_read_failures_total",
       "Failed CMD56 commands by reason: open, permission (needs CAP_SYS_RAWIO), not_mmc, card_error, timeout, busy, "
       "ioctl.",
       MetricType::Counter, [&](const Entry& e) {
         for (const auto& [reason, n] : e.second.failures)
           out.Sample({{"device", e.first}, {"reason", reason}}, static_cast<double>(n));
       });
  each("diskprobe_sd_health_rejected_replies_total",
       "CMD56 replies rejected as not health, by layout and reason: all_zero, all_ones, constant, signature, "
       "out_of_range, backwards.",
       MetricType::Counter, [&](const Entry& e) {
         for (const auto& [key, n] : e.second.rejected)
           out.Sample({{"device", e.first}, {"layout", key.first}, {"reason", key.second}}, static_cast<double>(n));
       });
  each("diskprobe_sd_health_reads_total", "Passes that gave an accepted vendor health reply.", MetricType::Counter,
       [&](const Entry& e) { sample(e, static_cast<double>(e.second.reads)); });
  each("diskprobe_sd_health_commands_total", "CMD56 commands sent to the card (each step of a two-step layout counts).",
       MetricType::Counter, [&](const Entry& e) { sample(e, static_cast<double>(e.second.commands)); });
  each("diskprobe_sd_health_last_success_timestamp_seconds", "Unix time of the last accepted vendor health reply.",
       MetricType::Gauge, [&](const Entry& e) {
         if (e.second.reads > 0) sample(e, e.second.last_success_unix);
       });
  each("diskprobe_sd_health_read_duration_seconds", "Wall-clock time of the card's last pass (every command sent).",
       MetricType::Gauge, [&](const Entry& e) { sample(e, e.second.last_pass_seconds); });
  each("diskprobe_sd_health_read_cpu_seconds_total", "CPU time the reader thread spent in this card's passes.",
       MetricType::Counter, [&](const Entry& e) { sample(e, e.second.cpu_seconds); });

  health("diskprobe_sd_health_info", "The vendor layout whose reply was accepted (value 1).", MetricType::Gauge,
         [](const parsers::SdVendorHealth&) -> std::optional<double> { return 1.0; });
  health("diskprobe_sd_health_life_used_ratio",
         "The vendor's estimate of the card's life used, as a fraction (100 - remaining % for layouts that report "
         "life left); SanDisk's may exceed 1.",
         MetricType::Gauge, [](const parsers::SdVendorHealth& h) -> std::optional<double> {
           if (!h.life_used_percent) return std::nullopt;
           return *h.life_used_percent / 100.0;
         });
  health("diskprobe_sd_health_erase_count_average", "Program/erase cycles of the average block, as the card reports.",
         MetricType::Gauge, [](const parsers::SdVendorHealth& h) { return h.erase_count_average; });
  health("diskprobe_sd_health_erase_count_max", "Program/erase cycles of the most worn block.", MetricType::Gauge,
         [&](const parsers::SdVendorHealth& h) { return u64(h.erase_count_max); });
  health("diskprobe_sd_health_grown_bad_blocks", "Blocks the card retired since manufacture.", MetricType::Gauge,
         [&](const parsers::SdVendorHealth& h) { return u64(h.grown_bad_blocks); });
  health("diskprobe_sd_health_spare_blocks", "Spare blocks left for replacing bad ones.", MetricType::Gauge,
         [&](const parsers::SdVendorHealth& h) { return u64(h.spare_blocks); });
  health("diskprobe_sd_health_power_cycles_total", "Power cycles the card counted.", MetricType::Counter,
         [&](const parsers::SdVendorHealth& h) { return u64(h.power_cycles); });
  health("diskprobe_sd_health_abnormal_power_losses_total", "Power losses without a clean shutdown the card counted.",
         MetricType::Counter, [&](const parsers::SdVendorHealth& h) { return u64(h.abnormal_power_losses); });
  health("diskprobe_sd_health_written_bytes_total", "Host data written over the card's life (sectors x 512).",
         MetricType::Counter, [&](const parsers::SdVendorHealth& h) { return u64(h.written_bytes); });
  return CollectResult::Ok();
}

}  // namespace diskprobe::collectors
