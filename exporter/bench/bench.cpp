#include "bench/bench.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

#include "bench/queue.h"
#include "parsers/mmc_registers.h"
#include "probes/device_lock.h"
#include "probes/io.h"
#include "probes/probe_file.h"
#include "util/file.h"
#include "util/strings.h"
#include "version.h"

namespace diskprobe::bench {
namespace {

using probes::MonotonicNs;

constexpr std::uint32_t kSmall = 4096;
constexpr std::uint32_t kLarge = 1 << 20;

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string Errno(const std::string& what, int e) { return what + ": " + std::strerror(e); }

// Time and bytes left, shared out among the phases still to run.
class Bounds {
 public:
  Bounds(std::int64_t deadline_ns, std::uint64_t bytes) : deadline_(deadline_ns), bytes_(bytes) {}
  // The next phase's share when `phases_left` phases remain (this one included).
  std::int64_t PhaseDeadline(int phases_left) const {
    std::int64_t now = MonotonicNs();
    std::int64_t left = deadline_ - now - kReserveNs;
    return now + std::max<std::int64_t>(0, left / std::max(1, phases_left));
  }
  std::uint64_t PhaseBytes(int phases_left) const {
    return bytes_ / static_cast<std::uint64_t>(std::max(1, phases_left));
  }
  void Spend(std::uint64_t b) { bytes_ = b > bytes_ ? 0 : bytes_ - b; }
  std::uint64_t bytes() const { return bytes_; }
  std::int64_t deadline() const { return deadline_; }

 private:
  static constexpr std::int64_t kReserveNs = 300'000'000;  // closing, removing the file, output
  std::int64_t deadline_;
  std::uint64_t bytes_;
};

void Latencies(TestResult* t, std::vector<double>& lat) {
  if (lat.empty()) return;
  double sum = 0;
  for (double v : lat) sum += v;
  t->lat_mean = sum / static_cast<double>(lat.size());
  t->lat_p50 = Percentile(lat, 0.50);
  t->lat_p99 = Percentile(lat, 0.99);
  t->lat_max = lat.back();
}

// Records where a phase ran on the wall clock (TestResult::started_unix, wall_seconds) when it
// goes out of scope, if the phase did I/O (an operation counted or an error).
class PhaseWindow {
 public:
  explicit PhaseWindow(TestResult* t) : t_(t), unix_(UnixNow()), start_ns_(MonotonicNs()) {}
  PhaseWindow(const PhaseWindow&) = delete;
  PhaseWindow& operator=(const PhaseWindow&) = delete;
  ~PhaseWindow() {
    if (t_->ops == 0 && t_->status != "error") return;
    t_->started_unix = unix_;
    t_->wall_seconds = static_cast<double>(MonotonicNs() - start_ns_) / 1e9;
  }

