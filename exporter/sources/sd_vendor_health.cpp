#include "sources/sd_vendor_health.h"

#include <fcntl.h>
#include <linux/major.h>
#include <linux/mmc/ioctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "util/file.h"
#include "util/clock.h"
#include "util/log.h"

namespace diskprobe {
namespace {

using util::ThreadCpuSeconds;
using util::MonotonicSeconds;
using util::UnixSeconds;

// Response and command-type flags of struct mmc_ioc_cmd, from the kernel's include/linux/mmc/core.h
// (not in the uapi headers): R1 = present | CRC | opcode; ADTC = addressed data transfer command.
constexpr unsigned kMmcRspPresent = 1u << 0, kMmcRspCrc = 1u << 2, kMmcRspOpcode = 1u << 4;
constexpr unsigned kMmcCmdAdtc = 1u << 5;
constexpr unsigned kMmcRspSpiS1 = 1u << 7;
constexpr unsigned kMmcRspR1 = kMmcRspPresent | kMmcRspCrc | kMmcRspOpcode;
constexpr std::uint32_t kSdGenCmd = 56;

// Our own timeout, beside the errnos a command can fail with.
constexpr int kTimedOut = -1;
constexpr int kBusy = -2;
constexpr int kNotBlockDevice = -3;   // the node opened is no block device: nothing sent
constexpr int kOpenFailed = 1 << 20;  // added to open(2)'s errno

// Whether a result means the command reached the card's driver (MMC_IOC_CMD was issued).
bool Sent(int rc) { return rc != kNotBlockDevice && rc < kOpenFailed; }

std::string ReasonOf(int rc) {
  if (rc == kTimedOut) return "timeout";
  if (rc == kBusy) return "busy";
  if (rc == kNotBlockDevice) return "not_mmc";
  if (rc >= kOpenFailed) return (rc - kOpenFailed == EACCES || rc - kOpenFailed == EPERM) ? "permission" : "open";
  switch (rc) {
    case EPERM:
    case EACCES:
      return "permission";
    case ENOTTY:
    case EINVAL:
    case EOPNOTSUPP:
      return "not_mmc";
    case ETIMEDOUT:
    case EILSEQ:
    case EIO:
    case ENOMEDIUM:
      return "card_error";
    default:
      return "ioctl";
  }
}

std::string DetailOf(int rc, const std::string& path) {
  if (rc == kTimedOut) return path + ": no answer within health.sd_vendor.timeout";
  if (rc == kBusy) return path + ": an earlier command to this card has not returned";
  if (rc == kNotBlockDevice) return path + ": not a block device (no command sent)";
  if (rc >= kOpenFailed) return path + ": open: " + std::strerror(rc - kOpenFailed);
  std::string d = path + ": MMC_IOC_CMD: " + std::strerror(rc);
  if (rc == EPERM) d += " (needs CAP_SYS_RAWIO, and the whole card, not a partition)";
  if (rc == ENOTTY || rc == EINVAL) d += " (not an MMC block device)";
  return d;
}

// A failure that applies to every layout (no point sending the others this pass).
bool StopsPass(int rc) {
  const std::string r = ReasonOf(rc);
  return r != "card_error";
}

}  // namespace

int SendCmd56(const std::string& path, std::uint32_t arg, bool write, parsers::SdGenCmdBlock* block) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return kOpenFailed + errno;
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISBLK(st.st_mode)) {  // a FIFO, a file, /dev/zero: no ioctl
    ::close(fd);
    return kNotBlockDevice;
  }
  mmc_ioc_cmd cmd{};
  cmd.write_flag = write ? 1 : 0;
  cmd.opcode = kSdGenCmd;
  cmd.arg = arg;
  // sdmon's flags: SPI R1 | R1 | ADTC to read; R1 | ADTC to write (SD Physical Layer table 4-29).
  cmd.flags = write ? (kMmcRspR1 | kMmcCmdAdtc) : (kMmcRspSpiS1 | kMmcRspR1 | kMmcCmdAdtc);
  cmd.blksz = static_cast<unsigned>(block->size());
  cmd.blocks = 1;
  mmc_ioc_cmd_set_data(cmd, block->data());
  const int rc = ::ioctl(fd, MMC_IOC_CMD, &cmd);
  const int err = rc < 0 ? errno : 0;
  ::close(fd);
  return err;
}

struct SdVendorHealthReader::Pending {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  int rc = 0;
  parsers::SdGenCmdBlock block{};
};

SdVendorHealthReader::SdVendorHealthReader(std::string devfs, config::SdVendorHealthConfig cfg, Cmd56Fn cmd)
    : devfs_(std::move(devfs)), cmd_(cmd ? std::move(cmd) : Cmd56Fn(&SendCmd56)), cfg_(std::move(cfg)) {}

SdVendorHealthReader::~SdVendorHealthReader() { Stop(); }

void SdVendorHealthReader::Start() {
  std::chrono::milliseconds interval;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (cfg_.devices.empty()) return;
    interval = cfg_.interval;
  }
  thread_.Start(interval, [this] { PassNow(); });
}

void SdVendorHealthReader::Reconfigure(config::SdVendorHealthConfig cfg) {
  const auto interval = cfg.interval;
  {
    std::lock_guard<std::mutex> l(mu_);
    cfg_ = std::move(cfg);
    // A card no longer listed goes from the page now, not at the next pass hours later.
    for (auto it = snap_.cards.begin(); it != snap_.cards.end();) {
      bool listed = false;
      for (const std::string& d : cfg_.devices) listed = listed || d == it->first;
      it = listed ? std::next(it) : snap_.cards.erase(it);
    }
  }
  thread_.SetInterval(interval);
  Start();
}

