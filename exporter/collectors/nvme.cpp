#include "collectors/nvme.h"

#include <functional>
#include <vector>

namespace diskprobe::collectors {

using prometheus::MetricType;

namespace {

struct Row {
  const std::string* device;
  const NvmeHealthEntry* entry;
};

}  // namespace

CollectResult NvmeCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  if (reader_ == nullptr) return CollectResult::Failed("the NVMe health reader was not started");
  const NvmeHealthSnapshot snap = reader_->Snapshot();
  // Disks monitored now, in the scrape's order (sorted by name), that the reader knows.
  std::vector<Row> rows;
  for (const Device& d : ctx.devices) {
    auto it = snap.disks.find(d.name);
    if (it != snap.disks.end()) rows.push_back({&d.name, &it->second});
  }
  auto each = [&](const char* name, const char* help, MetricType type, const std::function<void(const Row&)>& f) {
    out.Family(name, help, type);
    for (const Row& r : rows) f(r);
  };
  auto sample = [&](const Row& r, double v) { out.Sample({{"controller", r.entry->controller}, {"device", *r.device}}, v); };
  // Families of the page: only rows whose last read succeeded.
  auto page = [&](const char* name, const char* help, MetricType type,
                  const std::function<double(const parsers::NvmeSmartLog&)>& value) {
    each(name, help, type, [&](const Row& r) {
      if (r.entry->log) sample(r, value(*r.entry->log));
    });
  };

