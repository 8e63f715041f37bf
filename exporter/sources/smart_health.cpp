#include "sources/smart_health.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "util/file.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/strings.h"

namespace diskprobe {
namespace {

using util::UnixSeconds;

bool AnyMessageHas(const parsers::SmartctlReport& r, std::string_view needle) {
  for (const std::string& m : r.messages)
    if (m.find(needle) != std::string::npos) return true;
  return false;
}

std::string FirstMessage(const parsers::ParseResult<parsers::SmartctlReport>& p) {
  return p && !p->messages.empty() ? p->messages.front() : "";
}

}  // namespace

std::string SmartFailureReason(const ChildResult& run, const parsers::ParseResult<parsers::SmartctlReport>& parsed,
                               bool* standby) {
  *standby = false;
  if (run.timed_out) return "timeout";
  if (run.output_overflow) return "output_too_large";
  if (!run.exited) return "killed";
  if (!parsed) return "parse";
  // --nocheck=standby,3: smartctl says why it stopped ("Device is in STANDBY mode, exit(3)"); an
  // exit status of 3 without that message is the bits it stands for (1 and 0).
  if (run.exit_status == 3 && (AnyMessageHas(*parsed, "STANDBY mode") || AnyMessageHas(*parsed, "SLEEP mode"))) {
    *standby = true;
    return "";
  }
  const parsers::SmartctlReport& r = *parsed;
  if (r.exit_status & 0x01) return AnyMessageHas(r, "Unknown USB bridge") ? "unknown_usb_bridge" : "command_line";
  if (r.exit_status & 0x02) {
    if (AnyMessageHas(r, "Permission denied") || AnyMessageHas(r, "Operation not permitted")) return "permission";
    return AnyMessageHas(r, "Unknown USB bridge") ? "unknown_usb_bridge" : "open";
  }
  return "";
}

bool ChildGetsRawio() {
  constexpr unsigned kCapSysRawio = 17;  // <linux/capability.h>
  const util::FileContent status = util::ReadAttribute("/proc/self/status");
  auto has = [&](std::string_view key) {
    const std::size_t at = status.text.find(key);
    if (at == std::string::npos) return false;
    const unsigned long long bits = std::strtoull(status.text.c_str() + at + key.size(), nullptr, 16);
    return ((bits >> kCapSysRawio) & 1u) != 0;
  };
  return has("\nCapAmb:") || (::geteuid() == 0 && has("\nCapBnd:"));
}

std::vector<std::string> SmartHealthReader::Command(const std::string& smartctl, const std::string& device_node,
                                                   const std::string& device_type) {
  std::vector<std::string> argv = {smartctl, "--json=c", "--info", "--health", "--attributes", "--nocheck=standby,3"};
  if (!device_type.empty()) {
    argv.emplace_back("-d");
    argv.push_back(device_type);
  }
  argv.push_back(device_node);
  return argv;
}

SmartHealthReader::SmartHealthReader(std::string sysfs, std::string devfs, const DeviceRegistry* registry,
                                     Options options, Runner runner, RawioCheck rawio)
    : sysfs_(std::move(sysfs)),
      devfs_(std::move(devfs)),
      registry_(registry),
      runner_(runner ? std::move(runner)
                     : Runner([](const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
                         return RunChild(argv, timeout, kSmartctlMaxOutput);
                       })),
      rawio_(rawio ? std::move(rawio) : RawioCheck(&ChildGetsRawio)),
      options_(std::move(options)) {}

SmartHealthReader::~SmartHealthReader() { Stop(); }

void SmartHealthReader::Start() {
  std::chrono::milliseconds interval;
  {
    std::lock_guard<std::mutex> l(mu_);
    interval = options_.interval;
  }
  thread_.Start(interval, [this] { PassNow(); });
}

void SmartHealthReader::SetOptions(Options options) {
  const auto interval = options.interval;
  {
    std::lock_guard<std::mutex> l(mu_);
    options_ = std::move(options);
  }
  thread_.SetInterval(interval);
}

SmartHealthSnapshot SmartHealthReader::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return snap_;
}

