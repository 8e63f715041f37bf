#include "collectors/board.h"

#include <cstring>

#include "parsers/throttled.h"
#include "sources/board_model.h"
#include "util/file.h"
#include "util/strings.h"
#include "util/sysfs_dir.h"

namespace diskprobe::collectors {
namespace {

using prometheus::MetricType;
constexpr std::chrono::seconds kLookupInterval{60};

// Present, even if unreadable now (EACCES, EIO). ENOTDIR: a path through a file, as `bind/x` in a
// driver directory, where the kernel keeps bind, unbind and uevent beside the device links.
bool Exists(const std::string& path) {
  const int e = util::ReadAttribute(path).error;
  return e != ENOENT && e != ENOTDIR;
}

std::string FindThrottled(const std::string& sysfs) {
  std::string p = util::JoinPath(sysfs, "devices/platform/soc/soc:firmware/get_throttled");
  if (Exists(p)) return p;
  const std::string drv = util::JoinPath(sysfs, "bus/platform/drivers/raspberrypi-firmware");
  for (const std::string& e : util::ListDir(drv)) {
    p = drv + "/" + e + "/get_throttled";
    if (Exists(p)) return p;
  }
  return {};
}

std::string FindHwmonAlarm(const std::string& sysfs) {
  const std::string cls = util::JoinPath(sysfs, "class/hwmon");
  for (const std::string& e : util::ListDir(cls)) {
    util::FileContent name = util::ReadAttribute(cls + "/" + e + "/name");
    if (name.ok() && util::Trim(name.text) == "rpi_volt") return cls + "/" + e + "/in0_lcrit_alarm";
  }
  return {};
}

void Flag(FamilySink& out, const char* name, const char* help, bool v) {
  out.Family(name, help, MetricType::Gauge);
  out.Sample({}, v ? 1 : 0);
}

}  // namespace

CollectResult BoardCollector::Collect(const ScrapeContext& ctx, FamilySink& out) {
  if (!model_read_) {
    model_ = sources::ReadBoardModel(ctx.paths.sysfs, ctx.paths.procfs);
    model_read_ = true;
  }
  if (model_) {
    out.Family("diskprobe_board_info",
               "Board model from the device tree; value 1. family: config.txt filter family (pi0..pi5).",
               MetricType::Gauge);
    const std::string revision = model_->revision.value_or("");
    out.Sample({{"family", parsers::ToString(model_->family)},
                {"model", model_->model},
                {"revision", revision},
                {"variant", model_->variant}},
               1);
  }

  const auto now = std::chrono::steady_clock::now();
  if (throttled_path_.empty() && hwmon_alarm_path_.empty() && (!looked_up_ || now - *looked_up_ > kLookupInterval)) {
    throttled_path_ = FindThrottled(ctx.paths.sysfs);
    if (throttled_path_.empty()) hwmon_alarm_path_ = FindHwmonAlarm(ctx.paths.sysfs);
    looked_up_ = now;
  }

  std::string failure;
  if (!throttled_path_.empty()) {
    util::FileContent f = util::ReadAttribute(throttled_path_);
    auto t = f.ok() ? parsers::ParseThrottled(f.text)
                    : parsers::ParseResult<parsers::Throttled>::Fail(std::strerror(f.error));
    if (!t) {
      failure = throttled_path_ + ": " + t.error;
    } else {
      Flag(out, "diskprobe_board_under_voltage_now",
           "1 while the supply voltage is under the firmware threshold, about 4.63 V (get_throttled bit 0).",
           t->under_voltage_now);
      Flag(
          out, "diskprobe_board_under_voltage_occurred",
          "1 when under-voltage occurred since boot or since the sticky bits were last cleared (get_throttled bit 16).",
          t->under_voltage_occurred);
      Flag(out, "diskprobe_board_arm_frequency_capped_now",
           "1 while the ARM frequency is capped (get_throttled bit 1).", t->arm_freq_capped_now);
      Flag(out, "diskprobe_board_arm_frequency_capped_occurred",
           "1 when ARM frequency capping occurred since the sticky bits were last cleared (get_throttled bit 17).",
           t->arm_freq_capped_occurred);
      Flag(out, "diskprobe_board_throttled_now", "1 while the firmware throttles the SoC (get_throttled bit 2).",
           t->throttled_now);
      Flag(out, "diskprobe_board_throttled_occurred",
           "1 when throttling occurred since the sticky bits were last cleared (get_throttled bit 18).",
           t->throttled_occurred);
      Flag(out, "diskprobe_board_soft_temperature_limit_now",
           "1 while the soft temperature limit is active (get_throttled bit 3).", t->soft_temp_limit_now);
      Flag(out, "diskprobe_board_soft_temperature_limit_occurred",
           "1 when the soft temperature limit was reached since the sticky bits were last cleared (get_throttled bit "
           "19).",
           t->soft_temp_limit_occurred);
    }
  } else if (!hwmon_alarm_path_.empty()) {
    util::FileContent f = util::ReadAttribute(hwmon_alarm_path_);
    auto v = f.ok() ? util::ParseU64(f.text) : std::nullopt;
    if (!v || *v > 1) {
      failure = hwmon_alarm_path_ + ": " + (f.ok() ? "not 0 or 1" : std::strerror(f.error));
    } else {
      Flag(out, "diskprobe_board_under_voltage_now",
           "1 while the supply voltage is under the firmware threshold, about 4.63 V (get_throttled bit 0).", *v == 1);
    }
  }
  return failure.empty() ? CollectResult::Ok() : CollectResult::Failed(std::move(failure));
}

}  // namespace diskprobe::collectors
