#include "collectors/smart.h"

#include <array>
#include <functional>
#include <vector>

namespace diskprobe::collectors {

using prometheus::MetricType;

namespace {

struct Row {
  const std::string* device;
  const SmartHealthEntry* entry;
};

// smartctl's exit status bits 2-7 (smartctl(8), "EXIT STATUS"); bits 0-1 mean the run failed.
constexpr std::array<const char*, 6> kStatusBits = {
    "command_failed",           // 2: a SMART or other command to the disk failed, or a checksum error
    "disk_failing",             // 3: SMART status check returned "DISK FAILING"
    "prefail_below_threshold",  // 4: a prefailure attribute is at or below its threshold now
    "below_threshold_past",     // 5: an attribute was at or below its threshold in the past
    "error_log",                // 6: the device error log has errors
    "self_test_errors",         // 7: the self-test log has errors
};

std::string Num(int v) { return std::to_string(v); }

}  // namespace

CollectResult SmartCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  if (reader_ == nullptr) return CollectResult::Failed("the SMART reader (smartctl) was not started");
  const SmartHealthSnapshot snap = reader_->Snapshot();
  out.Family("diskprobe_smart_smartctl_up",
             "1 when smartctl (health.smartctl_path) could be run at the last pass, 0 when it is missing or not "
             "executable (no per-disk SMART series then).",
             MetricType::Gauge);
  if (snap.passes > 0) out.Sample({}, snap.smartctl_available ? 1 : 0);

  std::vector<Row> rows;
  for (const Device& d : ctx.devices) {
    auto it = snap.disks.find(d.name);
    if (it != snap.disks.end()) rows.push_back({&d.name, &it->second});
  }
  auto each = [&](const char* name, const char* help, MetricType type, const std::function<void(const Row&)>& f) {
    out.Family(name, help, type);
    for (const Row& r : rows) f(r);
  };
  auto sample = [&](const Row& r, double v) { out.Sample({{"device", *r.device}}, v); };
  auto report = [&](const char* name, const char* help, MetricType type,
                    const std::function<std::optional<double>(const parsers::SmartctlReport&)>& value) {
    each(name, help, type, [&](const Row& r) {
      if (!r.entry->report) return;
      if (auto v = value(*r.entry->report)) sample(r, *v);
    });
  };

