// /proc/device-tree/model (ParseBoardModel) and /proc/cpuinfo's Model line (ModelFromCpuinfo).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/board_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto m = ParseBoardModel(text)) (void)ToString(m->family);
  (void)ModelFromCpuinfo(text);
  return 0;
}
