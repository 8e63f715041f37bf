#include "sources/nvme_health.h"

#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <cstdio>

#include "util/file.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/sysfs_dir.h"

namespace diskprobe {
namespace {

using util::ThreadCpuSeconds;
using util::MonotonicSeconds;
using util::UnixSeconds;

constexpr std::uint8_t kGetLogPage = 0x02;
constexpr std::uint32_t kSmartLogId = 0x02;
constexpr std::uint32_t kNsidAll = 0xFFFFFFFFu;

bool IsController(std::string_view name) {
  if (!name.starts_with("nvme") || name.size() == 4) return false;
  for (char c : name.substr(4))
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

NvmeReadOutcome ReadNvmeSmartLog(const std::string& path, NvmeSmartPage* page) {
  NvmeReadOutcome out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  page->fill(0);
  nvme_admin_cmd cmd{};
  cmd.opcode = kGetLogPage;
  cmd.nsid = kNsidAll;
  cmd.addr = reinterpret_cast<std::uintptr_t>(page->data());
  cmd.data_len = static_cast<std::uint32_t>(page->size());
  // CDW10: bits 31:16 NUMDL (dwords - 1, 0's based), 15 RAE = 0, 14:8 LSP = 0, 7:0 LID.
  const std::uint32_t numd = static_cast<std::uint32_t>(page->size() / 4 - 1);
  cmd.cdw10 = ((numd & 0xFFFFu) << 16) | kSmartLogId;
  cmd.cdw11 = numd >> 16;  // NUMDU
  int rc = ::ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
  if (rc < 0) out.error = errno;
  else out.nvme_status = rc;
  ::close(fd);
  return out;
}

std::string NvmeControllerOf(const std::string& sysfs, const std::string& disk) {
  if (!disk.starts_with("nvme")) return "";
  const std::string parent = util::LinkBasename(util::JoinPath(sysfs, "block/" + disk + "/device"));
  if (IsController(parent)) return parent;
  if (parent.starts_with("nvme-subsys")) {
    for (const std::string& e : util::ListDir(util::JoinPath(sysfs, "class/nvme-subsystem/" + parent)))
      if (IsController(e)) return e;  // ListDir sorts naturally: nvme0 before nvme1
  }
  return "";
}

NvmeHealthReader::NvmeHealthReader(std::string sysfs, std::string devfs, const DeviceRegistry* registry,
                                   std::chrono::milliseconds interval, Reader reader)
    : sysfs_(std::move(sysfs)),
      devfs_(std::move(devfs)),
      registry_(registry),
      reader_(reader ? std::move(reader) : Reader(&ReadNvmeSmartLog)),
      interval_(interval) {}

NvmeHealthReader::~NvmeHealthReader() { Stop(); }

void NvmeHealthReader::Start() {
  std::chrono::milliseconds interval;
  {
    std::lock_guard<std::mutex> l(mu_);
    interval = interval_;
  }
  thread_.Start(interval, [this] { PassNow(); });
}

void NvmeHealthReader::SetInterval(std::chrono::milliseconds interval) {
  {
    std::lock_guard<std::mutex> l(mu_);
    interval_ = interval;
  }
  thread_.SetInterval(interval);
}

NvmeHealthSnapshot NvmeHealthReader::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return snap_;
}

void NvmeHealthReader::PassNow() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  std::shared_ptr<const DeviceList> devices = registry_->Snapshot();
  // Which disks share a controller: the page is read once per controller.
  std::map<std::string, std::vector<std::string>> by_controller;
  for (const Device& d : *devices) {
    std::string c = NvmeControllerOf(sysfs_, d.name);
    if (!c.empty()) by_controller[c].push_back(d.name);
  }
  struct Result {
    bool suspended = false;
    std::string error;  // reason
    std::string detail;
    std::optional<parsers::NvmeSmartLog> log;
    double wall = 0, cpu = 0, unix_time = 0;
  };
  std::map<std::string, Result> results;
  for (const auto& [controller, disks] : by_controller) {
    Result r;
    const std::string status(util::Trim(util::ReadAttribute(util::JoinPath(sysfs_, "class/nvme/" + controller + "/device/power/runtime_status")).text));
    if (status == "suspended") {
      r.suspended = true;
    } else {
      NvmeSmartPage page{};
      const double cpu0 = ThreadCpuSeconds(), t0 = MonotonicSeconds();
      const std::string node = util::JoinPath(devfs_, controller);
      NvmeReadOutcome o = reader_(node, &page);
      r.wall = MonotonicSeconds() - t0;
      r.cpu = ThreadCpuSeconds() - cpu0;
      r.unix_time = UnixSeconds();
      if (o.error == EACCES || o.error == EPERM) {
        r.error = "permission";
        r.detail = node + ": " + std::strerror(o.error) + " (Get Log Page needs CAP_SYS_ADMIN)";
      } else if (o.error != 0) {
        r.error = "ioctl";
        r.detail = node + ": " + std::strerror(o.error);
      } else if (o.nvme_status != 0) {
        r.error = "nvme_status";
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(o.nvme_status));
        r.detail = node + ": Get Log Page 02h failed with NVMe status " + hex;
      } else {
        auto parsed = parsers::ParseNvmeSmartLog(page);
        if (parsed) r.log = *parsed;
        else {
          r.error = "parse";
          r.detail = node + ": " + parsed.error;
        }
      }
    }
    results[controller] = std::move(r);
  }
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, NvmeHealthEntry> next;
  for (const auto& [controller, disks] : by_controller) {
    const Result& r = results[controller];
    for (const std::string& disk : disks) {
      NvmeHealthEntry e;
      auto old = snap_.disks.find(disk);
      if (old != snap_.disks.end() && old->second.controller == controller) e = old->second;
      e.controller = controller;
      if (r.suspended) {
        ++e.skipped_suspended;
      } else if (r.log) {
        if (!e.error.empty()) log::Info("NVMe SMART log readable again", {{"device", disk}, {"controller", controller}});
        e.log = r.log;
        e.error.clear();
        ++e.reads;
        e.last_success_unix = r.unix_time;
        e.last_read_seconds = r.wall;
      } else {
        if (e.error != r.error)
          log::Warn("cannot read NVMe SMART log", {{"device", disk}, {"reason", r.error}, {"err", r.detail}});
        e.log.reset();
        e.error = r.error;
        ++e.failures[r.error];
      }
      if (!r.suspended) e.read_cpu_seconds += r.cpu;
      next[disk] = std::move(e);
    }
  }
  snap_.disks = std::move(next);
  ++snap_.passes;
}

}  // namespace diskprobe