  each("diskprobe_smart_up",
       "1 when the last smartctl run for the disk succeeded, 0 when it failed (the drive's series are then absent).",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->report || !r.entry->error.empty()) sample(r, r.entry->report ? 1 : 0);
       });
  each("diskprobe_smart_read_failures_total",
       "Failed smartctl runs by reason: permission (needs CAP_SYS_RAWIO), open, unknown_usb_bridge, command_line, "
       "timeout, output_too_large, killed, parse, spawn.",
       MetricType::Counter, [&](const Row& r) {
         for (const auto& [reason, n] : r.entry->failures)
           out.Sample({{"device", *r.device}, {"reason", reason}}, static_cast<double>(n));
       });
  each("diskprobe_smart_reads_total", "Successful smartctl runs.", MetricType::Counter,
       [&](const Row& r) { sample(r, static_cast<double>(r.entry->reads)); });
  each("diskprobe_smart_skipped_total",
       "Passes that did not read the disk, by reason: standby (smartctl found it spun down and stopped), suspended "
       "(runtime-suspended: not opened).",
       MetricType::Counter, [&](const Row& r) {
         for (const auto& [reason, n] : r.entry->skipped)
           out.Sample({{"device", *r.device}, {"reason", reason}}, static_cast<double>(n));
       });
  each("diskprobe_smart_last_success_timestamp_seconds", "Unix time of the last successful smartctl run.",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->reads > 0) sample(r, r.entry->last_success_unix);
       });
  each("diskprobe_smart_read_duration_seconds", "Wall-clock time of the last successful smartctl run.",
       MetricType::Gauge, [&](const Row& r) {
         if (r.entry->reads > 0) sample(r, r.entry->last_read_seconds);
       });
  each("diskprobe_smart_read_cpu_seconds_total", "User + system CPU time of all smartctl runs for the disk.",
       MetricType::Counter, [&](const Row& r) { sample(r, r.entry->read_cpu_seconds); });
  each("diskprobe_smart_read_input_bytes_total",
       "File system input of all smartctl runs for the disk (its drive database; the SMART commands are not file "
       "I/O), from the kernel's rusage in 512-byte blocks.",
       MetricType::Counter, [&](const Row& r) { sample(r, static_cast<double>(r.entry->read_input_blocks) * 512.0); });

  each("diskprobe_smart_info",
       "The drive as smartctl identified it: device type (the USB bridge dialect: sat, usbjmicron, sntrealtek ...), "
       "protocol, drive database family, model and firmware.",
       MetricType::Gauge, [&](const Row& r) {
         if (!r.entry->report) return;
         const auto& p = *r.entry->report;
         out.Sample({{"device", *r.device},
                     {"firmware", p.firmware_version},
                     {"model", p.model_name},
                     {"model_family", p.model_family},
                     {"protocol", p.protocol},
                     {"type", p.device_type}},
                    1);
       });
  report("diskprobe_smart_health_passed",
         "The drive's own overall health verdict (SMART RETURN STATUS): 1 passed, 0 failed; absent when it gives none.",
         MetricType::Gauge, [](const auto& p) -> std::optional<double> {
           if (!p.smart_passed) return std::nullopt;
           return *p.smart_passed ? 1.0 : 0.0;
         });
  each("diskprobe_smart_status_bit",
       "smartctl's exit status bits 2-7 of the last successful run, one series per bit (kind): 1 = set.",
       MetricType::Gauge, [&](const Row& r) {
         if (!r.entry->report) return;
         for (std::size_t b = 0; b < kStatusBits.size(); ++b)
           out.Sample({{"device", *r.device}, {"kind", kStatusBits[b]}}, (r.entry->report->exit_status >> (b + 2)) & 1);
       });
  report("diskprobe_smart_temperature_celsius", "Current drive temperature as smartctl reports it.", MetricType::Gauge,
         [](const auto& p) { return p.temperature_celsius; });
  report("diskprobe_smart_power_on_seconds_total", "Power-on time: the drive's power-on hours x 3600.",
         MetricType::Counter, [](const auto& p) -> std::optional<double> {
           if (!p.power_on_hours) return std::nullopt;
           return static_cast<double>(*p.power_on_hours) * 3600.0;
         });
  report("diskprobe_smart_power_cycles_total", "Power cycles of the drive.", MetricType::Counter,
         [](const auto& p) -> std::optional<double> {
           if (!p.power_cycles) return std::nullopt;
           return static_cast<double>(*p.power_cycles);
         });
  auto raw_of = [](int id) {
    return [id](const parsers::SmartctlReport& p) -> std::optional<double> {
      const parsers::SmartAttribute* a = p.Attribute(id);
      if (a == nullptr) return std::nullopt;
      return static_cast<double>(a->raw);
    };
  };
  report("diskprobe_smart_reallocated_sectors_total",
         "Raw value of attribute 5 (Reallocated_Sector_Ct; on SSDs reallocated blocks): sectors or blocks retired.",
         MetricType::Counter, raw_of(5));
  report("diskprobe_smart_pending_sectors",
         "Raw value of attribute 197 (Current_Pending_Sector): unstable sectors waiting to be remapped.",
         MetricType::Gauge, raw_of(197));
  report("diskprobe_smart_offline_uncorrectable_sectors",
         "Raw value of attribute 198 (Offline_Uncorrectable): sectors the offline scan could not read.",
         MetricType::Gauge, raw_of(198));
  each("diskprobe_smart_written_bytes_total",
       "Bytes the host wrote, from the attribute (label) whose name gives its unit: Total_LBAs_Written x logical block "
       "size, Host_Writes_32MiB, Host_Writes_GiB ...; NVMe behind a bridge: data units written x 512000.",
       MetricType::Counter, [&](const Row& r) {
         if (!r.entry->report) return;
         std::string source;
         if (auto v = parsers::SmartWrittenBytes(*r.entry->report, &source))
           out.Sample({{"attribute", source}, {"device", *r.device}}, *v);
       });
  each("diskprobe_smart_life_remaining_ratio",
       "The drive's estimate of its life left (0-1), from the wear attribute named in the label (normalized value / "
       "100), or 1 - Percentage Used for NVMe behind a bridge.",
       MetricType::Gauge, [&](const Row& r) {
         if (!r.entry->report) return;
         std::string source;
         if (auto v = parsers::SmartLifeRemaining(*r.entry->report, &source))
           out.Sample({{"attribute", source}, {"device", *r.device}}, *v);
       });
  report("diskprobe_smart_nvme_critical_warning",
         "NVMe behind a USB bridge: the Critical Warning byte of its SMART log (0 = none).", MetricType::Gauge,
         [](const auto& p) -> std::optional<double> {
           if (!p.nvme) return std::nullopt;
           return static_cast<double>(p.nvme->critical_warning);
         });
  report("diskprobe_smart_nvme_media_errors_total",
         "NVMe behind a USB bridge: Media and Data Integrity Errors of its SMART log.", MetricType::Counter,
         [](const auto& p) -> std::optional<double> {
           if (!p.nvme) return std::nullopt;
           return p.nvme->media_errors;
         });
  report("diskprobe_smart_scsi_grown_defects_total",
         "SCSI disk (device type scsi): blocks in its grown defect list, reassigned since manufacture.",
         MetricType::Counter, [](const auto& p) -> std::optional<double> {
           if (!p.scsi_grown_defects) return std::nullopt;
           return static_cast<double>(*p.scsi_grown_defects);
         });
  each("diskprobe_smart_scsi_uncorrected_errors_total",
       "SCSI disk: errors its error counter log says it could not correct, by kind (read, write, verify).",
       MetricType::Counter, [&](const Row& r) {
         if (!r.entry->report) return;
         for (const parsers::SmartScsiErrorCounter& c : r.entry->report->scsi_errors)
           out.Sample({{"device", *r.device}, {"kind", c.kind}}, static_cast<double>(c.uncorrected));
       });
  auto attribute = [&](const char* name, const char* help, double (*value)(const parsers::SmartAttribute&)) {
    each(name, help, MetricType::Gauge, [&](const Row& r) {
      if (!r.entry->report) return;
      for (const parsers::SmartAttribute& a : r.entry->report->attributes)
        out.Sample({{"device", *r.device}, {"id", Num(a.id)}, {"name", a.name}}, value(a));
    });
  };
  attribute("diskprobe_smart_attribute_value",
            "Normalized value of each ATA SMART attribute (vendor scale, usually 100 or 200 when new; lower is worse).",
            [](const parsers::SmartAttribute& a) { return static_cast<double>(a.value); });
  attribute("diskprobe_smart_attribute_worst", "Lowest normalized value of each ATA SMART attribute so far.",
            [](const parsers::SmartAttribute& a) { return static_cast<double>(a.worst); });
  attribute("diskprobe_smart_attribute_threshold",
            "Failure threshold of each ATA SMART attribute: failing when the value is at or below it (0 = never).",
            [](const parsers::SmartAttribute& a) { return static_cast<double>(a.thresh); });
  attribute("diskprobe_smart_attribute_raw",
            "Raw value of each ATA SMART attribute (48 bits as an integer; its meaning is the vendor's, the name "
            "label is smartctl's drive database name).",
            [](const parsers::SmartAttribute& a) { return static_cast<double>(a.raw); });
  return CollectResult::Ok();
}

}  // namespace diskprobe::collectors
