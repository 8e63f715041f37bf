// /proc/self/mountinfo (ParseMountinfo, ParseMountinfoLine) and the option checks the
// filesystem collector makes on each mount.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/mountinfo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t bad = 0;
  for (const auto& m : ParseMountinfo(text, &bad)) {
    (void)IsReadOnly(m.mount_options, m.super_options);
    (void)HasMountOption(m.super_options, "errors=remount-ro");
  }
  (void)DecodeMountinfoEscapes(text);
  (void)HasMountOption(text, "ro");
  return 0;
}
