#pragma once
// mmc_card: identity, capacity, class and wear of the SD card or eMMC behind each mmcblkN.
//
// Sources: <sysfs>/block/mmcblkN/device/ (kernel drivers/mmc/core/{sd,mmc,bus}.c attributes):
//   type (SD, MMC), cid, csd, scr, ssr (SD), rev (eMMC EXT_CSD_REV), fwrev, manfid, oemid,
//   life_time and pre_eol_info (eMMC 5.0+), and <sysfs>/block/mmcblkN/size for the capacity
//   cross-check. manfid, oemid, fwrev and rev are reported as sysfs shows them:
//     fwrev  SD: CID PRV minor nibble, "0x%x". eMMC: EXT_CSD_REV < 7 (before eMMC 5.0) the CID
//            field ("0x%x"; 0 for MMC 2.0+ CIDs, which have none), else the 8-byte EXT_CSD
//            FIRMWARE_VERSION as 16 hex digits ("0x%*phN": "0x0300000000000000").
//     rev    eMMC only: EXT_CSD_REV ("0x%x": 0x8 = eMMC 5.1), the register layout, not firmware.
//     oemid  "0x%04x": SD the 2-character OID; eMMC CID bits [119:104] (CBX and OID).
//     manfid "0x%06x".
//   When an attribute is missing they are derived from the CID in the same format.
//   Decoding: parsers/mmc_registers.h (SD Physical Layer Simplified Spec, JESD84-B51).
// Only whole cards (mmcblkN) are read; the boot and RPMB areas (mmcblkNbootM, mmcblkNrpmb) are the
// same card. The registers are read by the kernel when the card is initialised and cannot change
// without a new card, so they are cached per device: each scrape reads only `cid`, and everything
// is read again when the CID differs (another card) or after kFactsMaxAge.
// A register that is implausible (all 0x00 / 0xFF, wrong length, a CSD capacity that contradicts
// the block device size, a reserved life time code) is not reported; it is counted once per card
// read in which it turns implausible, by register, and logged. A different CID on the same device
// while running is counted as a card swap and logged.
#include <chrono>
#include <map>
#include <set>

#include "scrape/collector.h"
#include "parsers/mmc_registers.h"

namespace diskprobe::collectors {

class MmcCardCollector : public Collector {
 public:
  static constexpr std::chrono::seconds kFactsMaxAge{300};

  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override;

  struct Card {
    std::string cid_raw;  // trimmed sysfs cid: the cache key
    std::string type;     // sysfs type: "SD", "MMC"
    std::string fwrev;        // sysfs fwrev as shown
    std::string ext_csd_rev;  // sysfs rev as shown (eMMC), "" on SD
    std::string manfid;       // sysfs manfid as shown, else from the CID
    std::string oemid;        // sysfs oemid as shown, else from the CID
    std::optional<parsers::Cid> cid;
    std::optional<parsers::Csd> csd;
    std::optional<parsers::Scr> scr;
    std::optional<parsers::Ssr> ssr;
    std::optional<parsers::LifeTime> life_time;
    std::optional<parsers::PreEol> pre_eol;
    std::vector<std::string> suspicions;
    std::map<std::string, std::string> rejected;  // register -> why
    std::chrono::steady_clock::time_point read_at;
  };

 private:
  struct DeviceState {
    Card card;
    bool have_card = false;
    double swaps = 0;
    std::map<std::string, double> rejected_total;  // by register
  };
  std::map<std::string, DeviceState> devices_;  // kept when a device vanishes, to see a swap
};

}  // namespace diskprobe::collectors
