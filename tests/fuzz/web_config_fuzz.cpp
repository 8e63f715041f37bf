// --web.config.file: http::ParseWebConfig on the file's bytes (LoadDocument's bounds, yaml-cpp,
// the TLS and basic_auth_users checks). Relative file names stay relative to the working
// directory, so a name the fuzzer writes is checked with access(), never created or read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto result = diskprobe::http::ParseWebConfig(text, "web.yml", "");
  if ((result.config == nullptr) == result.errors.empty()) __builtin_trap();
  if (result.config != nullptr)
    for (const auto& [user, hash] : result.config->users) (void)diskprobe::http::IsBcryptHash(hash);
  return 0;
}
