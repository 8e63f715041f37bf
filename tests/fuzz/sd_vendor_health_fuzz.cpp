// SD vendor health replies (ParseSdVendorReply) and the progress check between two accepted ones
// (CheckSdVendorProgress). The first byte picks the layout (modulo the number of layouts); the
// next 512 bytes are the CMD56 reply and the 512 after them a later reply of the same card
// (short inputs are padded with zeros, as a short read is never passed on). Traps when a
// contract of parsers/sd_vendor_health.h is broken: a decoded reply of another layout, a
// rejection without one of the header's reasons, or a reply that fails the progress check
// against itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/sd_vendor_health.h"

namespace {

using namespace diskprobe::parsers;

bool KnownReason(std::string_view r) {
  return r == kSdRejectAllZero || r == kSdRejectAllOnes || r == kSdRejectConstant || r == kSdRejectSignature ||
         r == kSdRejectRange;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto layouts = SdVendorLayouts();
  const SdVendorLayoutInfo& info = layouts[data[0] % layouts.size()];
  if (FindSdVendorLayout(info.name) != &info || &InfoOf(info.layout) != &info) __builtin_trap();
  ++data;
  --size;
  SdGenCmdBlock first{}, second{};
  std::copy_n(data, std::min(size, first.size()), first.begin());
  if (size > first.size()) std::copy_n(data + first.size(), std::min(size - first.size(), second.size()), second.begin());

  SdReject reject;
  const auto a = ParseSdVendorReply(info.layout, first, &reject);
  if (!a) {
    if (!KnownReason(reject.reason)) __builtin_trap();
    return 0;
  }
  if (a->layout != info.layout) __builtin_trap();
  if (CheckSdVendorProgress(*a, *a)) __builtin_trap();  // a reply is never "backwards" of itself
  SdReject reject2;
  if (const auto b = ParseSdVendorReply(info.layout, second, &reject2)) {
    if (const auto back = CheckSdVendorProgress(*a, *b); back && back->reason != kSdRejectBackwards) __builtin_trap();
  } else if (!KnownReason(reject2.reason)) {
    __builtin_trap();
  }
  return 0;
}
