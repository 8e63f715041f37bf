// config.txt (ParseBootConfig). The first byte's low 7 bits pick the board the filters are
// evaluated for (none, or one of the fixture boards), its high bit whether includes are followed;
// the rest is the file. Every `include` gets the same text back, so include loops and the depth
// bound run too.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "parsers/board_model.h"
#include "parsers/boot_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  if (size == 0) return 0;
  static constexpr std::array<std::string_view, 6> kModels{
      "Raspberry Pi 3 Model B Plus Rev 1.3", "Raspberry Pi 4 Model B Rev 1.4", "Raspberry Pi Compute Module 4 Rev 1.0",
      "Raspberry Pi 5 Model B Rev 1.0",      "Raspberry Pi Zero 2 W Rev 1.0",  "Raspberry Pi Model B Rev 2"};
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  BootConfigInput input;
  const std::size_t board = (data[0] & 0x7f) % (kModels.size() + 1);  // 0: no board known
  if (board != 0) input.board = ParseBoardModel(kModels[board - 1]);
  if (data[0] & 0x80) input.load_file = [text](std::string_view) { return std::optional<std::string>(text); };
  const BootConfig c = ParseBootConfig(text, input);
  if (c.files.empty()) __builtin_trap();  // config.txt itself is always read
  return 0;
}
