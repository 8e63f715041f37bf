#include "bench/cli.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "bench/bench.h"
#include "bench/report.h"
#include "config/yaml_reader.h"
#include "probes/device_lock.h"

namespace diskprobe::bench {

struct Command {
  CLI::App* sub = nullptr;
  Options opt;
  std::string format = "table";
  std::string push;
  std::string duration = "60s";
  std::string max_bytes = "1GiB";
  std::string file_size = "64MiB";
};

std::shared_ptr<Command> AddCommand(CLI::App& app) {
  auto c = std::make_shared<Command>();
  c->opt.lock_directory = probes::kDefaultLockDirectory;
  CLI::App* s = app.add_subcommand(
      "bench",
      "One-shot benchmark: sequential read/write, 4 KiB random read/write at QD1 and QD32, fdatasync latency, "
      "and the A1/A2 verdict. Reads the device; writes only its own probe file in --dir.");
  c->sub = s;
  s->add_option("--device", c->opt.device, "Block device to read (read-only), e.g. /dev/mmcblk0.")->required();
  s->add_option("--dir", c->opt.directory,
                "Directory for the bench's probe file (diskprobe_bench.probe); a real directory, not a symlink.")
      ->required();
  s->add_option("--format", c->format, "Output: table or json.")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  // Checked here, not when pushing: a typo must not cost a whole benchmark run.
  s->add_option("--push", c->push, "Push the results to this Prometheus Pushgateway, http://HOST:PORT.")
      ->check([](const std::string& v) {
        std::string error;
        return ParsePushUrl(v, &error) ? "" : error;
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
  s->add_option("--duration", c->duration, "Bound on the whole run, probe file creation included; more than 0.")
      ->capture_default_str()
      ->check(duration_ok);
  s->add_option("--max-bytes", c->max_bytes, "Bound on all bytes read and written; at least 8MiB.")
      ->capture_default_str()
      ->check(size_at_least(kMinMaxBytes));
  s->add_option("--file-size", c->file_size,
                "Size of the probe file: at least 2MiB and at most a quarter of --max-bytes, in whole MiB "
                "(rounded down).")
      ->capture_default_str()
      ->check(size_at_least(kMinFileSize));
  s->add_option("--queue-depth", c->opt.queue_depth, "Operations in flight for the deep-queue tests (io_uring).")
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
  s->add_flag("--keep-file", c->opt.keep_file, "Keep the probe file for the next run (default: removed).");
  // Across options, once all are parsed (CLI11 runs this after --help and the required ones): a
  // larger file used to be clamped to a quarter without a word.
  s->callback([c] {
    const std::uint64_t max_bytes = *config::ParseSize(c->max_bytes), file_size = *config::ParseSize(c->file_size);
    if (file_size > max_bytes / 4)
      throw CLI::ValidationError("--file-size", c->file_size + " is more than a quarter of --max-bytes " +
                                                    c->max_bytes + ": at most " + std::to_string(max_bytes / 4 >> 20) +
                                                    "MiB, or raise --max-bytes");
  });
  return c;
}

bool Chosen(const Command& c) { return c.sub != nullptr && c.sub->parsed(); }

int RunCommand(const Command& cmd) {
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
