#include "collectors/probes.h"

#include "scrape/exposition.h"
#include "probes/probe_manager.h"

namespace diskprobe::collectors {

using prometheus::MetricType;
using probes::ProbeStats;

bool ProbesCollector::Collect(const ScrapeContext& ctx, Families* out) {
  if (ctx.probes == nullptr) return true;  // probes disabled: nothing to export
  CollectResults(ctx, out);
  CollectStalled(ctx, out);
  return true;
}

bool ProbesCollector::CollectWithText(const ScrapeContext& ctx, Families* out, std::string* /*text*/,
                                      std::string* tail) {
  if (ctx.probes == nullptr) return true;
  // Read the generation before the snapshot: a change during the snapshot forces a rebuild next time.
  const std::uint64_t gen = ctx.probes->Generation();
  if (gen != cached_generation_) {
    Families f;
    CollectResults(ctx, &f);
    cached_text_.clear();
    WriteExposition(f, &cached_text_);
    cached_generation_ = gen;
  }
  *tail += cached_text_;
  CollectStalled(ctx, out);
  return true;
}

void ProbesCollector::CollectStalled(const ScrapeContext& ctx, Families* out) {
  auto& stalled = AddFamily(out, "diskprobe_probe_stalled",
                            "1 while a probe operation on the device is past op_deadline and has not returned.",
                            MetricType::Gauge);
  for (const auto& [device, is] : ctx.probes->Stalled()) AddSample(stalled, {{"device", device}}, is ? 1 : 0);
}

void ProbesCollector::CollectResults(const ScrapeContext& ctx, Families* out) {
  std::vector<DeviceProbeSnapshot> snaps = ctx.probes->Snapshot();

  auto& latency = AddFamily(out, "diskprobe_probe_latency_seconds",
                            "Latency of single probe operations (one pread, pwrite, or pwrite+fdatasync).",
                            MetricType::Histogram);
  auto& runs = AddFamily(out, "diskprobe_probe_runs_total", "Probe runs by result.", MetricType::Counter);
  auto& errors = AddFamily(out, "diskprobe_probe_errors_total",
                           "Failed probe operations by error class (eio, enospc, eacces, erofs, other).",
                           MetricType::Counter);
  auto& rbytes = AddFamily(out, "diskprobe_probe_read_bytes_total", "Bytes the probes read: their own cost.",
                           MetricType::Counter);
  auto& wbytes = AddFamily(out, "diskprobe_probe_written_bytes_total",
                           "Bytes the probes wrote (operations, headers, probe file creation): their own cost.",
                           MetricType::Counter);
  auto& success = AddFamily(out, "diskprobe_probe_last_success", "1 when the last completed run succeeded.",
                            MetricType::Gauge);
  auto& ts = AddFamily(out, "diskprobe_probe_last_run_timestamp_seconds", "Unix time the last completed run ended.",
                       MetricType::Gauge);
  auto& dur = AddFamily(out, "diskprobe_probe_last_duration_seconds", "Wall time of the last completed run.",
                        MetricType::Gauge);
  auto& thr = AddFamily(out, "diskprobe_probe_last_throughput_bytes_per_second",
                        "Bytes of the last successful run divided by the sum of its operations' latencies.", MetricType::Gauge);
  auto& iops = AddFamily(out, "diskprobe_probe_last_iops",
                         "Operations of the last successful run divided by the sum of their latencies (queue depth 1).",
                         MetricType::Gauge);
  auto& direct = AddFamily(out, "diskprobe_probe_direct_io",
                           "1 when the probe uses O_DIRECT, 0 when the filesystem refused it (buffered I/O with the "
                           "page cache dropped).",
                           MetricType::Gauge);
  auto& corrupt = AddFamily(out, "diskprobe_probe_corruptions_total",
                            "Probe-file blocks the verify probe read back damaged or stale (a lost write): each "
                            "offset once. The offsets are in the log.",
                            MetricType::Counter);
  auto& budget = AddFamily(out, "diskprobe_probe_write_budget_remaining_bytes",
                           "Bytes the write probes may still write to the device this UTC day.", MetricType::Gauge);

  for (const auto& snap : snaps) {
    if (snap.write_budget_remaining) AddSample(budget, {{"device", snap.device}}, double(*snap.write_budget_remaining));
    for (const auto& [kind, s] : snap.probes) {
      const std::string probe(config::ProbeKindName(kind));
      Labels base = {{"device", snap.device}, {"probe", probe}};
      prometheus::ClientMetric h;
      h.label = base;
      h.histogram.sample_count = s.count;
      h.histogram.sample_sum = s.sum_seconds;
      std::uint64_t cum = 0;
      for (std::size_t i = 0; i < probes::kLatencyBuckets.size(); ++i) {
        cum += s.buckets[i];
        h.histogram.bucket.push_back({cum, probes::kLatencyBuckets[i]});
      }
      latency.metric.push_back(std::move(h));
      for (int r = 0; r < probes::kRunResults; ++r) {
        Labels l = base;
        l.push_back({"result", std::string(probes::RunResultName(static_cast<probes::RunResult>(r)))});
        AddSample(runs, std::move(l), double(s.runs[static_cast<std::size_t>(r)]));
      }
      for (std::size_t e = 0; e < probes::kErrorReasons.size(); ++e) {
        Labels l = base;
        l.push_back({"reason", std::string(probes::kErrorReasons[e])});
        AddSample(errors, std::move(l), double(s.errors[e]));
      }
      if (kind == config::ProbeKind::kVerify) AddSample(corrupt, {{"device", snap.device}}, double(s.corruptions));
      if (config::IsWriteProbe(kind)) AddSample(wbytes, base, double(s.written_bytes));
      else AddSample(rbytes, base, double(s.read_bytes));
      if (s.direct_io >= 0) AddSample(direct, base, s.direct_io);
      if (s.has_last) {
        AddSample(success, base, s.last_success ? 1 : 0);
        AddSample(ts, base, s.last_timestamp);
        AddSample(dur, base, s.last_duration);
      }
      if (s.has_last_ok) {
        AddSample(thr, base, s.last_throughput);
        AddSample(iops, base, s.last_iops);
      }
    }
  }
  auto& dirs = AddFamily(out, "diskprobe_probe_directory_up",
                         "1 when the write probes' file in this directory is open and usable; 0 with the reason in "
                         "the log (symlink, not our file, no space, disk not monitored...).",
                         MetricType::Gauge);
  for (const auto& d : ctx.probes->Directories())
    AddSample(dirs, {{"device", d.device}, {"directory", d.directory}}, d.ok ? 1 : 0);
}

}  // namespace diskprobe::collectors
