#include "bench/cli.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "bench/bench.h"
#include "bench/capacity.h"
#include "bench/report.h"
#include "config/yaml_reader.h"
#include "probes/device_lock.h"
#include "probes/io.h"

namespace diskprobe::bench {

struct Command {
  CLI::App* sub = nullptr;
  Options opt;
  std::string format = "table";
  std::string push;
  std::string duration = "60s";
  std::string max_bytes = "1GiB";
  std::string file_size = "64MiB";
  // The fake-capacity check (--capacity-check DIR): another mode of the same program.
  std::string capacity_dir;
  std::string capacity_max;
  std::string free_floor = "256MiB";
  bool progress = false;
};

std::shared_ptr<Command> AddCommand(CLI::App& app) {
  auto c = std::make_shared<Command>();
  c->opt.lock_directory = probes::kDefaultLockDirectory;
  CLI::App* s = app.add_subcommand(
      "bench",
      "One-shot benchmark: sequential read/write, 4 KiB random read/write at QD1 and QD32, fdatasync latency, "
      "and the A1/A2 verdict. Reads the device; writes only its own probe file in --dir.");
  c->sub = s;
  // Required unless --capacity-check is given (checked in the callback below).
  CLI::Option* device = s->add_option("--device", c->opt.device,
                                      "Block device to read (read-only), e.g. /dev/mmcblk0. Required for the benchmark.");
  CLI::Option* dir = s->add_option(
      "--dir", c->opt.directory,
      "Directory for the bench's probe file (diskprobe_bench.probe); a real directory, not a symlink. Required for "
      "the benchmark.");
  s->add_option("--format", c->format, "Output: table or json.")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  // Checked here, not when pushing: a typo must not cost a whole benchmark run.
  CLI::Option* push = s->add_option("--push", c->push, "Push the results to this Prometheus Pushgateway, http://HOST:PORT.")
      ->check([](const std::string& v) {
        std::string error;
        if (!ParsePushUrl(v, &error)) return error;
        // Said before the run, not after it (report.cpp: the static ARMv6 build has no client).
        return DISKPROBE_BENCH_PUSH ? std::string() : std::string("this build has no Pushgateway client (static ARMv6 build)");
      });
  auto duration_ok = [](const std::string& v) -> std::string {
    auto d = config::ParseDuration(v);
    if (!d) return "invalid duration \"" + v + "\" (e.g. 30s, 2m)";
    return d->count() > 0 ? "" : "must be more than 0 (e.g. 30s, 500ms)";
  };
  // A bound too small for anything to run is a usage error, not a run with every test skipped.
  auto size_at_least = [](std::uint64_t min) {
    return [min](const std::string& v) -> std::string {
      auto b = config::ParseSize(v);
      if (!b) return "invalid size \"" + v + "\" (e.g. 512MiB, 1GiB)";
      return *b >= min ? "" : "\"" + v + "\" is too small: at least " + std::to_string(min >> 20) + "MiB";
    };
  };
  CLI::Option* duration = s->add_option("--duration", c->duration, "Bound on the whole run, probe file creation included; more than 0.")
      ->capture_default_str()
      ->check(duration_ok);
  CLI::Option* max_bytes = s->add_option("--max-bytes", c->max_bytes, "Bound on all bytes read and written; at least 8MiB.")
      ->capture_default_str()
      ->check(size_at_least(kMinMaxBytes));
  CLI::Option* file_size = s->add_option("--file-size", c->file_size,
                "Size of the probe file: at least 2MiB and at most a quarter of --max-bytes, in whole MiB "
                "(rounded down).")
      ->capture_default_str()
      ->check(size_at_least(kMinFileSize));
  CLI::Option* queue_depth = s->add_option("--queue-depth", c->opt.queue_depth, "Operations in flight for the deep-queue tests (io_uring).")
      ->capture_default_str()
      ->check(CLI::Range(2, 256));
  s->add_option("--lock-dir", c->opt.lock_directory,
                "Directory of the per-disk lock files shared with the exporter's probes.")
      ->capture_default_str();
  s->add_option("--lock-wait", c->opt.lock_wait_seconds,
                "Seconds to wait for a running probe to finish, 0 (do not wait) to 86400.")
      ->capture_default_str()
      ->check([](const std::string& v) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(v.c_str(), &end);
        // !(..) also refuses NaN; the bound keeps the milliseconds within a long.
        return end != v.c_str() && *end == '\0' && x >= 0 && x <= 86400 ? ""
                                                                        : "\"" + v + "\" is not 0 to 86400 seconds";
      });
  s->add_option("--path.sysfs", c->opt.sysfs, "sysfs mount point.")->capture_default_str();
  CLI::Option* keep = s->add_flag("--keep-file", c->opt.keep_file, "Keep the probe file for the next run (default: removed).");
  auto size_ok = [](const std::string& v) -> std::string {
    return config::ParseSize(v) ? "" : "invalid size \"" + v + "\" (e.g. 512MiB, 1GiB)";
  };
  CLI::Option* capacity = s->add_option(
      "--capacity-check", c->capacity_dir,
      "Instead of the benchmark: the fake-capacity check of the filesystem holding this directory. Fills free space "
      "(up to --capacity-max, never below --free-floor) with verifiable blocks in a directory of its own, reads them "
      "back with O_DIRECT, reports the capacity that reads back intact and removes its files.");
  capacity->excludes(device)->excludes(dir)->excludes(push)->excludes(duration)->excludes(max_bytes);
  capacity->excludes(file_size)->excludes(queue_depth)->excludes(keep);
  s->add_option("--capacity-max", c->capacity_max,
                "Bound on the bytes --capacity-check writes (e.g. 900MiB, 30GiB); required with it.")
      ->check(size_ok)
      ->needs(capacity);
  s->add_option("--free-floor", c->free_floor, "Free space --capacity-check always leaves on the filesystem.")
      ->capture_default_str()
      ->check(size_ok)
      ->needs(capacity);
  s->add_flag("--progress", c->progress,
              "Print --capacity-check's progress (rate, ETA) on stderr even when it is not a terminal.")
      ->needs(capacity);
  // Across options, once all are parsed (CLI11 runs this after --help and the required ones): a
  // larger file used to be clamped to a quarter without a word.
  s->callback([c] {
    if (!c->capacity_dir.empty()) {
      if (c->capacity_max.empty()) throw CLI::RequiredError("--capacity-max (with --capacity-check)");
      if (*config::ParseSize(c->capacity_max) < kFillBlock)
        throw CLI::ValidationError("--capacity-max", "at least one block, " + std::to_string(kFillBlock) + " bytes");
      return;
    }
    if (c->opt.device.empty()) throw CLI::RequiredError("--device");
    if (c->opt.directory.empty()) throw CLI::RequiredError("--dir");
    const std::uint64_t max_bytes = *config::ParseSize(c->max_bytes), file_size = *config::ParseSize(c->file_size);
    if (file_size > max_bytes / 4)
      throw CLI::ValidationError("--file-size", c->file_size + " is more than a quarter of --max-bytes " +
                                                    c->max_bytes + ": at most " + std::to_string(max_bytes / 4 >> 20) +
                                                    "MiB, or raise --max-bytes");
  });
  return c;
}

