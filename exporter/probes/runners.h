#pragma once
// One run of each probe kind: a few timed operations. The runners know nothing of scheduling,
// budgets' persistence or metrics; they time operations and report through RunEnv.
//
// Truth rules (a probe must measure the card, not the page cache): aligned buffers (>= 4096 and a multiple of the
// logical block size), CLOCK_MONOTONIC around the system call only, no offset reused within a run, O_DIRECT where the
// filesystem allows it and page-cache eviction (posix_fadvise DONTNEED) before reads where not.
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "config/config.h"
#include "probes/probe_file.h"

namespace diskprobe::probes {

struct RunEnv {
  const config::ProbeSettings& settings;
  std::atomic<std::int64_t>* op_started_ns;  // set around each operation: stall detection
  std::int64_t deadline_ns;                  // an op slower than this ends the run as a timeout
  std::mt19937_64& rng;
  std::function<void(double seconds)> observe;  // every completed op's latency
  // Asks for `bytes` of write budget before a write op; false: the op does not start.
  std::function<bool(std::uint64_t bytes)> take_budget;
  // The clock of the stall marker, nanoseconds (the engine's Env::NowNs); empty: MonotonicNs.
  std::function<std::int64_t()> now_ns = {};
};

// A block the verify probe found damaged.
struct Corruption {
  std::uint64_t offset = 0;
  std::string problem;  // probes::CheckBlock's description
};

struct RunOutcome {
  std::uint32_t ops = 0;                // operations completed
  int error = 0;                        // errno of the first failed operation (the run stops there)
  bool timed_out = false;               // an operation exceeded the deadline (the run stops there)
  bool budget_exhausted = false;        // a write was refused by the budget before it started
  std::uint64_t bytes = 0;              // bytes transferred by completed operations
  std::int64_t op_ns = 0;               // sum of the completed operations' latencies
  std::vector<Corruption> corruptions;  // verify only
};

// Offsets: `count` distinct multiples of `align` in [0, limit - len], uniformly at random.
// Fewer when the range has fewer slots.
std::vector<std::uint64_t> RandomOffsets(std::mt19937_64& rng, std::uint64_t limit, std::uint64_t len,
                                         std::uint64_t align, std::uint32_t count);

// Raw block device, opened read-only by the caller (O_DIRECT when `direct`).
RunOutcome RunRandRead(int fd, bool direct, std::uint64_t device_bytes, std::uint64_t align, RunEnv& env);
RunOutcome RunSeqRead(int fd, bool direct, std::uint64_t device_bytes, std::uint64_t align, RunEnv& env);
// Probe file.
RunOutcome RunWrite(ProbeFile& file, RunEnv& env);
RunOutcome RunFsync(ProbeFile& file, RunEnv& env);
RunOutcome RunSeqWrite(ProbeFile& file, RunEnv& env);
// Reads back up to settings.ops blocks: half of them the most recently written (whose sequence is
// known), the rest at random, and checks each (CheckBlock).
RunOutcome RunVerify(ProbeFile& file, RunEnv& env);

}  // namespace diskprobe::probes
