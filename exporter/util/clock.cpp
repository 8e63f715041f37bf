#include "util/clock.h"

#include <time.h>

namespace diskprobe::util {
namespace {

double Seconds(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

double ThreadCpuSeconds() { return Seconds(CLOCK_THREAD_CPUTIME_ID); }
double MonotonicSeconds() { return Seconds(CLOCK_MONOTONIC); }
double UnixSeconds() { return Seconds(CLOCK_REALTIME); }

}  // namespace diskprobe::util