 private:
  TestResult* t_;
  double unix_;
  std::int64_t start_ns_;
};

void Finish(TestResult* t) {
  if (t->seconds > 0) {
    t->bytes_per_second = static_cast<double>(t->bytes) / t->seconds;
    t->iops = static_cast<double>(t->ops) / t->seconds;
  }
  if (t->status == "skipped" && t->ops > 0) t->status = "ok";
  if (t->status == "skipped" && t->reason.empty()) t->reason = "no time or bytes left in the run's bounds";
}

// QD1 timed loop: `op(offset)` does one timed operation.
template <typename Op>
void Qd1Loop(TestResult* t, std::int64_t deadline, std::uint64_t max_bytes, std::uint64_t first_block,
             std::uint64_t end_block, std::uint32_t bs, bool sequential, std::mt19937_64& rng, Op op) {
  std::vector<double> lat;
  std::uniform_int_distribution<std::uint64_t> pick(first_block, end_block - 1);
  std::uint64_t next = first_block;
  std::int64_t sum_ns = 0;
  while (MonotonicNs() < deadline && t->bytes + bs <= max_bytes) {
    std::uint64_t block;
    if (sequential) {
      if (next >= end_block) break;
      block = next++;
    } else {
      block = pick(rng);
    }
    probes::OpResult r = op(block * bs);
    if (r.error != 0) {
      t->status = "error";
      t->reason = std::strerror(r.error);
      break;
    }
    ++t->ops;
    t->bytes += bs;
    sum_ns += r.latency_ns;
    lat.push_back(static_cast<double>(r.latency_ns) / 1e9);
  }
  t->seconds = static_cast<double>(sum_ns) / 1e9;
  Latencies(t, lat);
  Finish(t);
}

std::string DiskOfDirectory(const std::string& sysfs, const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return "";
  return probes::DiskOfDev(sysfs, st.st_dev);
}

}  // namespace

const TestResult* Report::Find(const std::string& name) const {
  for (const auto& t : tests)
    if (t.name == name) return &t;
  return nullptr;
}

std::optional<double> Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the sample at or below it.
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  if (rank == 0) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

std::optional<unsigned> ClaimedAppClass(const std::string& sysfs, const std::string& disk, std::string* source) {
  if (disk.empty()) {
    *source = "the device's disk is unknown";
    return std::nullopt;
  }
  const std::string path = util::JoinPath(sysfs, "block/" + disk + "/device/ssr");
  util::FileContent f = util::ReadAttribute(path);
  if (!f.ok()) {
    *source = f.error == ENOENT ? "no ssr in sysfs for " + disk + " (not an SD card behind an mmc host)"
                                : Errno("cannot read " + path, f.error);
    return std::nullopt;
  }
  auto ssr = parsers::DecodeSsr(util::Trim(f.text));
  if (!ssr) {
    *source = path + ": " + ssr.error;
    return std::nullopt;
  }
  *source = path;
  return ssr->app_perf_class;
}

VerdictInput VerdictInputOf(const Report& r) {
  VerdictInput in;
  auto best = [&](const char* a, const char* b) -> std::optional<double> {
    std::optional<double> v;
    for (const char* n : {a, b})
      if (const TestResult* t = r.Find(n); t && t->ok() && (!v || t->iops > *v)) v = t->iops;
    return v;
  };
  in.read_iops = best("randread_qd32", "randread_qd1");
  in.write_iops = best("randwrite_qd32", "randwrite_qd1");
  if (const TestResult* t = r.Find("seqwrite"); t && t->ok()) in.seq_write_bytes_per_second = t->bytes_per_second;
  in.claimed_class = r.claimed_class;
  return in;
}

std::string Qd1FallbackNote(const Report& r) {
  const std::string qd = std::to_string(r.options.queue_depth);
  for (const std::string dir : {"read", "write"}) {
    const TestResult* qd1 = r.Find("rand" + dir + "_qd1");
    const TestResult* deep = r.Find("rand" + dir + "_qd" + qd);
    if (qd1 && qd1->ok() && (!deep || !deep->ok()))
      return "the verdict's IOPS come from the QD1 tests where the QD" + qd +
             " ones are missing: a card that passes at QD1 passes; one that fails might pass deeper";
  }
  return "";
}

bool Run(const Options& opt, const Progress& progress, Report* rep, std::string* error) {
  const std::int64_t t_start = MonotonicNs();
  Report& R = *rep;
  R = Report{};
  R.version = kVersion;
  R.options = opt;
  R.started_unix = UnixNow();
  Bounds bounds(t_start + static_cast<std::int64_t>(opt.duration_seconds * 1e9), opt.max_bytes);
  auto tick = [&](const std::string& phase) {
    if (!progress) return;
    double f = static_cast<double>(MonotonicNs() - t_start) / (opt.duration_seconds * 1e9);
    progress(phase, std::clamp(f, 0.0, 1.0));
  };

  // The device: read-only, O_DIRECT when the driver allows it.
  struct stat st {};
  if (::stat(opt.device.c_str(), &st) != 0) {
    *error = Errno("device " + opt.device, errno);
    return false;
  }
  if (!S_ISBLK(st.st_mode)) {
    *error = "device " + opt.device + " is not a block device";
    return false;
  }
  R.device_name = probes::DiskOfDev(opt.sysfs, st.st_rdev);
  probes::Fd dev(::open(opt.device.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
  bool dev_direct = true;
  if (!dev.valid() && errno == EINVAL) {
    dev_direct = false;
    dev.reset(::open(opt.device.c_str(), O_RDONLY | O_CLOEXEC));
  }
  std::uint64_t dev_bytes = 0;
  if (!dev.valid()) {
    R.device_error = Errno("cannot open " + opt.device + " for reading", errno);
  } else if (::ioctl(dev.get(), BLKGETSIZE64, &dev_bytes) != 0 || dev_bytes < kLarge) {
    R.device_error = "cannot size " + opt.device;
    dev.reset();
  }

  if (std::string refusal = probes::CheckProbeDirectory(opt.directory); !refusal.empty()) {
    *error = refusal;
    return false;
  }
  struct stat dst {};
  if (::stat(opt.directory.c_str(), &dst) != 0 || !S_ISDIR(dst.st_mode)) {
    *error = "directory " + opt.directory + " does not exist";
    return false;
  }
  R.directory_disk = DiskOfDirectory(opt.sysfs, opt.directory);

  // Locks on both disks for the whole run: the exporter's probe threads skip their runs meanwhile.
  std::vector<probes::DeviceLock> locks;
  const std::string lock_dir = opt.lock_directory.empty() ? probes::kDefaultLockDirectory : opt.lock_directory;
  for (const std::string& disk : {R.device_name, R.directory_disk}) {
    if (disk.empty() || std::any_of(locks.begin(), locks.end(), [&](const auto& l) {
          return l.path() == util::JoinPath(lock_dir, disk + ".lock");
        }))
      continue;
    tick("waiting for the lock on " + disk);
    auto l = probes::DeviceLock::Acquire(lock_dir, disk,
                                         std::chrono::milliseconds(static_cast<long>(opt.lock_wait_seconds * 1000)));
    if (l.state() == probes::DeviceLock::State::kBusy) {
      *error = "disk " + disk + " is being probed by diskprobe_exporter (" + l.path() +
               " is locked); refusing to run beside it: try again, or disable the exporter's probes on " + disk;
      return false;
    }
    if (!l.held()) {
      *error = l.error() + " (needed to keep the exporter's probes off the disk; see --lock-dir)";
      return false;
    }
    locks.push_back(std::move(l));
  }

  std::mt19937_64 rng(std::random_device{}() ^ static_cast<std::uint64_t>(MonotonicNs()));
  std::string ring_problem = IoUringAvailable();
  R.queue_engine = ring_problem.empty() ? "io_uring" : "unavailable: " + ring_problem;

  R.claimed_class = ClaimedAppClass(opt.sysfs, R.device_name, &R.claimed_source);

  // The tests, in the order they run and print.
  const std::string qd = std::to_string(opt.queue_depth);
  auto T = [](std::string name, std::string method) {
    TestResult t;
    t.name = std::move(name);
    t.method = std::move(method);
    return t;
  };
  std::vector<TestResult> tests = {
      T("seqread", "1 MiB O_DIRECT reads at QD1 from the start of the device; bytes / sum of read times (hdparm -t)"),
      T("seqwrite",
        "1 MiB buffered writes from the start of the probe file (blocks stamped beforehand), then "
        "fdatasync; bytes / wall time including the fdatasync (dd conv=fdatasync)"),
      T("randread_qd1",
        "4 KiB O_DIRECT reads at uniformly random aligned offsets of the device, QD1; "
        "ops / sum of read times (iozone -I)"),
      T("randwrite_qd1",
        "4 KiB O_DIRECT writes at random blocks of the probe file, QD1; ops / sum of write times "
        "(iozone -I)"),
      T("randread_qd" + qd, "4 KiB O_DIRECT reads at random offsets of the device, " + qd +
                                " in flight (io_uring); ops / wall time (A1/A2 test)"),
      T("randwrite_qd" + qd, "4 KiB O_DIRECT writes at random blocks of the probe file, " + qd +
                                 " in flight (io_uring); ops / wall time (A1/A2 test)"),
      T("fdatasync",
        "4 KiB buffered write + fdatasync() at random blocks of the probe file, timed together: "
        "the commit latency a database sees"),
  };
  for (auto& t : tests) {
    t.block_size = t.name.starts_with("seq") ? kLarge : kSmall;
    if (t.name.find("_qd" + qd) != std::string::npos) t.queue_depth = opt.queue_depth;
  }
  TestResult &seqread = tests[0], &seqwrite = tests[1], &rr1 = tests[2], &rw1 = tests[3], &rrq = tests[4],
             &rwq = tests[5], &fsync = tests[6];

  if (!dev.valid()) {
    for (TestResult* t : {&seqread, &rr1, &rrq}) {
      t->status = "unavailable";
      t->reason = R.device_error;
    }
  } else if (!dev_direct) {
    R.notes.push_back("O_DIRECT refused on " + opt.device + ": reads are buffered after dropping the page cache");
  }

  // The probe file (the only thing written). Its creation counts against the bounds.
  tick("creating the probe file");
  probes::ProbeFileOptions pf;
  pf.directory = opt.directory;
  pf.file_name = kBenchFileName;
  // The command line keeps file_size in kMinFileSize..max_bytes/4; the clamp is for other callers.
  pf.size = std::max<std::uint64_t>(std::min(opt.file_size, opt.max_bytes / 4), kMinFileSize) / kLarge * kLarge;
  pf.sysfs = opt.sysfs;
  std::string ferr;
  int ferrno = 0;
  std::uint64_t created = 0;
  std::unique_ptr<probes::ProbeFile> file = probes::ProbeFile::Open(pf, &ferr, &ferrno, &created);
  bounds.Spend(created);
  probes::Fd direct_fd;
  if (!file) {
    for (TestResult* t : {&seqwrite, &rw1, &rwq, &fsync}) {
      t->status = "unavailable";
      t->reason = ferr;
    }
  } else {
    R.probe_file = file->path();
    R.direct_io = file->direct_io();
    // Random writes without O_DSYNC, as iozone -I and fio direct=1 do: a reopen of the same inode.
    const std::string self = "/proc/self/fd/" + std::to_string(file->sync_fd());
    if (file->direct_io()) direct_fd.reset(::open(self.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC));
    if (!direct_fd.valid()) {
      direct_fd.reset(::dup(file->io_fd()));
      R.notes.push_back("O_DIRECT refused in " + opt.directory + ": random writes are O_DSYNC writes");
    }
  }
  const std::uint64_t file_blocks_small = file ? file->header().file_size / kSmall : 0;
  probes::AlignedBuffer big(kLarge, 4096), small(kSmall, 4096);
  auto stamp_small = [&](unsigned char* buf, std::uint64_t block) { file->StampBlock(buf, block); };

  int left = 7;
  // seqread
  if (dev.valid()) {
    tick("sequential read");
    PhaseWindow window(&seqread);
    const std::uint64_t end = dev_bytes / kLarge;
    Qd1Loop(&seqread, bounds.PhaseDeadline(left), bounds.PhaseBytes(left), 0, end, kLarge, true, rng,
            [&](std::uint64_t off) {
              if (!dev_direct) probes::DropCache(dev.get(), off, kLarge);
              return probes::TimedPread(dev.get(), big.data(), kLarge, off);
            });
    bounds.Spend(seqread.bytes);
  }
  --left;
  // seqwrite: buffered, then one fdatasync; wall time over the writes and the fdatasync. The
  // blocks are stamped beforehand (CRC32C of 4 KiB per block is CPU work dd and fio do not do).
  if (file) {
    tick("sequential write");
    PhaseWindow window(&seqwrite);
    const std::int64_t deadline = bounds.PhaseDeadline(left);
    const std::uint64_t max = bounds.PhaseBytes(left);
    const std::uint64_t size = file->header().file_size;
    const std::uint64_t span = std::min<std::uint64_t>((size - kLarge) / kLarge, max / kLarge) * kLarge;
    probes::AlignedBuffer data(static_cast<std::size_t>(span), 4096);
    for (std::uint64_t i = 0; i < span; i += kSmall) file->StampBlock(data.data() + i, (kLarge + i) / kSmall);
    const std::int64_t t0 = MonotonicNs();
    for (std::uint64_t off = 0; off < span; off += kLarge) {
      if (MonotonicNs() >= deadline) break;
      probes::OpResult r = probes::TimedPwrite(file->sync_fd(), data.data() + off, kLarge, kLarge + off);
      if (r.error != 0) {
        seqwrite.status = "error";
        seqwrite.reason = std::strerror(r.error);
        break;
      }
      ++seqwrite.ops;
      seqwrite.bytes += kLarge;
    }
    if (::fdatasync(file->sync_fd()) != 0 && seqwrite.status != "error") {
      seqwrite.status = "error";
      seqwrite.reason = Errno("fdatasync", errno);
    }
    seqwrite.seconds = static_cast<double>(MonotonicNs() - t0) / 1e9;
    probes::DropCache(file->sync_fd(), 0, size);
    Finish(&seqwrite);
    bounds.Spend(seqwrite.bytes);
  }
  --left;
  if (dev.valid()) {
    tick("random read QD1");
    PhaseWindow window(&rr1);
    Qd1Loop(&rr1, bounds.PhaseDeadline(left), bounds.PhaseBytes(left), 0, dev_bytes / kSmall, kSmall, false, rng,
            [&](std::uint64_t off) {
              if (!dev_direct) probes::DropCache(dev.get(), off, kSmall);
              return probes::TimedPread(dev.get(), small.data(), kSmall, off);
            });
    bounds.Spend(rr1.bytes);
  }
  --left;
  if (file) {
    tick("random write QD1");
    PhaseWindow window(&rw1);
    Qd1Loop(&rw1, bounds.PhaseDeadline(left), bounds.PhaseBytes(left), 1, file_blocks_small, kSmall, false, rng,
            [&](std::uint64_t off) {
              file->StampBlock(small.data(), off / kSmall);
              return probes::TimedPwrite(direct_fd.get(), small.data(), kSmall, off);
            });
    bounds.Spend(rw1.bytes);
  }
  --left;
  auto queued = [&](TestResult* t, int fd, bool write, std::uint64_t first, std::uint64_t end) {
    if (!ring_problem.empty()) {
      t->status = "unavailable";
      t->reason = ring_problem;
      return;
    }
    QueueJob job;
    job.fd = fd;
    job.write = write;
    job.first_block = first;
    job.end_block = end;
    job.depth = opt.queue_depth;
    job.deadline_ns = bounds.PhaseDeadline(left);
    job.max_ops = bounds.PhaseBytes(left) / kSmall;
    if (write) job.fill = stamp_small;
    // Nothing left of the run's time or bytes: skipped with the QD1 tests' reason (Finish).
    if (job.max_ops == 0 || MonotonicNs() >= job.deadline_ns) {
      Finish(t);
      return;
    }
    QueueResult q = RunQueued(job, rng);
    if (q.unavailable) {
      t->status = "unavailable";
      t->reason = q.error;
      return;
    }
    if (!q.error.empty()) {
      t->status = "error";
      t->reason = q.error;
    }
    t->ops = q.ops;
    t->bytes = q.ops * kSmall;
    t->seconds = q.seconds;
    Finish(t);
    bounds.Spend(t->bytes);
  };
  if (dev.valid()) {
    tick("random read QD" + qd);
    PhaseWindow window(&rrq);
    if (!dev_direct) probes::DropCache(dev.get(), 0, dev_bytes);
    queued(&rrq, dev.get(), false, 0, dev_bytes / kSmall);
  }
  --left;
  if (file) {
    tick("random write QD" + qd);
    PhaseWindow window(&rwq);
    queued(&rwq, direct_fd.get(), true, 1, file_blocks_small);
  }
  --left;
  if (file) {
    tick("fdatasync");
    PhaseWindow window(&fsync);
    Qd1Loop(&fsync, bounds.PhaseDeadline(left), bounds.PhaseBytes(left), 1, file_blocks_small, kSmall, false, rng,
            [&](std::uint64_t off) {
              file->StampBlock(small.data(), off / kSmall);
              return probes::TimedPwriteFdatasync(file->sync_fd(), small.data(), kSmall, off);
            });
    bounds.Spend(fsync.bytes);
  }
  tick("done");

  if (file) {
    if (opt.keep_file) {
      probes::AlignedBuffer hdr(probes::kProbeBlock, probes::kProbeBlock);
      file->SaveHeader(hdr.data());
    } else {
      const std::string path = file->path();
      direct_fd.reset();
      file.reset();
      ::unlink(path.c_str());
    }
  }
  R.tests = std::move(tests);
  R.verdict = Judge(VerdictInputOf(R));
  if (std::string note = Qd1FallbackNote(R); !note.empty()) R.notes.push_back(note);
  R.elapsed_seconds = static_cast<double>(MonotonicNs() - t_start) / 1e9;
  return true;
}

}  // namespace diskprobe::bench
