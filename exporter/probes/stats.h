#pragma once
// What the probes publish for scrapes: per (device, probe kind) counters, a latency histogram
// and the last run's figures. Written by the device's probe thread, copied by scrapes.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace diskprobe::probes {

// Upper bounds of the latency histogram, seconds: 50 us to 30 s in 1-2-5 steps (x2 to x2.5), so
// a microSD card's 0.3-3 ms reads, a USB SSD's 100 us and a dying card's multi-second stalls each
// fall in buckets that tell them apart.
inline constexpr std::array<double, 19> kLatencyBuckets = {
    0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30};

enum class RunResult { kOk = 0, kError, kTimeout, kSkippedBusy, kSkippedBudget, kSkippedSpace };
inline constexpr int kRunResults = 6;
std::string_view RunResultName(RunResult r);  // "ok", "error", "timeout", "skipped_busy", ...

// Error classes of diskprobe_probe_errors_total{reason} (probes/io.h ErrorReason).
// "enodev": the device, or the disk holding the probe directory, is gone (unplugged, card removed).
inline constexpr std::array<std::string_view, 6> kErrorReasons = {"eio",   "enospc", "eacces",
                                                                  "erofs", "enodev", "other"};

struct ProbeStats {
  std::array<std::uint64_t, kLatencyBuckets.size()> buckets{};  // per bucket, not cumulative
  std::uint64_t count = 0;  // operations observed (beyond the last bucket: only in count)
  double sum_seconds = 0;
  std::array<std::uint64_t, kRunResults> runs{};
  std::array<std::uint64_t, kErrorReasons.size()> errors{};
  std::uint64_t read_bytes = 0;
  std::uint64_t written_bytes = 0;
  std::uint64_t corruptions = 0;  // verify: damaged blocks found (each offset counted once)
  bool has_last = false;          // a run completed (ok, error or timeout) at least once
  bool last_success = false;
  double last_timestamp = 0;   // Unix seconds at the end of the last run
  double last_duration = 0;    // wall seconds of the last run
  bool has_last_ok = false;    // a run succeeded at least once: the two figures below are set
  double last_throughput = 0;  // bytes / sum of op latencies of the last successful run
  double last_iops = 0;        // ops / sum of op latencies (QD1) of the last successful run
  int direct_io = -1;          // 1 O_DIRECT, 0 buffered fallback, -1 not known yet

  void Observe(double seconds);
  void CountError(int err);  // by ErrorReason(err)
};

}  // namespace diskprobe::probes
