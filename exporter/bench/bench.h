#pragma once
// `diskprobe_exporter bench`: a one-shot benchmark of a disk in the roles of the tools Pi users run
// by hand (hdparm -t, dd, iozone -I, the Raspberry Pi SD card test), with the probe engine's truth
// rules (probes/runners.h): aligned buffers, O_DIRECT, CLOCK_MONOTONIC, bounded time and bytes.
//
// Where it reads and writes: reads from the block device given (read-only descriptor); writes only
// into its own probe file in the given directory (probes::ProbeFile and its safety rules, file name
// kBenchFileName), never to a device. It holds probes::DeviceLock on both disks for the whole run.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/verdict.h"

namespace diskprobe::bench {

inline constexpr const char* kBenchFileName = "diskprobe_bench.probe";
// The smallest probe file: its header block plus the 1 MiB the sequential write starts at.
inline constexpr std::uint64_t kMinFileSize = 2ull << 20;
// The smallest --max-bytes: the file is at most a quarter of it, so the smallest file fits with
// three times its size left for the tests.
inline constexpr std::uint64_t kMinMaxBytes = 4 * kMinFileSize;

struct Options {
  std::string device;                     // block device to read (e.g. /dev/mmcblk0)
  std::string directory;                  // where the bench's probe file goes
  double duration_seconds = 60;           // bound of the whole run, probe file creation included
  std::uint64_t max_bytes = 1ull << 30;   // bound of all bytes read and written
  std::uint64_t file_size = 64ull << 20;  // the bench's probe file (filled once when created), whole MiB;
                                          // kMinFileSize..max_bytes/4 (the command line rejects others)
  unsigned queue_depth = 32;
  std::string sysfs = "/sys";
  std::string lock_directory;     // probes::kDefaultLockDirectory unless set
  double lock_wait_seconds = 15;  // how long to wait for a running probe to finish
  bool keep_file = false;         // keep the probe file for the next run (else removed)
};

// One measurement.
struct TestResult {
  std::string name;                // seqread, seqwrite, randread_qd1, randwrite_qd1, randread_qd32, ...
  std::string method;              // how it was measured, one sentence
  std::string status = "skipped";  // ok, error, unavailable, skipped
  std::string reason;              // for anything but ok
  std::uint64_t block_size = 0;
  unsigned queue_depth = 1;
  std::uint64_t ops = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;  // time the figures are computed over (see method)
  double bytes_per_second = 0;
  double iops = 0;
  std::optional<double> lat_mean, lat_p50, lat_p99, lat_max;  // per operation, seconds
  // When the test's phase ran: its start (Unix time, seconds) and its wall time (seconds) around the
  // whole phase, buffers, submission and draining included, so that samples of the disk's counters
  // taken by another tool (/sys/block/<disk>/stat, iostat) can be cut to this test's I/O. Unset
  // for a test that did no I/O (skipped: no device, no probe file, out of time or bytes;
  // unavailable).
  std::optional<double> started_unix, wall_seconds;
  bool ok() const { return status == "ok"; }
};

struct Report {
  std::string version;
  double started_unix = 0;
  double elapsed_seconds = 0;
  Options options;
  std::string device_name;     // kernel name of the disk behind --device ("" if unknown)
  std::string device_error;    // why the device could not be read ("" when it could)
  std::string directory_disk;  // disk holding --dir
  std::string probe_file;
  bool direct_io = true;     // O_DIRECT on the probe file (else buffered + dropped cache)
  std::string queue_engine;  // io_uring, or "unavailable: <why>"
  std::vector<TestResult> tests;
  std::optional<unsigned> claimed_class;  // SSR APP_PERF_CLASS
  std::string claimed_source;             // path of the ssr attribute, or why unknown
  Verdict verdict;
  std::vector<std::string> notes;

  const TestResult* Find(const std::string& name) const;
};

// Called as the run advances: phase name and fraction of the whole run done (0..1).
using Progress = std::function<void(const std::string& phase, double fraction)>;

// Runs the bench. Returns false with *error set when it cannot start (lock held by the exporter,
// directory refused, no device); a test that fails once started is reported in its TestResult.
bool Run(const Options& opt, const Progress& progress, Report* report, std::string* error);

// The SSR's APP_PERF_CLASS of the card behind `disk`, read from <sysfs>/block/<disk>/device/ssr.
// nullopt when there is none (not an SD card, not an mmcblk device) or it does not decode;
// *source receives the path, or the reason.
std::optional<unsigned> ClaimedAppClass(const std::string& sysfs, const std::string& disk, std::string* source);

// Nearest-rank percentile of `v` (sorted in place); nullopt when empty. q in [0, 1].
std::optional<double> Percentile(std::vector<double>& v, double q);

// The note saying the verdict's IOPS come from a QD1 test because its deep-queue twin (same
// direction, r.options.queue_depth) did not complete; "" when no QD1 figure stands in for one.
std::string Qd1FallbackNote(const Report& r);

// The figures the verdict uses: the best random IOPS measured (QD32, else QD1: the card delivered
// at least that) and the sequential write rate.
VerdictInput VerdictInputOf(const Report& r);

}  // namespace diskprobe::bench
