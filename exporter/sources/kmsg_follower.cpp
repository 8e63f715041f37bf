#include "sources/kmsg_follower.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "util/sysfs_dir.h"
#include "util/file.h"
#include "util/log.h"

namespace diskprobe {
namespace {

using parsers::KmsgKind;

constexpr KmsgKind kAllKinds[] = {KmsgKind::kIoError,          KmsgKind::kTimeout,   KmsgKind::kCrcError,
                                  KmsgKind::kCardRemoved,      KmsgKind::kReset,     KmsgKind::kOverclockReduced,
                                  KmsgKind::kFilesystemError,  KmsgKind::kRemountRo, KmsgKind::kCqeRecovery,
                                  KmsgKind::kCqeError,         KmsgKind::kUnderVoltage};

// Cached maps stay small: names of block devices and hosts. A runaway (fuzzed input) is cleared.
constexpr std::size_t kMaxCache = 1024;

std::string Basename(std::string_view path) {
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A record's name must be a plain file name before it is joined into a sysfs path.
bool SafeName(std::string_view n) {
  return !n.empty() && n.find('/') == std::string_view::npos && n != "." && n != "..";
}

parsers::KmsgEvent Unattributed(KmsgKind kind) {
  parsers::KmsgEvent e;
  e.kind = kind;
  return e;
}

}  // namespace

// --- KmsgDeviceResolver ----------------------------------------------------------------------

std::string KmsgDeviceResolver::DiskOf(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = disk_of_.find(name); it != disk_of_.end()) return it->second;
  std::string disk;
  if (SafeName(name)) {
    const std::string cls = util::JoinPath(sysfs_, "class/block/" + std::string(name));
    if (Exists(cls + "/partition")) {
      char buf[PATH_MAX];
      if (::realpath(cls.c_str(), buf) != nullptr) {
        std::string real = buf;
        std::size_t slash = real.rfind('/');
        if (slash != std::string::npos) disk = Basename(std::string_view(real).substr(0, slash));
      }
    } else if (Exists(cls) || Exists(util::JoinPath(sysfs_, "block/" + std::string(name)))) {
      disk = std::string(name);
    }
  }
  if (disk.empty()) disk = parsers::DiskOfPartition(name);
  if (disk_of_.size() >= kMaxCache) disk_of_.clear();
  disk_of_.emplace(std::string(name), disk);
  return disk;
}

std::string KmsgDeviceResolver::HostOfDisk(const std::string& disk) {
  if (disk.rfind("mmcblk", 0) != 0 || !SafeName(disk)) return "";
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = host_of_disk_.find(disk); it != host_of_disk_.end()) return it->second;
  std::string card = util::LinkBasename(util::JoinPath(sysfs_, "block/" + disk + "/device"));
  std::size_t colon = card.find(':');
  if (colon == std::string::npos) return "";  // not cached: the card may not be probed yet
  std::string host = card.substr(0, colon);
  if (host_of_disk_.size() >= kMaxCache) host_of_disk_.clear();
  host_of_disk_.emplace(disk, host);
  return host;
}