bool Chosen(const Command& c) { return c.sub != nullptr && c.sub->parsed(); }

namespace {

std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;
extern "C" void OnStopSignal(int sig) {
  g_signal = sig;
  g_stop.store(true);
}

// The fake-capacity check: progress on stderr, the report on stdout, its files removed also when
// SIGINT, SIGTERM or SIGHUP ends it (handlers without SA_RESTART, so a blocked write returns).
// Exit codes: 0 every block intact, 3 data lost, 1 cannot start or the files could not be removed,
// 128 + the signal's number when a signal ended it.
int RunCapacity(const Command& cmd) {
  CapacityOptions opt;
  opt.directory = cmd.capacity_dir;
  opt.max_bytes = *config::ParseSize(cmd.capacity_max);
  opt.free_floor = *config::ParseSize(cmd.free_floor);
  opt.sysfs = cmd.opt.sysfs;
  opt.lock_directory = cmd.opt.lock_directory;
  opt.lock_wait_seconds = cmd.opt.lock_wait_seconds;

  struct sigaction sa {}, old_int {}, old_term {}, old_hup {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);
  ::sigaction(SIGHUP, &sa, &old_hup);

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  CapacityProgress progress;
  if (tty || cmd.progress) {
    auto last = std::make_shared<std::int64_t>(0);
    progress = [tty, last](const std::string& phase, std::uint64_t done, std::uint64_t total, double seconds) {
      // A terminal line redrawn in place ten times a second at most; otherwise one line a second
      // at most (a log, a pipe).
      const std::int64_t now = probes::MonotonicNs();
      if (now - *last < (tty ? 100'000'000 : 1'000'000'000) && done < total) return;
      *last = now;
      if (total == 0) {
        std::fprintf(stderr, tty ? "\r\033[K%s" : "%s\n", phase.c_str());
      } else {
        const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
        const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
        std::fprintf(stderr, tty ? "\r\033[K%s %.1f/%.1f MiB %3.0f%% %.1f MB/s ETA %.0f s"
                                 : "%s %.1f/%.1f MiB %3.0f%% %.1f MB/s ETA %.0f s\n",
                     phase.c_str(), static_cast<double>(done) / (1 << 20), static_cast<double>(total) / (1 << 20),
                     100.0 * static_cast<double>(done) / static_cast<double>(total), rate / 1e6, eta);
      }
      std::fflush(stderr);
    };
  }
  CapacityResult result;
  std::string error;
  const bool ran = RunCapacityCheck(opt, progress, &g_stop, &result, &error);
  if (tty) std::fprintf(stderr, "\r\033[K");
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  if (!ran) {
    std::fprintf(stderr, "bench: %s\n", error.c_str());
    return g_signal != 0 ? 128 + g_signal : 1;
  }
  if (cmd.format == "json") std::cout << CapacityToJson(result).dump(2) << "\n";
  else std::cout << FormatCapacity(result);
  std::cout.flush();
  if (!result.removed) std::fprintf(stderr, "bench: %s\n", result.remove_error.c_str());
  if (g_signal != 0) return 128 + g_signal;
  if (CapacityOutcome(result) == "data_lost") return 3;
  return result.removed ? 0 : 1;
}

}  // namespace

int RunCommand(const Command& cmd) {
  if (!cmd.capacity_dir.empty()) return RunCapacity(cmd);
  Options opt = cmd.opt;
  opt.duration_seconds = static_cast<double>(config::ParseDuration(cmd.duration)->count()) / 1000.0;
  opt.max_bytes = *config::ParseSize(cmd.max_bytes);
  opt.file_size = *config::ParseSize(cmd.file_size);
  const bool tty = ::isatty(STDOUT_FILENO) == 1;
  Progress progress;
  if (tty) {
    progress = [](const std::string& phase, double f) {
      const int width = 30, fill = static_cast<int>(f * width);
      std::string bar(static_cast<std::size_t>(fill), '#');
      bar.resize(width, '.');
      std::printf("\r\033[K[%s] %3.0f%% %s", bar.c_str(), f * 100, phase.c_str());
      std::fflush(stdout);
    };
  }
  Report report;
  std::string error;
  bool ran = Run(opt, progress, &report, &error);
  if (tty) {
    std::printf("\r\033[K");
    std::fflush(stdout);
  }
  if (!ran) {
    std::fprintf(stderr, "bench: %s\n", error.c_str());
    return 1;
  }
  if (cmd.format == "json") std::cout << ToJson(report).dump(2) << "\n";
  else std::cout << FormatTable(report);
  std::cout.flush();
  if (!cmd.push.empty()) {
    if (!Push(report, cmd.push, &error)) {
      std::fprintf(stderr, "bench: %s\n", error.c_str());
      return 1;
    }
    std::fprintf(stderr, "bench: pushed to %s\n", cmd.push.c_str());
  }
  return 0;
}

}  // namespace diskprobe::bench
