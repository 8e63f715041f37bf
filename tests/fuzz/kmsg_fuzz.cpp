// The kernel log: a /dev/kmsg record (ParseKmsgRecord), its message classified (ClassifyKmsg) and
// its DEVICE= property (ParseKmsgDevice); each line of the input classified as a dmesg line would
// be; the helpers the follower maps devices with (DiskOfPartition, JournalDevice).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/kmsg.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto r = ParseKmsgRecord(text)) {
    if (const auto e = ClassifyKmsg(r->message)) {
      (void)ToString(e->kind);
      (void)DiskOfPartition(e->device);
    }
    if (const auto dev = r->Property("DEVICE")) (void)ParseKmsgDevice(*dev);
  }
  (void)DecodeKmsgEscapes(text);
  (void)ParseKmsgDevice(text);
  (void)DiskOfPartition(text);
  (void)JournalDevice(text);
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (const auto e = ClassifyKmsg(text.substr(0, nl)); e && !e->device.empty() && !e->host.empty())
      __builtin_trap();  // at most one of device and host
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return 0;
}
