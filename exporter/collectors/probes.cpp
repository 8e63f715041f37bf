#include "collectors/probes.h"

#include <array>

#include "probes/probe_manager.h"

namespace diskprobe::collectors {

using prometheus::MetricType;
using probes::ProbeStats;

CollectResult ProbesCollector::Collect(const ScrapeContext& /*ctx*/, FamilySink& out) {
  if (probes_ == nullptr) return CollectResult::Ok();  // probes not running: nothing to export
  // Read the generation before the snapshot: a change during the snapshot forces a rebuild next time.
  const std::uint64_t gen = probes_->Generation();
  if (!cached_ || gen != cached_generation_) {
    cached_text_.clear();
    FamilySink cache(&cached_text_);
    WriteResults(cache);
    cached_generation_ = gen;
    cached_ = true;
  }
  out.Text(cached_text_);
  const auto stalled = probes_->Stalled();
  out.Family("diskprobe_probe_stalled",
             "1 while a probe operation on the device is past op_deadline and has not returned.", MetricType::Gauge);
  for (const auto& [device, is] : stalled) out.Sample({{"device", device}}, is ? 1 : 0);
  // Outside the cached text: the set of disks without a thread changes without a published result.
  out.Family("diskprobe_probe_thread_running",
             "1 while the disk's probe thread runs; 0 when it could not be started (the task limit): its probes do not "
             "run and it has no other probe series.",
             MetricType::Gauge);
  for (const auto& [device, is] : stalled) out.Sample({{"device", device}}, 1);
  for (const std::string& device : probes_->Unstarted()) out.Sample({{"device", device}}, 0);
  return CollectResult::Ok();
}

void ProbesCollector::WriteResults(FamilySink& out) const {
  const std::vector<DeviceProbeSnapshot> snaps = probes_->Snapshot();
  // Calls f(device, probe name, kind, stats) for every scheduled pair, in snapshot order.
  auto each = [&snaps](auto f) {
    for (const auto& snap : snaps)
      for (const auto& [kind, s] : snap.probes) f(snap.device, config::ProbeKindName(kind), kind, s);
  };

  out.Family("diskprobe_probe_latency_seconds",
             "Latency of single probe operations (one pread, pwrite, or pwrite+fdatasync).", MetricType::Histogram);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    std::array<std::uint64_t, probes::kLatencyBuckets.size()> cumulative{};
    std::uint64_t cum = 0;
    for (std::size_t i = 0; i < cumulative.size(); ++i) cumulative[i] = cum += s.buckets[i];
    out.Histogram({{"device", device}, {"probe", probe}}, probes::kLatencyBuckets, cumulative, s.sum_seconds, s.count);
  });
  out.Family("diskprobe_probe_runs_total", "Probe runs by result.", MetricType::Counter);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    for (int r = 0; r < probes::kRunResults; ++r)
      out.Sample(
          {{"device", device}, {"probe", probe}, {"result", probes::RunResultName(static_cast<probes::RunResult>(r))}},
          double(s.runs[static_cast<std::size_t>(r)]));
  });
  out.Family("diskprobe_probe_errors_total",
             "Failed probe operations by error class (eio, enospc, eacces, erofs, enodev, other).",
             MetricType::Counter);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    for (std::size_t e = 0; e < probes::kErrorReasons.size(); ++e)
      out.Sample({{"device", device}, {"probe", probe}, {"reason", probes::kErrorReasons[e]}}, double(s.errors[e]));
  });
  out.Family("diskprobe_probe_read_bytes_total", "Bytes the probes read: their own cost.", MetricType::Counter);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind kind, const ProbeStats& s) {
    if (!config::IsWriteProbe(kind)) out.Sample({{"device", device}, {"probe", probe}}, double(s.read_bytes));
  });
  out.Family("diskprobe_probe_written_bytes_total",
             "Bytes the probes wrote (operations, headers, probe file creation): their own cost.", MetricType::Counter);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind kind, const ProbeStats& s) {
    if (config::IsWriteProbe(kind)) out.Sample({{"device", device}, {"probe", probe}}, double(s.written_bytes));
  });
  out.Family("diskprobe_probe_last_success", "1 when the last completed run succeeded.", MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.has_last) out.Sample({{"device", device}, {"probe", probe}}, s.last_success ? 1 : 0);
  });
  out.Family("diskprobe_probe_last_run_timestamp_seconds", "Unix time the last completed run ended.",
             MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.has_last) out.Sample({{"device", device}, {"probe", probe}}, s.last_timestamp);
  });
  out.Family("diskprobe_probe_last_duration_seconds", "Wall time of the last completed run.", MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.has_last) out.Sample({{"device", device}, {"probe", probe}}, s.last_duration);
  });
  out.Family("diskprobe_probe_last_throughput_bytes_per_second",
             "Bytes of the last successful run divided by the sum of its operations' latencies.", MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.has_last_ok) out.Sample({{"device", device}, {"probe", probe}}, s.last_throughput);
  });
  out.Family("diskprobe_probe_last_iops",
             "Operations of the last successful run divided by the sum of their latencies (queue depth 1).",
             MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.has_last_ok) out.Sample({{"device", device}, {"probe", probe}}, s.last_iops);
  });
  out.Family("diskprobe_probe_direct_io",
             "1 when the probe uses O_DIRECT, 0 when the filesystem refused it (buffered I/O with the "
             "page cache dropped).",
             MetricType::Gauge);
  each([&out](const std::string& device, std::string_view probe, config::ProbeKind, const ProbeStats& s) {
    if (s.direct_io >= 0) out.Sample({{"device", device}, {"probe", probe}}, s.direct_io);
  });
  out.Family("diskprobe_probe_corruptions_total",
             "Probe-file blocks the verify probe read back damaged or stale (a lost write): each "
             "offset once. The offsets are in the log.",
             MetricType::Counter);
  each([&out](const std::string& device, std::string_view, config::ProbeKind kind, const ProbeStats& s) {
    if (kind == config::ProbeKind::kVerify) out.Sample({{"device", device}}, double(s.corruptions));
  });
  out.Family("diskprobe_probe_write_budget_remaining_bytes",
             "Bytes the write probes may still write to the device this UTC day.", MetricType::Gauge);
  for (const auto& snap : snaps)
    if (snap.write_budget_remaining) out.Sample({{"device", snap.device}}, double(*snap.write_budget_remaining));
  out.Family("diskprobe_probe_directory_up",
             "1 when the write probes' file in this directory is open and usable; 0 with the reason in "
             "the log (symlink, not our file, no space, disk not monitored...).",
             MetricType::Gauge);
  for (const auto& d : probes_->Directories())
    out.Sample({{"device", d.device}, {"directory", d.directory}}, d.ok ? 1 : 0);
}

}  // namespace diskprobe::collectors
