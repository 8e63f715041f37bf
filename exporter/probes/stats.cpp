#include "probes/stats.h"

#include "probes/io.h"

namespace diskprobe::probes {

std::string_view RunResultName(RunResult r) {
  switch (r) {
    case RunResult::kOk: return "ok";
    case RunResult::kError: return "error";
    case RunResult::kTimeout: return "timeout";
    case RunResult::kSkippedBusy: return "skipped_busy";
    case RunResult::kSkippedBudget: return "skipped_budget";
    case RunResult::kSkippedSpace: return "skipped_space";
  }
  return "unknown";
}

void ProbeStats::Observe(double seconds) {
  for (std::size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    if (seconds <= kLatencyBuckets[i]) {
      ++buckets[i];
      break;
    }
  }
  ++count;
  sum_seconds += seconds;
}

void ProbeStats::CountError(int err) {
  std::string_view reason = ErrorReason(err);
  for (std::size_t i = 0; i < kErrorReasons.size(); ++i)
    if (kErrorReasons[i] == reason) ++errors[i];
}

}  // namespace diskprobe::probes
