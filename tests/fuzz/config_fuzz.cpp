// The configuration file path: config::LoadString is what --config.file and SIGHUP run on the
// file's bytes (bounds of LoadDocument, yaml-cpp, every key's checks, CompilePattern's regexes).
// The scalar parsers every duration and size key goes through also get the whole input, with
// their contract checked: a duration is never negative, whatever the digits.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto d = diskprobe::config::ParseDuration(text); d && d->count() < 0) __builtin_trap();
  (void)diskprobe::config::ParseSize(text);
  const auto result = diskprobe::config::LoadString(text, "fuzz.yml");
  // Either a configuration or errors, never both or neither.
  if ((result.config == nullptr) == result.errors.empty()) __builtin_trap();
  if (result.config != nullptr) {
    // The accessors the probes and the device registry call on a loaded configuration.
    (void)result.config->devices.Selects("mmcblk0");
    (void)result.config->probes.For("mmcblk0");
    (void)result.config->probes.WriteDirectories();
  }
  return 0;
}