std::string KmsgDeviceResolver::DiskOfHost(const std::string& host) {
  if (!SafeName(host)) return "";
  std::string found;
  const std::string dir = util::JoinPath(sysfs_, "class/mmc_host/" + host);
  const std::string prefix = host + ":";
  for (const std::string& child : util::ListDir(dir)) {
    if (child.compare(0, prefix.size(), prefix) != 0) continue;
    std::vector<std::string> blocks = util::ListDir(dir + "/" + child + "/block");
    if (!blocks.empty()) {
      found = blocks.front();
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (found.empty()) {
    auto it = disk_of_host_.find(host);
    return it == disk_of_host_.end() ? "" : it->second;
  }
  if (disk_of_host_.size() >= kMaxCache) disk_of_host_.clear();
  disk_of_host_[host] = found;
  host_of_disk_[found] = host;
  return found;
}

std::vector<std::string> KmsgDeviceResolver::DisksBelow(const std::string& controller) {
  std::vector<std::string> found;
  if (!SafeName(controller)) return found;
  const std::string marker = "/" + controller + "/";
  for (const std::string& disk : util::ListDir(util::JoinPath(sysfs_, "block"))) {
    char buf[PATH_MAX];
    const std::string link = util::JoinPath(sysfs_, "block/" + disk);
    if (::realpath(link.c_str(), buf) == nullptr) continue;
    if (std::string_view(buf).find(marker) != std::string_view::npos) found.push_back(disk);
  }
  return found;
}

std::string KmsgDeviceResolver::HostOfController(const std::string& controller) {
  if (!SafeName(controller)) return "";
  for (const std::string& host : util::ListDir(util::JoinPath(sysfs_, "class/mmc_host")))
    if (util::LinkBasename(util::JoinPath(sysfs_, "class/mmc_host/" + host + "/device")) == controller) return host;
  return "";
}

bool KmsgDeviceResolver::IsDisk(const std::string& disk) const {
  return SafeName(disk) && Exists(util::JoinPath(sysfs_, "block/" + disk));
}

bool KmsgDeviceResolver::IsHost(const std::string& host) const {
  return SafeName(host) && Exists(util::JoinPath(sysfs_, "class/mmc_host/" + host));
}

std::string_view ToString(KmsgUnattributedReason reason) {
  switch (reason) {
    case KmsgUnattributedReason::kUnmonitored: return "unmonitored";
    case KmsgUnattributedReason::kPreviousDevice: return "previous_device";
    case KmsgUnattributedReason::kLimit: return "limit";
    case KmsgUnattributedReason::kAmbiguous: return "ambiguous";
  }
  return "unknown";
}

// --- KmsgCounter -----------------------------------------------------------------------------

void KmsgCounter::AddRecord(std::string_view record) {
  std::optional<parsers::KmsgRecord> r = parsers::ParseKmsgRecord(record);
  if (!r) {
    ++malformed_;
    return;
  }
  const std::pair<std::uint64_t, std::uint64_t> key{r->seq, r->timestamp_us};
  if (!recent_.insert(key).second) {
    ++duplicate_;
    return;
  }
  recent_order_.push_back(key);
  if (recent_order_.size() > kRecentRecords) {
    recent_.erase(recent_order_.front());
    recent_order_.pop_front();
  }
  ++records_;
  if (last_seq_ && r->seq > *last_seq_ + 1) lost_ += r->seq - *last_seq_ - 1;
  if (!last_seq_ || r->seq > *last_seq_) last_seq_ = r->seq;

  for (auto it = suppressed_.begin(); it != suppressed_.end();) {
    if (++it->second.age > kSuppressedHorizon) {
      Count(Unattributed(it->first), it->second.count);
      it = suppressed_.erase(it);
    } else {
      ++it;
    }
  }
  if (r->facility != 0) return;  // written by userspace, not the kernel
  if (r->continuation && pending_) {
    // A line is never longer than one record could be: the rest is dropped.
    if (pending_->size() + r->message.size() <= parsers::kKmsgRecordMax) *pending_ += r->message;
    return;
  }
  if (pending_) {
    Classify(*pending_);
    pending_.reset();
  }
  if (r->fragment || r->continuation) {
    pending_ = std::move(r->message);
    return;
  }
  Classify(r->message);
}

void KmsgCounter::Idle() {
  if (pending_) {
    Classify(*pending_);
    pending_.reset();
  }
  for (const auto& [kind, s] : suppressed_) Count(Unattributed(kind), s.count);
  suppressed_any_ = 0;
  suppressed_.clear();
}

void KmsgCounter::Classify(const std::string& message) {
  if (std::optional<std::string> disk = parsers::ParseKmsgDiskAppeared(message)) {
    Appeared(*disk);
    return;
  }
  std::optional<parsers::KmsgEvent> e = parsers::ClassifyKmsg(message);
  // A suppressed count of no known call site belongs to the message right after it, or to none.
  const std::uint64_t any = suppressed_any_;
  suppressed_any_ = 0;
  if (!e) return;
  if (e->suppressed) {
    if (e->any_kind) suppressed_any_ = e->count;
    else suppressed_[e->kind].count += e->count;
    return;
  }
  std::uint64_t n = e->count + any;
  if (auto it = suppressed_.find(e->kind); it != suppressed_.end()) {
    n += it->second.count;
    suppressed_.erase(it);
  }
  Count(*e, n);
}

void KmsgCounter::Count(const parsers::KmsgEvent& e, std::uint64_t n) {
  using Reason = KmsgUnattributedReason;
  std::string disk, host;
  if (!e.device.empty()) {
    disk = resolver_->DiskOf(e.device);
    host = resolver_->HostOfDisk(disk);
  } else if (!e.host.empty()) {
    host = e.host;
    disk = resolver_->DiskOfHost(host);
  } else if (!e.controller.empty()) {
    // The disk below the controller now; an mmc controller without a card counts under its host.
    std::vector<std::string> disks = resolver_->DisksBelow(e.controller);
    if (disks.size() > 1) {
      unattributed_[{Reason::kAmbiguous, e.kind}] += n;
      return;
    }
    if (disks.size() == 1) {
      disk = disks.front();
      host = resolver_->HostOfDisk(disk);
    } else {
      host = resolver_->HostOfController(e.controller);
      if (host.empty()) {
        unattributed_[{Reason::kUnmonitored, e.kind}] += n;
        return;
      }
      disk = resolver_->DiskOfHost(host);
    }
  }
  if (disk.empty() && host.empty()) {
    counts_[{disk, host, e.kind}] += n;  // names no device: under-voltage, unclaimed suppressed counts
    return;
  }
  std::pair<std::string, std::string> key{disk, host};
  if (devices_.count(key) == 0) {
    const bool monitored =
        disk.empty() ? resolver_->IsHost(host) : (monitored_ ? monitored_(disk) : resolver_->IsDisk(disk));
    if (!monitored) {
      unattributed_[{Reason::kUnmonitored, e.kind}] += n;
      return;
    }
    if (devices_.size() >= kMaxDevices) {
      unattributed_[{Reason::kLimit, e.kind}] += n;
      return;
    }
    devices_.insert(std::move(key));
  }
  counts_[{disk, host, e.kind}] += n;
}

void KmsgCounter::Appeared(const std::string& name) {
  const std::string disk = resolver_->DiskOf(name);
  for (auto it = counts_.begin(); it != counts_.end();) {
    if (std::get<0>(it->first) == disk) {
      unattributed_[{KmsgUnattributedReason::kPreviousDevice, std::get<2>(it->first)}] += it->second;
      it = counts_.erase(it);
    } else {
      ++it;
    }
  }
  // The name stays in devices_: its series start again from the new device's messages.
}

// --- KmsgFollower ----------------------------------------------------------------------------

KmsgFollower::KmsgFollower(std::string path, std::string sysfs)
    : path_(std::move(path)), resolver_(std::move(sysfs)),
      // Called by the counter with mu_ held (Feed, OnIdle).
      counter_(&resolver_,
               [this](const std::string& disk) { return filter_.Selects(disk) && resolver_.IsDisk(disk); }) {}

void KmsgFollower::SetDeviceFilter(config::DevicesConfig filter) {
  std::lock_guard<std::mutex> lock(mu_);
  filter_ = std::move(filter);
}

KmsgFollower::~KmsgFollower() { Stop(); }

bool KmsgFollower::Start() {
  int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string reason = path_ + ": " + std::strerror(err);
    if (err == EPERM || err == EACCES)
      reason += " (reading the kernel log needs root or CAP_SYSLOG when kernel.dmesg_restrict=1)";
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::move(reason);
    return false;
  }
  // A named pipe (mkfifo) is opened again for reading and writing: with a write end of its own it
  // never reads end-of-file, so a writer that connects after start-up, or several writers one
  // after another, are all followed. Opened read-only, it read 0 bytes before the first writer
  // came and was never polled again. O_RDWR on a FIFO does not block (fifo(7)); without write
  // permission the read-only descriptor is kept.
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    int rw = ::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (rw >= 0) {
      ::close(fd);
      fd = rw;
    }
  }
  // The oldest record in the ring buffer; ESPIPE on a pipe, harmless.
  ::lseek(fd, 0, SEEK_SET);
  StartFd(fd);
  return true;
}

