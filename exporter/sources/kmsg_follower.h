#pragma once
// Follows the kernel log (/dev/kmsg) in its own thread and counts the messages that tell a
// failing card, per whole disk, mmc host and kind (parsers/kmsg.h ClassifyKmsg). Scrapes copy
// the counts (Snapshot) and never wait on the log.
//
// Source of truth: Documentation/ABI/testing/dev-kmsg. Each read() of /dev/kmsg returns one
// record; a reader starts at the oldest record still in the ring buffer (the follower also seeks
// there explicitly, SEEK_SET: `dmesg -C` must not hide errors from it); read() fails with EPIPE
// when the records it was about to read were overwritten, and the next read returns the oldest
// one left: the gap in sequence numbers is counted as lost records. O_NONBLOCK + poll() with a
// stop pipe, so Stop() returns at once.
//
// Other sources, for tests and replays (--path.kmsg pointing at a file or a pipe): the stream is
// split into records by lines (a record line, then its " KEY=value" dictionary lines); a regular
// file is followed like `tail -f`, a pipe until its writer closes it.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "parsers/kmsg.h"

namespace diskprobe {

// Maps the names the kernel logs to whole disks and mmc hosts through sysfs; results are cached
// (names do not change their disk). Thread-safe.
class KmsgDeviceResolver {
 public:
  explicit KmsgDeviceResolver(std::string sysfs) : sysfs_(std::move(sysfs)) {}
  // "mmcblk0p2" -> "mmcblk0": <sysfs>/class/block/<name>/partition makes it a partition of the
  // directory above it; a name sysfs does not know (the device is gone) falls back to
  // parsers::DiskOfPartition.
  std::string DiskOf(std::string_view name);
  // "mmcblk0" -> "mmc0" from the <sysfs>/block/<disk>/device link ("mmc0:5048"); "" for other disks.
  std::string HostOfDisk(const std::string& disk);
  // "mmc0" -> "mmcblk0" from <sysfs>/class/mmc_host/<host>/<host>:*/block/; when the card is gone
  // (card removed) the last disk seen on that host; "" when none was ever seen (SDIO, empty slot).
  std::string DiskOfHost(const std::string& host);

 private:
  const std::string sysfs_;
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> disk_of_, host_of_disk_, disk_of_host_;
};

// (device, host, kind) -> messages. The kind is the enum: a scrape copies this map, and the kinds'
// names are longer than std::string's inline buffer.
using KmsgCounts = std::map<std::tuple<std::string, std::string, parsers::KmsgKind>, std::uint64_t>;

struct KmsgSnapshot {
  std::string error;  // why the log cannot be read ("" while it can)
  KmsgCounts messages;
  std::uint64_t records = 0;    // records read
  std::uint64_t lost = 0;       // records overwritten before they were read (sequence gaps)
  std::uint64_t malformed = 0;  // records that did not parse
  bool drained = false;         // everything available so far has been counted (tests)
};

// The counting without the I/O: records in, counts out. Not thread-safe (the follower locks).
//
// Rules:
//  - only facility 0 (kernel) records count: userspace may write to /dev/kmsg;
//  - a record with the continuation flag '+' (kernels before 4.9) is appended to the fragment
//    before it, and the whole line is classified when it is complete;
//  - "N callbacks suppressed" (no device in the line) gives its N to the next event of the same
//    kind - the message the kernel prints right after it - or, when none comes within
//    kSuppressedHorizon records or before the log goes idle, to device="" host="";
//  - a partition is counted under its disk; an mmc host's message under the card's disk with the
//    host label; a disk's message on an mmc card also gets its host label, so that both land in
//    one series.
class KmsgCounter {
 public:
  static constexpr int kSuppressedHorizon = 64;

  explicit KmsgCounter(KmsgDeviceResolver* resolver) : resolver_(resolver) {}
  // One record as one read() of /dev/kmsg returns it (dictionary lines included).
  void AddRecord(std::string_view record);
  // Nothing more to read for now: completes a pending fragment and gives unclaimed suppressed
  // counts to device="".
  void Idle();

  const KmsgCounts& counts() const { return counts_; }
  std::uint64_t records() const { return records_; }
  std::uint64_t lost() const { return lost_; }
  std::uint64_t malformed() const { return malformed_; }

 private:
  void Classify(const std::string& message);
  void Count(const parsers::KmsgEvent& e, std::uint64_t n);

  KmsgDeviceResolver* resolver_;
  KmsgCounts counts_;
  std::uint64_t records_ = 0, lost_ = 0, malformed_ = 0;
  std::optional<std::uint64_t> last_seq_;
  std::optional<std::string> pending_;  // a fragment that '+' records may still continue
  struct Suppressed {
    std::uint64_t count = 0;
    int age = 0;  // records since it was logged
  };
  std::map<parsers::KmsgKind, Suppressed> suppressed_;
};

class KmsgFollower {
 public:
  KmsgFollower(std::string path, std::string sysfs);
  ~KmsgFollower();  // Stop()
  KmsgFollower(const KmsgFollower&) = delete;
  KmsgFollower& operator=(const KmsgFollower&) = delete;

  // Opens the path and starts the thread. false when it cannot be opened: Snapshot().error says
  // why (EPERM without CAP_SYSLOG when kernel.dmesg_restrict=1); nothing is retried.
  bool Start();
  // Follows an already open descriptor (tests: a pipe); takes ownership.
  void StartFd(int fd);
  // Wakes the thread through the stop pipe and joins it. Safe to call twice.
  void Stop();

  // The counts so far, with zero-valued series for every kind on each disk in `disks` (a counter
  // that appears at 1 loses its first increment in Prometheus' increase()).
  KmsgSnapshot Snapshot(const std::vector<std::string>& disks = {}) const;

 private:
  void Loop(int fd);
  void Feed(std::string_view data, bool whole_records);
  void OnIdle();

  const std::string path_;
  mutable KmsgDeviceResolver resolver_;
  mutable std::mutex mu_;
  KmsgCounter counter_;
  std::string error_;
  bool drained_ = false;
  std::string partial_;  // stream mode: bytes of an unfinished line
  std::string record_;   // stream mode: the record being assembled
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace diskprobe
