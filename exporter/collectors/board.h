#pragma once
// board: the Raspberry Pi board model and the firmware's throttling flags (power supply, heat).
//
// Sources:
//   <sysfs>/firmware/devicetree/base/model   the DT model string (no trailing newline). /proc/device-tree
//                                            is an absolute symlink to /sys/firmware/devicetree/base, so
//                                            under --path.procfs of a container or fixture it would point
//                                            at the wrong tree: sysfs is read first, <procfs>/device-tree/model
//                                            as a fallback (parsers/board_model.h).
//   <sysfs>/devices/platform/soc/soc:firmware/get_throttled
//                                            kernel drivers/firmware/raspberrypi.c, "%x\n" (hex, no 0x);
//                                            found through <sysfs>/bus/platform/drivers/raspberrypi-firmware/
//                                            when the firmware node is elsewhere (parsers/throttled.h)
//   <sysfs>/class/hwmon/hwmonN/{name,in0_lcrit_alarm}
//                                            hwmon "rpi_volt" (drivers/hwmon/raspberrypi-hwmon.c): only when
//                                            get_throttled is missing (newer kernels deprecate it)
// The model cannot change while running: read once. The location of get_throttled is cached; the
// value itself is read at every scrape (one attribute). Not a Pi: nothing is exported, success.
#include <chrono>
#include <optional>

#include "scrape/collector.h"
#include "parsers/board_model.h"

namespace diskprobe::collectors {

class BoardCollector : public Collector {
 public:
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

 private:
  bool model_read_ = false;
  std::optional<parsers::BoardModel> model_;
  // Where the flags are read from: get_throttled, else the hwmon alarm, else nothing. Looked up
  // again at most every kLookupInterval while nothing is found.
  std::string throttled_path_, hwmon_alarm_path_;
  std::optional<std::chrono::steady_clock::time_point> looked_up_;
};

}  // namespace diskprobe::collectors
