// /sys/fs/ext4/<dev>/ error attributes. Each single-file parser gets the whole input; then the
// input split at NUL bytes gives the files of kExt4ErrorAttributes in order (fewer pieces: the
// later files are missing) for ParseExt4Errors.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "parsers/ext4_sysfs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)ParseExt4Counter(text);
  (void)ParseExt4Time(text);
  (void)ParseExt4String(text);
  if (const auto code = ParseExt4Counter(text)) (void)Ext4ErrcodeName(static_cast<unsigned>(*code));
  std::map<std::string, std::string, std::less<>> files;
  for (const std::string_view name : kExt4ErrorAttributes) {
    const auto nul = text.find('\0');
    files.emplace(std::string(name), std::string(text.substr(0, nul)));
    if (nul == std::string_view::npos) break;
    text.remove_prefix(nul + 1);
  }
  (void)ParseExt4Errors(files);
  return 0;
}
