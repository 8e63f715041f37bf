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
// file is followed like `tail -f` (read from its start again when it gets shorter), a named pipe
// (mkfifo) from every writer, whenever it connects, an inherited pipe (/dev/stdin) until its
// writer closes it.
//
// Bounds (the state must not grow with what the log says):
//  - a record is at most parsers::kKmsgRecordMax (8192) bytes, what one read() of /dev/kmsg can
//    return. In a file or pipe a longer line is skipped up to its newline and counted as
//    oversized (KmsgSnapshot::oversized); dictionary lines beyond the size are dropped, as are
//    '+' continuations that would make a line longer;
//  - series per device exist only for disks that are monitored (see KmsgCounter); a message
//    naming any other name is counted in one counter per kind and reason, without the name;
//  - the resolver's caches are capped (kMaxCache names each).
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "config/config.h"
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
  // Whole disks whose <sysfs>/block/<disk> resolves through a directory named `controller`
  // ("nvme0", "0:0:0:0", "host0", "2-1", "fe340000.mmc"), in directory order. Not cached: a USB
  // port or SCSI host gets another disk when a drive is swapped; read only for the rare lines
  // that name a controller.
  std::vector<std::string> DisksBelow(const std::string& controller);
  // The mmc host whose <sysfs>/class/mmc_host/<host>/device is `controller` ("fe340000.mmc" ->
  // "mmc0"); "" when none is.
  std::string HostOfController(const std::string& controller);
  // Whether <sysfs>/block/<disk> exists now (a whole disk). Not cached: disks come and go.
  bool IsDisk(const std::string& disk) const;
  // Whether <sysfs>/class/mmc_host/<host> exists now.
  bool IsHost(const std::string& host) const;

 private:
  const std::string sysfs_;
  std::mutex mu_;
  std::map<std::string, std::string, std::less<>> disk_of_, host_of_disk_, disk_of_host_;
};

// (device, host, kind) -> messages. The kind is the enum: a scrape copies this map, and the kinds'
// names are longer than std::string's inline buffer.
using KmsgCounts = std::map<std::tuple<std::string, std::string, parsers::KmsgKind>, std::uint64_t>;

// Why a message that names a device is not in KmsgCounts under that device.
enum class KmsgUnattributedReason {
  kUnmonitored,     // the disk is not monitored: not present in sysfs when logged, or not selected
                    // by the device filters (or an mmc host sysfs does not know)
  kPreviousDevice,  // logged before the disk of that name appeared again (a new card or medium)
  kLimit,           // more than KmsgCounter::kMaxDevices names were already counted
  kAmbiguous,       // the message names a controller (SCSI host, USB device, NVMe controller) with
                    // several disks below it (a multi-LUN card reader): no one disk to count it for
};
std::string_view ToString(KmsgUnattributedReason reason);
using KmsgUnattributed = std::map<std::pair<KmsgUnattributedReason, parsers::KmsgKind>, std::uint64_t>;

struct KmsgSnapshot {
  std::string error;  // why the log cannot be read ("" while it can)
  KmsgCounts messages;
  KmsgUnattributed unattributed;
  std::uint64_t records = 0;    // records read
  std::uint64_t lost = 0;       // records overwritten before they were read (sequence gaps)
  std::uint64_t malformed = 0;  // records that did not parse
  std::uint64_t oversized = 0;  // lines longer than parsers::kKmsgRecordMax, skipped (file/pipe)
  std::uint64_t duplicate = 0;  // records read again (same sequence number and timestamp as one
                                // of the last kRecentRecords): a file or pipe that repeats lines
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
//    kSuppressedHorizon records or before the log goes idle, to device="" host=""; a suppressed
//    line of a call site of no known kind (parsers::KmsgEvent::any_kind) gives its N to the very
//    next record if that is counted, and is dropped otherwise;
//  - a message naming a controller (parsers::KmsgEvent::controller) is counted for the one disk
//    below it in sysfs, an mmc controller's with no card for its host; none: kUnmonitored,
//    several: kAmbiguous;
//  - a partition is counted under its disk; an mmc host's message under the card's disk with the
//    host label; a disk's message on an mmc card also gets its host label, so that both land in
//    one series;
//  - a disk gets series only when it is monitored at the time of the message: `monitored(disk)`
//    (the follower: selected by the device filters and present in <sysfs>/block), or it had
//    series before (a disk that disappears keeps them: the errors logged as a card dies are the
//    ones to keep). A host-only message (no card on it) needs the host in sysfs. Anything else
//    is counted in unattributed() as kUnmonitored, without its name, as node_exporter drops the
//    devices its filters exclude. At most kMaxDevices (disk, host) names get series; later names
//    are kLimit, and get no zero series either (KmsgFollower::Snapshot): absent, not a 0 that
//    hides their messages;
//  - a disk's appearance record (parsers::ParseKmsgDiskAppeared: a new card, a new medium, a
//    loop attach) starts its series again: what was counted for that name before belongs to
//    the previous device and moves to unattributed() as kPreviousDevice. This is exact in the
//    order the ring holds records (the order of their timestamps): replayed at start-up, old
//    errors of a card that was replaced are not the new card's; while running, a card swap is a
//    counter reset of that disk's series. If the appearance record was overwritten in the ring,
//    so was everything older: every record left is the current device's. (The disk's sysfs
//    node has no creation time to compare the records' timestamps with.)
class KmsgCounter {
 public:
  static constexpr int kSuppressedHorizon = 64;
  // Names are already bounded by the monitored disks present in sysfs; this bounds a node with
  // thousands of them (loop devices of snaps and images). 1024 names x 8 kinds: ~0.5 MiB.
  static constexpr std::size_t kMaxDevices = 1024;
  using Monitored = std::function<bool(const std::string& disk)>;