SdVendorHealthSnapshot SdVendorHealthReader::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return snap_;
}

int SdVendorHealthReader::Run(const std::string& card, const std::string& path, std::uint32_t arg, bool write,
                              parsers::SdGenCmdBlock* block, std::chrono::milliseconds timeout) {
  auto p = std::make_shared<Pending>();
  p->block = *block;
  // The helper owns a copy of the command and shares only `p`: abandoned on timeout, it may
  // outlive this reader.
  std::thread([p, cmd = cmd_, path, arg, write] {
    const int rc = cmd(path, arg, write, &p->block);
    std::lock_guard<std::mutex> l(p->mu);
    p->rc = rc;
    p->done = true;
    p->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> l(p->mu);
  if (!p->cv.wait_for(l, timeout, [&] { return p->done; })) {
    stuck_[card] = p;
    return kTimedOut;
  }
  *block = p->block;
  return p->rc;
}

void SdVendorHealthReader::PassNow() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  config::SdVendorHealthConfig cfg;
  std::map<std::string, SdVendorHealthEntry> prev;
  {
    std::lock_guard<std::mutex> l(mu_);
    cfg = cfg_;
    prev = snap_.cards;
  }
  std::map<std::string, SdVendorHealthEntry> next;
  for (const std::string& card : cfg.devices) {
    SdVendorHealthEntry e;
    if (auto it = prev.find(card); it != prev.end()) e = it->second;
    const std::string path = util::JoinPath(devfs_, card);
    const double cpu0 = ThreadCpuSeconds(), t0 = MonotonicSeconds();

    // Which layouts, in order: the configured one, or (auto) the one found last time first.
    std::vector<const parsers::SdVendorLayoutInfo*> layouts;
    if (cfg.layout == "auto") {
      const parsers::SdVendorLayoutInfo* found = found_.count(card) ? found_[card] : nullptr;
      if (found) layouts.push_back(found);
      for (const auto& l : parsers::SdVendorLayouts())
        if (l.in_auto && &l != found) layouts.push_back(&l);
    } else if (const auto* l = parsers::FindSdVendorLayout(cfg.layout)) {
      layouts.push_back(l);
    }

    std::optional<parsers::SdVendorHealth> accepted;
    std::string failure, failure_detail, reject_detail;
    bool rejected_any = false;
    if (auto s = stuck_.find(card); s != stuck_.end()) {
      std::lock_guard<std::mutex> l(s->second->mu);
      if (s->second->done) stuck_.erase(s);
    }
    if (stuck_.count(card)) {
      failure = ReasonOf(kBusy);
      failure_detail = DetailOf(kBusy, path);
      ++e.failures[failure];
      layouts.clear();
    }
    for (const parsers::SdVendorLayoutInfo* l : layouts) {
      parsers::SdGenCmdBlock block{};
      int rc = 0;
      if (l->prepare_write_arg) {
        rc = Run(card, path, *l->prepare_write_arg, true, &block, cfg.timeout);
        if (Sent(rc)) ++e.commands;
      }
      if (rc == 0) {
        block.fill(0);
        rc = Run(card, path, l->read_arg, false, &block, cfg.timeout);
        if (Sent(rc)) ++e.commands;
      }
      if (rc != 0) {
        failure = ReasonOf(rc);
        failure_detail = DetailOf(rc, path) + " (layout " + std::string(l->name) + ")";
        ++e.failures[failure];
        if (StopsPass(rc)) break;
        continue;
      }
      failure.clear();
      parsers::SdReject rej;
      std::optional<parsers::SdVendorHealth> h = parsers::ParseSdVendorReply(l->layout, block, &rej);
      if (h && e.health) {
        if (auto back = parsers::CheckSdVendorProgress(*e.health, *h)) {
          rej = *back;
          h.reset();
        }
      }
      if (h) {
        accepted = h;
        found_[card] = l;
        break;
      }
      rejected_any = true;
      ++e.rejected[{std::string(l->name), std::string(rej.reason)}];
      reject_detail = path + ": layout " + std::string(l->name) + ": " + std::string(rej.reason) + ": " + rej.detail;
    }

    const std::string state = accepted ? "ok" : (rejected_any && failure.empty() ? "rejected" : failure);
    if (state != e.state) {
      if (accepted)
        log::Info("SD vendor health readable", {{"device", card}, {"layout", std::string(parsers::InfoOf(accepted->layout).name)}});
      else if (state == "rejected")
        log::Warn("SD vendor health reply rejected, not exported", {{"device", card}, {"err", reject_detail}});
      else
        log::Warn("cannot read SD vendor health", {{"device", card}, {"reason", state}, {"err", failure_detail}});
    }
    e.state = state;
    // e.health outlives a failed pass only as the reference for the next reply's counters: the
    // collector exports it only while state is "ok".
    if (accepted) {
      e.health = accepted;
      ++e.reads;
      e.last_success_unix = UnixSeconds();
    }
    e.last_pass_seconds = MonotonicSeconds() - t0;
    e.cpu_seconds += ThreadCpuSeconds() - cpu0;
    next[card] = std::move(e);
  }
  std::lock_guard<std::mutex> l(mu_);
  snap_.cards = std::move(next);
  ++snap_.passes;
}

}  // namespace diskprobe
