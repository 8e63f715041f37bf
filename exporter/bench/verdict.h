#pragma once
// The SD Association's application performance classes, checked against measured figures.
//
// Source: SD Physical Layer Simplified Specification 6.00+, section 4.16.2.4 "Application
// Performance Class": A1 = random read >= 1500 IOPS, random write >= 500 IOPS (4 KiB), sustained
// sequential write >= 10 MB/s; A2 = 4000 / 2000 IOPS, 10 MB/s (plus command queue and cache
// support, which a host-side benchmark cannot see). The Raspberry Pi SD card test (agnostics,
// sd_bench.fio: libaio, QD4, 4 KiB, direct) applies the same three thresholds (its 10000 is KiB/s).
// Pure functions; nothing here does I/O.
#include <optional>
#include <string>
#include <vector>

namespace diskprobe::bench {

struct AppClassThresholds {
  std::string name;       // "A1", "A2"
  unsigned code = 0;      // SSR APP_PERF_CLASS value: 1 A1, 2 A2
  double read_iops = 0;   // 4 KiB random read
  double write_iops = 0;  // 4 KiB random write
  double seq_write_bytes_per_second = 0;
};

// A1 then A2.
const std::vector<AppClassThresholds>& AppClasses();

// What the verdict is computed from; nullopt: not measured (refused, unavailable, failed).
struct VerdictInput {
  std::optional<double> read_iops;
  std::optional<double> write_iops;
  std::optional<double> seq_write_bytes_per_second;
  // SSR APP_PERF_CLASS of the card: 0 none, 1 A1, 2 A2; nullopt when the card's SSR is unknown
  // (not an SD card, no ssr in sysfs, undecodable).
  std::optional<unsigned> claimed_class;
};

struct ClassCheck {
  std::string metric;  // "read_iops", "write_iops", "seq_write_bytes_per_second"
  double required = 0;
  std::optional<double> measured;
  std::optional<bool> pass;  // nullopt when not measured
};

struct ClassVerdict {
  std::string name;
  std::optional<bool> pass;  // true: every check passed; false: one failed; nullopt: undecided
  std::vector<ClassCheck> checks;
};

struct Verdict {
  std::vector<ClassVerdict> classes;  // A1, A2
  // Highest class passed: "A2", "A1", "none" (A1 failed), "unknown" (undecided).
  std::string measured_class;
  // "A2", "A1", "none" from the SSR, "unknown" without one.
  std::string claimed_class;
  std::vector<std::string> warnings;  // under-delivered claims, figures missing for the claim
};

// Name of an SSR APP_PERF_CLASS code: 0 "none", 1 "A1", 2 "A2", others "reserved".
std::string AppClassName(unsigned code);

Verdict Judge(const VerdictInput& in);

}  // namespace diskprobe::bench
