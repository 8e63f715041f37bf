// Raspberry Pi board model from /proc/device-tree/model (a DT string property:
// NUL-terminated, no trailing newline).
// Filter names and which boards "also see" other filters:
// https://www.raspberrypi.com/documentation/computers/config_txt.html#conditional-filters
// (raspberrypi/documentation config_txt/conditional.adoc).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace diskprobe::parsers {

enum class BoardFamily { kUnknown, kPi0, kPi1, kPi2, kPi3, kPi4, kPi5 };
std::string_view ToString(BoardFamily family);  // "pi0".."pi5", "unknown"

struct BoardModel {
  std::string model;          // cleaned string, e.g. "Raspberry Pi 3 Model B Plus Rev 1.3"
  bool raspberry_pi = false;  // model starts with "Raspberry Pi "
  BoardFamily family = BoardFamily::kUnknown;
  std::string variant;                  // "3B+", "4B", "400", "CM4", "Zero 2 W", "5B", "500", "CM5"...
  std::optional<std::string> revision;  // "1.3" (digits.digits after "Rev ")
  bool compute_module = false;
  // config.txt model filters this board matches, e.g. {"pi3", "pi3+"} for a
  // 3B+, {"pi4", "cm4"} for a CM4, {"pi0", "pi0w", "pi02"} for a Zero 2 W.
  std::vector<std::string> config_filters;
  // Whether the default SD host driver honours sd_overclock / overclock_50:
  // bcm2835-sdhost on Pi 0-3 does; Pi 4 (sdhci-iproc emmc2) and Pi 5
  // (sdhci-brcmstb) ignore it. Sources:
  // https://github.com/raspberrypi/firmware/issues/726,
  // https://github.com/raspberrypi/linux/issues/7120, overlays README "sd_overclock".
  bool sd_overclock_applies = false;
};

// Cleans the raw property: cuts at the first NUL, trims whitespace. Returns
// nullopt for empty input (no device tree: not a Pi, or not an ARM DT board).
// A non-Pi model is returned with raspberry_pi=false and family unknown.
std::optional<BoardModel> ParseBoardModel(std::string_view raw);

// The "Model\t\t: ..." line of /proc/cpuinfo (which the kernel copies from
// the DT model) -> the value, for hosts without /proc/device-tree.
std::optional<std::string> ModelFromCpuinfo(std::string_view cpuinfo);

}  // namespace diskprobe::parsers