void KmsgFollower::StartFd(int fd) {
  if (thread_.joinable() || ::pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(fd);
    return;
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  thread_ = std::thread([this, fd] { Loop(fd); });
}

void KmsgFollower::Stop() {
  if (!thread_.joinable()) return;
  char b = 1;
  [[maybe_unused]] ssize_t n = ::write(stop_pipe_[1], &b, 1);
  thread_.join();
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
  stop_pipe_[0] = stop_pipe_[1] = -1;
}

KmsgSnapshot KmsgFollower::Snapshot(const std::vector<std::string>& disks) const {
  KmsgSnapshot s;
  std::set<std::pair<std::string, std::string>> counted;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.error = error_;
    if (!s.error.empty()) return s;
    s.messages = counter_.counts();
    s.unattributed = counter_.unattributed();
    s.records = counter_.records();
    s.lost = counter_.lost();
    s.malformed = counter_.malformed();
    s.oversized = counter_.oversized();
    s.duplicate = counter_.duplicate();
    s.drained = drained_;
    counted = counter_.devices();
  }
  for (const std::string& disk : disks) {
    std::string host = resolver_.HostOfDisk(disk);
    // Past the name limit a disk's messages are counted as kLimit: a zero series would say it
    // logged nothing.
    if (counted.size() >= KmsgCounter::kMaxDevices && counted.count({disk, host}) == 0) continue;
    for (KmsgKind k : kAllKinds)
      if (k != KmsgKind::kUnderVoltage) s.messages.try_emplace({disk, host, k}, 0);
  }
  s.messages.try_emplace({"", "", KmsgKind::kUnderVoltage}, 0);
  return s;
}

