#pragma once
// The clocks the background readers time their passes with (clock_gettime(2)), in seconds.
namespace diskprobe::util {

// CLOCK_THREAD_CPUTIME_ID: CPU time the calling thread has used (user + system).
double ThreadCpuSeconds();
// CLOCK_MONOTONIC: for durations (not affected by clock changes).
double MonotonicSeconds();
// CLOCK_REALTIME: Unix time, for *_timestamp_seconds series.
double UnixSeconds();

}  // namespace diskprobe::util
