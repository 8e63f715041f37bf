// The card registers in sysfs: cid, csd, scr, ssr (hex) for SD and MMC layouts, the Pi 5
// bootloader's CID line, life_time and pre_eol_info. Every decoder gets the same input: each
// rejects what is not its shape, which is itself what is tested.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "parsers/mmc_registers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace diskprobe::parsers;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto bytes = HexToBytes(text)) (void)Crc7(bytes->data(), bytes->size());
  for (const CardLayout layout : {CardLayout::kSd, CardLayout::kMmc}) {
    if (const auto cid = DecodeCid(text, layout)) {
      (void)CidSuspicions(*cid);
      (void)LookupManufacturer(layout, cid->manfid);
    }
    if (size > 0) (void)DecodeCid(text, layout, data[0] % 10);
    (void)DecodeCsd(text, layout);
  }
  if (const auto line = RealignPi5BootloaderCid(text)) (void)DecodeCid(*line, CardLayout::kSd);
  (void)DecodeScr(text);
  if (const auto ssr = DecodeSsr(text)) {
    (void)ssr->SpeedClass();
    (void)Ssr::AuSizeBytes(ssr->au_size);
    (void)Ssr::AuSizeBytes(ssr->uhs_au_size);
  }
  (void)ParseLifeTime(text);
  if (const auto eol = ParsePreEolInfo(text)) (void)ToString(eol->state);
  if (size > 0) {
    (void)DecodeLifeTimeEstimate(data[0]);
    (void)ToString(DecodePreEolInfo(data[0]).state);
  }
  return 0;
}