void KmsgFollower::Feed(std::string_view data, bool whole_records) {
  std::lock_guard<std::mutex> lock(mu_);
  drained_ = false;
  if (whole_records) {
    counter_.AddRecord(data);  // one read() of /dev/kmsg: at most kKmsgRecordMax bytes
    return;
  }
  // Lines are cut out of `data` as they come, so each byte is looked at once, and an unfinished
  // line is never longer than a record: a writer that never sends '\n' costs no memory.
  while (!data.empty()) {
    const std::size_t nl = data.find('\n');
    const std::string_view piece = data.substr(0, nl == std::string_view::npos ? data.size() : nl + 1);
    data.remove_prefix(piece.size());
    if (skipping_) {
      skipping_ = nl == std::string_view::npos;
      continue;
    }
    if (partial_.size() + piece.size() > parsers::kKmsgRecordMax) {
      counter_.Oversized();
      partial_.clear();
      skipping_ = nl == std::string_view::npos;
      continue;
    }
    if (nl == std::string_view::npos) {
      partial_.append(piece);
      break;
    }
    if (partial_.empty()) {
      Line(piece);
    } else {
      partial_.append(piece);
      Line(partial_);
      partial_.clear();
    }
  }
}

void KmsgFollower::Line(std::string_view line) {
  if (line[0] == ' ' && !record_.empty()) {
    // A dictionary line of the record being assembled; the record stays within one read's size.
    if (record_.size() + line.size() <= parsers::kKmsgRecordMax) record_.append(line);
    return;
  }
  if (!record_.empty()) counter_.AddRecord(record_);
  record_.assign(line);
  if (line == "\n") record_.clear();
}

void KmsgFollower::OnIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!record_.empty()) {
    counter_.AddRecord(record_);
    record_.clear();
  }
  counter_.Idle();
  drained_ = true;
}

void KmsgFollower::Loop(int fd) {
  struct stat st {};
  const bool is_char = ::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode);
  const bool is_file = S_ISREG(st.st_mode);
  // CONSOLE_EXT_LOG_MAX: the largest record /dev/kmsg returns; a smaller buffer gets EINVAL.
  std::vector<char> buf(parsers::kKmsgRecordMax);
  bool at_end = false;  // a pipe whose writer closed: only the stop pipe is left to wait for
  for (;;) {
    if (!at_end) {
      ssize_t n = ::read(fd, buf.data(), buf.size());
      if (n > 0) {
        Feed(std::string_view(buf.data(), static_cast<std::size_t>(n)), is_char);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EPIPE) continue;  // overrun: the next read returns the oldest record left
      if (n < 0 && errno != EAGAIN) {
        std::string reason = path_ + ": read: " + std::strerror(errno);
        std::lock_guard<std::mutex> lock(mu_);
        error_ = std::move(reason);
        break;
      }
      OnIdle();
      if (n == 0 && !is_file) at_end = true;
      // A followed file cut shorter (truncated, or rewritten in place) is read again from its
      // start, as tail -f does; its records count on top of those read before.
      if (n == 0 && is_file) {
        struct stat now {};
        off_t at = ::lseek(fd, 0, SEEK_CUR);
        if (::fstat(fd, &now) == 0 && at > 0 && now.st_size < at) ::lseek(fd, 0, SEEK_SET);
      }
    }
    // A regular file is polled once a second for appended records; /dev/kmsg and a live pipe
    // wake the thread when there is more.
    pollfd p[2] = {{stop_pipe_[0], POLLIN, 0}, {fd, POLLIN, 0}};
    int r = ::poll(p, at_end || is_file ? 1 : 2, is_file && !at_end ? 1000 : -1);
    if (r < 0 && errno != EINTR) break;
    if (p[0].revents != 0) break;
  }
  ::close(fd);
}

}  // namespace diskprobe