  each("diskprobe_nvme_smart_up",
       "1 when the last Get Log Page 02h (SMART / Health Information) of the disk's controller succeeded, 0 when it "
       "failed (the page's series are then absent).",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->log || !r.entry->error.empty()) sample(r, r.entry->log ? 1 : 0);
       });
  each("diskprobe_nvme_smart_read_failures_total",
       "Failed SMART log reads by reason: open, permission (needs CAP_SYS_ADMIN), ioctl, nvme_status, parse.",
       MetricType::Counter, [&](const Row& r) {
         for (const auto& [reason, n] : r.entry->failures)
           out.Sample({{"controller", r.entry->controller}, {"device", *r.device}, {"reason", reason}},
                      static_cast<double>(n));
       });
  each("diskprobe_nvme_smart_reads_total", "Successful SMART log reads.", MetricType::Counter,
       [&](const Row& r) { sample(r, static_cast<double>(r.entry->reads)); });
  each("diskprobe_nvme_smart_skipped_suspended_total",
       "SMART log reads skipped because the controller was runtime-suspended (reading would wake it).",
       MetricType::Counter, [&](const Row& r) { sample(r, static_cast<double>(r.entry->skipped_suspended)); });
  each("diskprobe_nvme_smart_last_success_timestamp_seconds", "Unix time of the last successful SMART log read.",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->reads > 0) sample(r, r.entry->last_success_unix);
       });
  each("diskprobe_nvme_smart_read_duration_seconds", "Wall-clock time of the last successful SMART log read.",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->reads > 0) sample(r, r.entry->last_read_seconds);
       });
  each("diskprobe_nvme_smart_read_cpu_seconds_total", "CPU time the reader thread spent in this controller's reads.",
       MetricType::Counter, [&](const Row& r) { sample(r, r.entry->read_cpu_seconds); });

  each("diskprobe_nvme_critical_warning",
       "Critical Warning bits of the SMART log, one series per defined bit (kind): 1 = set by the controller.",
       MetricType::Gauge, [&](const Row& r) {
         if (!r.entry->log) return;
         for (std::size_t b = 0; b < parsers::kNvmeCriticalWarningBits.size(); ++b)
           out.Sample({{"controller", r.entry->controller},
                       {"device", *r.device},
                       {"kind", parsers::kNvmeCriticalWarningBits[b]}},
                      (r.entry->log->critical_warning >> b) & 1u);
       });
  each("diskprobe_nvme_temperature_celsius",
       "Composite Temperature of the controller (SMART log, kelvins - 273.15); absent when it reports 0 K.",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->log && r.entry->log->composite_temperature_kelvin != 0)
           sample(r, parsers::NvmeSmartLog::Celsius(r.entry->log->composite_temperature_kelvin));
       });
  each("diskprobe_nvme_temperature_sensor_celsius", "Temperature Sensors 1-8 of the SMART log that are implemented.",
       MetricType::Gauge, [&](const Row& r) {
         if (!r.entry->log) return;
         for (std::size_t i = 0; i < r.entry->log->temperature_sensor_kelvin.size(); ++i) {
           const std::uint16_t k = r.entry->log->temperature_sensor_kelvin[i];
           if (k == 0) continue;
           const std::string sensor = std::to_string(i + 1);
           out.Sample({{"controller", r.entry->controller}, {"device", *r.device}, {"sensor", sensor}},
                      parsers::NvmeSmartLog::Celsius(k));
         }
       });
  page("diskprobe_nvme_available_spare_ratio", "Available Spare: fraction of the spare capacity left (0-1).",
       MetricType::Gauge, [](const auto& l) { return l.available_spare / 100.0; });
  page("diskprobe_nvme_available_spare_threshold_ratio",
       "Available Spare Threshold: below it the controller sets the available_spare warning (0-1).", MetricType::Gauge,
       [](const auto& l) { return l.available_spare_threshold / 100.0; });
  page("diskprobe_nvme_percentage_used_ratio",
       "Percentage Used: the vendor's estimate of the life used, as a fraction; may exceed 1 (up to 2.55).",
       MetricType::Gauge, [](const auto& l) { return l.percentage_used / 100.0; });
  page("diskprobe_nvme_data_read_bytes_total",
       "Data Units Read x 512000 bytes (the controller counts thousands of 512-byte units, rounded up).",
       MetricType::Counter, [](const auto& l) { return l.data_units_read.Times(512000.0); });
  page("diskprobe_nvme_data_written_bytes_total",
       "Data Units Written x 512000 bytes (the controller counts thousands of 512-byte units, rounded up).",
       MetricType::Counter, [](const auto& l) { return l.data_units_written.Times(512000.0); });
  page("diskprobe_nvme_host_read_commands_total", "Read commands completed by the controller.", MetricType::Counter,
       [](const auto& l) { return l.host_read_commands.AsDouble(); });
  page("diskprobe_nvme_host_write_commands_total", "Write commands completed by the controller.", MetricType::Counter,
       [](const auto& l) { return l.host_write_commands.AsDouble(); });
  page("diskprobe_nvme_controller_busy_seconds_total",
       "Controller Busy Time (the controller counts minutes with I/O outstanding) in seconds.", MetricType::Counter,
       [](const auto& l) { return l.controller_busy_time_minutes.Times(60.0); });
  page("diskprobe_nvme_power_cycles_total", "Power cycles of the controller.", MetricType::Counter,
       [](const auto& l) { return l.power_cycles.AsDouble(); });
  page("diskprobe_nvme_power_on_seconds_total", "Power-on time: the controller's Power On Hours (whole hours) x 3600.",
       MetricType::Counter, [](const auto& l) { return l.power_on_hours.Times(3600.0); });
  page("diskprobe_nvme_unsafe_shutdowns_total", "Unsafe shutdowns (power lost without a shutdown notification).",
       MetricType::Counter, [](const auto& l) { return l.unsafe_shutdowns.AsDouble(); });
  page("diskprobe_nvme_media_errors_total",
       "Media and Data Integrity Errors: unrecovered data integrity errors detected by the controller.",
       MetricType::Counter, [](const auto& l) { return l.media_errors.AsDouble(); });
  page("diskprobe_nvme_error_log_entries_total", "Number of Error Information Log Entries over the controller's life.",
       MetricType::Counter, [](const auto& l) { return l.error_log_entries.AsDouble(); });
  page("diskprobe_nvme_warning_temperature_seconds_total",
       "Time above the Warning Composite Temperature Threshold (counted in minutes by the controller), in seconds.",
       MetricType::Counter, [](const auto& l) { return l.warning_temperature_time_minutes * 60.0; });
  page("diskprobe_nvme_critical_temperature_seconds_total",
       "Time above the Critical Composite Temperature Threshold (counted in minutes by the controller), in seconds.",
       MetricType::Counter, [](const auto& l) { return l.critical_temperature_time_minutes * 60.0; });
  return CollectResult::Ok();
}

}  // namespace diskprobe::collectors