void SmartHealthReader::PassNow() {
  std::lock_guard<std::mutex> pass(pass_mu_);
  Options opt;
  bool was_available;
  {
    std::lock_guard<std::mutex> l(mu_);
    opt = options_;
    was_available = snap_.smartctl_available || snap_.passes == 0;
  }
  std::shared_ptr<const DeviceList> devices = registry_->Snapshot();
  struct Result {
    std::string skipped;  // reason, or ""
    std::string error;    // reason, or ""
    std::string detail;
    std::optional<parsers::SmartctlReport> report;
    ChildResult run;
    bool ran = false;
  };
  std::map<std::string, Result> results;
  bool available = true;
  std::string unavailable_detail;
  const bool rawio = rawio_();
  bool any_sd = false;
  for (const Device& d : *devices) {
    if (!d.name.starts_with("sd")) continue;
    any_sd = true;
    Result r;
    const std::string status(
        util::Trim(util::ReadAttribute(util::JoinPath(sysfs_, "block/" + d.name + "/device/power/runtime_status")).text));
    if (status == "suspended") {
      r.skipped = "suspended";
      results[d.name] = std::move(r);
      continue;
    }
    const std::string node = util::JoinPath(devfs_, d.name);
    if (!rawio) {
      if (::access(opt.smartctl_path.c_str(), X_OK) != 0) {
        available = false;
        unavailable_detail = opt.smartctl_path + ": " + std::strerror(errno);
        break;
      }
      r.error = "permission";
      r.detail = node + ": smartctl would run without CAP_SYS_RAWIO, which ATA pass-through needs (not run)";
      results[d.name] = std::move(r);
      continue;
    }
    std::string type;
    for (const auto& [pat, t] : opt.device_types)
      if (type.empty() && pat.FullMatch(d.name)) type = t;
    r.run = runner_(Command(opt.smartctl_path, node, type), opt.timeout);
    if (r.run.spawn_error == ENOENT || r.run.spawn_error == EACCES || r.run.spawn_error == ENOTDIR) {
      available = false;
      unavailable_detail = opt.smartctl_path + ": " + std::strerror(r.run.spawn_error);
      break;
    }
    r.ran = true;
    if (r.run.spawn_error != 0) {
      r.error = "spawn";
      r.detail = opt.smartctl_path + ": " + std::strerror(r.run.spawn_error);
    } else {
      auto parsed = parsers::ParseSmartctlJson(r.run.output);
      bool standby = false;
      r.error = SmartFailureReason(r.run, parsed, &standby);
      if (standby) {
        r.skipped = "standby";
      } else if (r.error.empty()) {
        r.report = *parsed;
      } else {
        r.detail = node + ": " + (r.error == "parse" ? parsed.error : FirstMessage(parsed));
        if (r.error == "timeout") r.detail = node + ": smartctl ran longer than the timeout and was killed";
        if (r.error == "killed") r.detail = node + ": smartctl ended by signal " + std::to_string(r.run.signal);
      }
    }
    results[d.name] = std::move(r);
  }
  // With no sd disk nothing was started: smartctl_up still says whether it could be (a Pi with
  // only an SD card and no smartmontools read 1 before).
  if (!any_sd && ::access(opt.smartctl_path.c_str(), X_OK) != 0) {
    available = false;
    unavailable_detail = opt.smartctl_path + ": " + std::strerror(errno);
  }
  if (!available && was_available)
    log::Warn("smartctl cannot be run: SATA/USB disk health is off", {{"err", unavailable_detail}});
  if (available && !was_available) log::Info("smartctl can be run again", {{"smartctl", opt.smartctl_path}});

  std::lock_guard<std::mutex> l(mu_);
  snap_.smartctl_available = available;
  ++snap_.passes;
  if (!available) {
    snap_.disks.clear();
    return;
  }
  std::map<std::string, SmartHealthEntry> next;
  for (auto& [disk, r] : results) {
    SmartHealthEntry e;
    if (auto old = snap_.disks.find(disk); old != snap_.disks.end()) e = old->second;
    if (r.ran) {
      ++e.runs;
      e.read_cpu_seconds += r.run.cpu_seconds;
      e.read_input_blocks += static_cast<std::uint64_t>(r.run.input_blocks);
    }
    if (!r.skipped.empty()) {
      ++e.skipped[r.skipped];
    } else if (r.report) {
      if (!e.error.empty()) log::Info("SMART data readable again", {{"device", disk}});
      e.report = std::move(r.report);
      e.error.clear();
      ++e.reads;
      e.last_success_unix = UnixSeconds();
      e.last_read_seconds = r.run.wall_seconds;
    } else {
      if (e.error != r.error)
        log::Warn("cannot read SMART data", {{"device", disk}, {"reason", r.error}, {"err", r.detail}});
      e.report.reset();
      e.error = r.error;
      ++e.failures[r.error];
    }
    next[disk] = std::move(e);
  }
  snap_.disks = std::move(next);
}

}  // namespace diskprobe