  // `monitored` empty: a disk is monitored when resolver->IsDisk(disk).
  explicit KmsgCounter(KmsgDeviceResolver* resolver, Monitored monitored = {})
      : resolver_(resolver), monitored_(std::move(monitored)) {}
  // One record as one read() of /dev/kmsg returns it (dictionary lines included).
  void AddRecord(std::string_view record);
  // Nothing more to read for now: completes a pending fragment and gives unclaimed suppressed
  // counts to device="".
  void Idle();

  // A line of a file or pipe input longer than parsers::kKmsgRecordMax was skipped.
  void Oversized() { ++oversized_; }

  const KmsgCounts& counts() const { return counts_; }
  // The (disk, host) names with series; below kMaxDevices a new name gets one at its first
  // message, at kMaxDevices no other name does (its messages are kLimit).
  const std::set<std::pair<std::string, std::string>>& devices() const { return devices_; }
  const KmsgUnattributed& unattributed() const { return unattributed_; }
  std::uint64_t records() const { return records_; }
  std::uint64_t lost() const { return lost_; }
  std::uint64_t malformed() const { return malformed_; }
  std::uint64_t oversized() const { return oversized_; }
  std::uint64_t duplicate() const { return duplicate_; }
  // How many records back a repeat is recognised. /dev/kmsg never returns a record twice (its
  // sequence numbers only grow within a boot); a file or pipe can (a collector that re-sends, a
  // log appended twice). Sequence numbers alone are not enough: they restart at each boot, so a
  // file holding two boots repeats them with other timestamps.
  static constexpr std::size_t kRecentRecords = 1024;

 private:
  void Classify(const std::string& message);
  void Count(const parsers::KmsgEvent& e, std::uint64_t n);
  void Appeared(const std::string& disk);

  KmsgDeviceResolver* resolver_;
  Monitored monitored_;
  KmsgCounts counts_;
  KmsgUnattributed unattributed_;
  std::set<std::pair<std::string, std::string>> devices_;  // (disk, host) with series, <= kMaxDevices
  std::uint64_t records_ = 0, lost_ = 0, malformed_ = 0, oversized_ = 0, duplicate_ = 0;
  std::optional<std::uint64_t> last_seq_;
  // (seq, timestamp_us) of the last kRecentRecords records: ring in recent_order_, lookup in recent_.
  std::set<std::pair<std::uint64_t, std::uint64_t>> recent_;
  std::deque<std::pair<std::uint64_t, std::uint64_t>> recent_order_;
  std::optional<std::string> pending_;  // a fragment that '+' records may still continue
  struct Suppressed {
    std::uint64_t count = 0;
    int age = 0;  // records since it was logged
  };
  std::map<parsers::KmsgKind, Suppressed> suppressed_;
  std::uint64_t suppressed_any_ = 0;  // an any_kind suppressed count, for the next record only
};

class KmsgFollower {
 public:
  KmsgFollower(std::string path, std::string sysfs);
  ~KmsgFollower();  // Stop()
  KmsgFollower(const KmsgFollower&) = delete;
  KmsgFollower& operator=(const KmsgFollower&) = delete;

  // Which disks are monitored (the configuration's device filters); before the first call,
  // every disk. A disk must also be present in <sysfs>/block to get series (KmsgCounter).
  void SetDeviceFilter(config::DevicesConfig filter);

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

  // --path.kmsg as given.
  const std::string& path() const { return path_; }

 private:
  void Loop(int fd);
  void Feed(std::string_view data, bool whole_records);
  void Line(std::string_view line);  // stream mode: one whole line, '\n' included
  void OnIdle();

  const std::string path_;
  mutable KmsgDeviceResolver resolver_;
  mutable std::mutex mu_;
  config::DevicesConfig filter_;  // under mu_
  KmsgCounter counter_;
  std::string error_;
  bool drained_ = false;
  std::string partial_;    // stream mode: bytes of an unfinished line, < kKmsgRecordMax
  bool skipping_ = false;  // stream mode: inside an oversized line, until its newline
  std::string record_;     // stream mode: the record being assembled, <= kKmsgRecordMax
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace diskprobe
