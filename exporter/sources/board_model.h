#pragma once
// The host's board model, read from the device tree (shared by the board and boot_config
// collectors).
//
// Sources: <sysfs>/firmware/devicetree/base/model first, then <procfs>/device-tree/model.
// /proc/device-tree is an absolute symlink to /sys/firmware/devicetree/base, so under the
// --path.procfs of a container or fixture it would point at the wrong tree. The string has no
// trailing newline (parsers/board_model.h parses it).
#include <optional>
#include <string>

#include "parsers/board_model.h"

namespace diskprobe::sources {

// The board model, or nullopt when neither file holds a device tree model (not a Pi, no DT).
std::optional<parsers::BoardModel> ReadBoardModel(const std::string& sysfs, const std::string& procfs);

}  // namespace diskprobe::sources
