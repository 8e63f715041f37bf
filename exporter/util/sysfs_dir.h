#pragma once
// Directory helpers for the collectors that walk sysfs (mmc_ios, board): listing a directory and
// reading a symlink's last component, both without throwing.
#include <string>
#include <vector>

namespace diskprobe::util {

// Names in `dir` (no "." and ".."), sorted in natural order ("mmc2" before "mmc10"). Empty when
// the directory is missing or unreadable; *error (when given) then gets errno, else 0.
std::vector<std::string> ListDir(const std::string& dir, int* error = nullptr);

// Last path component of the target of symlink `path` ("../../bus/platform/drivers/sdhost-bcm2835"
// -> "sdhost-bcm2835"); "" when `path` is not a readable symlink.
std::string LinkBasename(const std::string& path);

}  // namespace diskprobe::util
