// Decoders for the SD/MMC card registers the kernel exposes in
// /sys/bus/mmc/devices/<card>/{cid,csd,scr,ssr,life_time,pre_eol_info}.
//
// Input shapes (kernel drivers/mmc/core/{sd,mmc,bus}.c sysfs attributes):
//   cid, csd: 4 x "%08x" = 32 hex digits, scr: 2 x "%08x" = 16 hex digits,
//   ssr: 16 x "%08x" = 128 hex digits, all followed by "\n".
// Hex input may contain whitespace between words and "0x" word prefixes
// (the Pi 5 bootloader prints "SCR: 0x02458083 0x00000000").
// Registers that are all 0x00 or all 0xFF, or have the wrong length, are
// rejected with a reason (a card that did not answer, or a broken host).
// Nothing here throws; nothing here does I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "parsers/parse_result.h"

namespace diskprobe::parsers {

// Which CID/CSD layout applies. SD and (e)MMC share the 128-bit size but not
// the field positions or the manufacturer ID space.
enum class CardLayout { kSd, kMmc };

// Hex text -> bytes, most significant byte first. Whitespace and "0x"/"0X"
// word prefixes are skipped. Errors: non-hex character, odd digit count.
ParseResult<std::vector<std::uint8_t>> HexToBytes(std::string_view text);

// CRC7 (x^7 + x^3 + 1) over `bytes`, as in SD Physical Layer Simplified
// Specification section 4.5. Returns the 7-bit value (0..0x7f).
std::uint8_t Crc7(const std::uint8_t* bytes, std::size_t n);

// ---------------------------------------------------------------- CID ----

// Card IDentification register.
// SD:  Physical Layer Simplified Spec section 5.2; kernel sd.c mmc_decode_cid.
// MMC: JESD84-B51 section 7.2; kernel mmc.c mmc_decode_cid (CSD SPEC_VERS >= 2
//      layout only: MMC 1.x cards with 24-bit MID are not supported).
struct Cid {
  CardLayout layout = CardLayout::kSd;
  std::uint8_t manfid = 0;              // MID
  std::uint16_t oemid = 0;              // OID: 16 bits on SD, 8 bits on MMC
  // What the kernel's sysfs `oemid` shows ("0x%04x"): on SD the 16-bit OID; on MMC bits
  // [119:104], i.e. (reserved bits, CBX) << 8 | OID. mmc.c decodes 16 bits there; an 8-bit
  // change ("Capture correct oemid-bits for eMMC cards", lore 20230927071500.1791882-1-
  // avri.altman@wdc.com, also in stable) was reverted in 2023-11 (lore 20231103004220.1666641-1-
  // asmadeus@codewreck.org) because it broke the quirk tables: only kernels released between the
  // two show 8 bits.
  std::uint16_t oemid_sysfs = 0;
  std::string oemid_text;               // OID as ASCII when every byte is printable, else ""
  std::string name;                     // PNM raw: 5 chars SD, 6 chars MMC (trailing pad kept)
  std::uint8_t prv = 0;                 // PRV raw byte, BCD n.m
  unsigned prv_major = 0;               // n (kernel sysfs: hwrev on SD)
  unsigned prv_minor = 0;               // m (kernel sysfs: fwrev on SD)
  std::uint32_t serial = 0;             // PSN
  unsigned year = 0;                    // MDT year, see DecodeCid for the rules
  unsigned month = 0;                   // MDT month 1..12 (0 or >12 means garbage)
  std::optional<std::uint8_t> mmc_cbx;  // MMC only: 0 removable, 1 BGA, 2 POP
  std::uint8_t crc_byte = 0;            // last byte as given: CRC7 << 1 | 1, or 0x00
  // nullopt when the host stripped the CRC (last byte 0x00, most SDHCI hosts);
  // otherwise whether CRC7 over bytes 0..14 matches and the end bit is 1.
  std::optional<bool> crc_ok;
  bool DateValid() const { return month >= 1 && month <= 12; }
};

// Decode a CID. SD date: 8-bit year offset from 2000, 4-bit month (12 bits).
// MMC date: 4-bit year offset from 1997; like the kernel (mmc.c
// mmc_read_ext_csd, "Adjust production date as per JEDEC JESD84-B451"), when
// EXT_CSD_REV >= 5 and that year is < 2010, 16 is added (so codes 0..12 are
// 2013..2025, 13..15 stay 2010..2012). Pass ext_csd_rev (sysfs `rev` on eMMC);
// without it the 1997 base is used, as the kernel does before EXT_CSD is read.
// Errors: bad hex, length != 16 bytes, all 0x00, all 0xFF.
ParseResult<Cid> DecodeCid(std::string_view hex, CardLayout layout, std::optional<unsigned> ext_csd_rev = std::nullopt);

// The Pi 5 EEPROM bootloader logs "CID: 00<15 bytes>": the SDHCI response
// without the CRC byte and with a leading 0x00 (tests/fixtures/samples/cid/08). Returns the
// register in sysfs order (bytes 1..15 followed by 0x00 for the stripped CRC)
// as 32 lowercase hex digits. Accepts the whole log line or just the hex.
// Errors: no 32-digit hex, or first byte not 0x00 (then it is not shifted).
ParseResult<std::string> RealignPi5BootloaderCid(std::string_view line);

// Maker name for a MID. SD and MMC IDs are separate spaces (0x02, 0x03, 0x45,
// 0xfe mean different makers); IDs are assigned by SD-3C / JEDEC and no
// official public list exists, so this is best effort. Each row cites its
// source in mmc_registers.cpp. nullopt when unknown.
//
// Some MIDs are used by several brands (a contract maker's ID on white-label and branded cards
// alike, e.g. SD 0x9F "TI" on Kingston, Gigastone, Amazon, Kodak and Silicon Power cards). For
// those `shared` is true, `name` is "unknown" and `brands` lists who is documented to use it,
// unless the OEM ID pins the brand (a documented MID/OID pair, e.g. 0x02 "TM" = Toshiba): pass
// the CID's oemid to use those pairs.
struct Manufacturer {
  std::string_view name;
  std::string_view source;
  bool shared = false;
  std::string_view brands;  // shared only: the brands documented for this MID, "/"-separated
};
std::optional<Manufacturer> LookupManufacturer(CardLayout layout, std::uint8_t manfid,
                                               std::optional<std::uint16_t> oemid = std::nullopt);

// Counterfeit and white-label indicators for SD cards, after the rules in
// tests/fixtures/samples/cid/00-sd-manufacturer-id-table.txt (sbc-bench reports from thousands
// of armbianmonitor outputs, kernel quirks.h, ironsheep/P2-uSD-FS card notes):
//   - OEM "42" with MID != 0x41; MID 0x00, 0x12 or 0xfe;
//   - a placeholder product name: "00000", "ASTC", "SMI", or "AS" on MID 0x03 (SanDisk names
//     are "S", capacity, "G");
//   - product revision 0.0 (PRV 0x00, a field white-label makers leave unprogrammed);
//   - serial number 0 (PSN 0x00000000);
//   - a manufacturing date that is no date: month 0 or above 12.
// One string per indicator, with its source. Not a verdict: reported as a count next to the
// raw IDs. Always empty for MMC.
std::vector<std::string> CidSuspicions(const Cid& cid);

// ---------------------------------------------------------------- CSD ----

// Card-Specific Data. SD: Physical Layer Simplified Spec section 5.3
// (5.3.2 CSD v1.0, 5.3.3 CSD v2.0, 5.3.4 CSD v3.0 / SDUC); kernel sd.c
// mmc_decode_csd. MMC: JESD84-B51 section 7.3; kernel mmc.c mmc_decode_csd.
struct Csd {
  CardLayout layout = CardLayout::kSd;
  unsigned csd_structure = 0;         // SD: 0=v1, 1=v2 (SDHC/SDXC), 2=v3 (SDUC)
  std::optional<unsigned> spec_vers;  // MMC only (SPEC_VERS, 4 = MMC 4.x+)
  std::uint8_t taac = 0;
  std::uint8_t nsac = 0;
  std::uint8_t tran_speed = 0;              // raw TRAN_SPEED byte
  std::optional<std::uint64_t> max_dtr_hz;  // decoded TRAN_SPEED, as kernel max_dtr
  std::uint16_t ccc = 0;                    // card command classes bitmap
  unsigned read_bl_len = 0;                 // log2 of max read block length
  std::uint32_t c_size = 0;
  std::optional<unsigned> c_size_mult;  // v1 SD and MMC only
  // Capacity in bytes. nullopt on MMC when C_SIZE == 0xFFF (a >2 GiB
  // sector-addressed device: the size is EXT_CSD SEC_COUNT, not in the CSD).
  std::optional<std::uint64_t> capacity_bytes;
};

// Errors: bad hex, length != 16, all 0x00/0xFF, SD CSD_STRUCTURE 3 (reserved).
ParseResult<Csd> DecodeCsd(std::string_view hex, CardLayout layout);

// ---------------------------------------------------------------- SCR ----

// SD Configuration Register (SD only). Physical Layer Simplified Spec
// section 5.6, table "Physical Layer Specification Version" for the version.
struct Scr {
  unsigned scr_structure = 0;
  unsigned sd_spec = 0;
  bool data_stat_after_erase = false;
  unsigned sd_security = 0;    // 0 none, 2 SDSC 1.01, 3 SDHC 2.00, 4 SDXC 3.xx
  unsigned sd_bus_widths = 0;  // bit0 1-bit, bit2 4-bit
  bool sd_spec3 = false;
  unsigned ex_security = 0;
  bool sd_spec4 = false;
  unsigned sd_specx = 0;
  unsigned cmd_support = 0;  // bit0 CMD20, bit1 CMD23, bit2 CMD48/49, bit3 CMD58/59
  std::uint32_t manufacturer_reserved = 0;
  // Physical layer version from (SD_SPEC, SD_SPEC3, SD_SPEC4, SD_SPECX):
  // "1.0x", "1.10", "2.00", "3.0x", "4.xx", "5.xx" .. "9.xx"; nullopt for a
  // combination the table does not define.
  std::optional<std::string> spec_version;
  std::optional<unsigned> spec_major;  // 1..9
  bool BusWidth1Bit() const { return (sd_bus_widths & 0x1) != 0; }
  bool BusWidth4Bit() const { return (sd_bus_widths & 0x4) != 0; }
};

// Errors: bad hex, length != 8 bytes, all 0x00/0xFF, SCR_STRUCTURE != 0.
ParseResult<Scr> DecodeScr(std::string_view hex);

// ---------------------------------------------------------------- SSR ----

// SD Status (512 bits, ACMD13). Physical Layer Simplified Spec section 4.10.2
// (tables "SD Status", "Speed Class Code Field", "AU_SIZE Field",
// "UHS_SPEED_GRADE", "Video Speed Class", "APP_PERF_CLASS").
struct Ssr {
  unsigned dat_bus_width = 0;  // bus width when ACMD13 ran (0 = 1-bit, 2 = 4-bit)
  bool secured_mode = false;
  std::uint16_t sd_card_type = 0;
  std::uint32_t size_of_protected_area = 0;
  unsigned speed_class_raw = 0;   // SPEED_CLASS code
  unsigned performance_move = 0;  // MB/s
  unsigned au_size = 0;           // code
  unsigned erase_size = 0;
  unsigned erase_timeout = 0;
  unsigned erase_offset = 0;
  unsigned uhs_speed_grade = 0;    // 0 none, 1 U1, 3 U3
  unsigned uhs_au_size = 0;        // code, same table as AU_SIZE
  unsigned video_speed_class = 0;  // 0, 6, 10, 30, 60, 90 (V6..V90)
  unsigned vsc_au_size = 0;        // MB
  std::uint32_t sus_addr = 0;
  unsigned app_perf_class = 0;  // 0 none, 1 A1, 2 A2
  unsigned performance_enhance = 0;
  bool discard_support = false;
  bool fule_support = false;

  // Speed class as marketed (0, 2, 4, 6, 10); nullopt for a reserved code.
  std::optional<unsigned> SpeedClass() const;
  // AU size in bytes from the AU_SIZE/UHS_AU_SIZE code; nullopt for 0 (undefined).
  static std::optional<std::uint64_t> AuSizeBytes(unsigned code);
};

// Errors: bad hex, length != 64 bytes, all 0x00/0xFF.
ParseResult<Ssr> DecodeSsr(std::string_view hex);

// ------------------------------------------------------ eMMC wear/EOL ----

// One DEVICE_LIFE_TIME_EST_TYP_A/B value (JESD84-B51 section 7.4.53/7.4.54,
// EXT_CSD[268]/[269]): 0x01..0x0A = 0-10% .. 90-100% of life used,
// 0x0B = exceeded, 0x00 = not defined (not "0 % used").
struct LifeTimeEstimate {
  enum class State { kNotDefined, kUsed, kExceeded, kReserved };
  std::uint8_t raw = 0;
  State state = State::kNotDefined;
  std::optional<unsigned> used_percent_min;  // State::kUsed: 0,10..90; State::kExceeded: 100
  std::optional<unsigned> used_percent_max;  // State::kUsed only: 10..100
};
LifeTimeEstimate DecodeLifeTimeEstimate(std::uint8_t raw);

struct LifeTime {
  LifeTimeEstimate type_a;  // SLC / pseudo-SLC area
  LifeTimeEstimate type_b;  // MLC area
};
// sysfs `life_time` (kernel mmc.c: "0x%02x 0x%02x\n", type A then type B).
// Errors: not exactly two hex bytes.
ParseResult<LifeTime> ParseLifeTime(std::string_view text);

// PRE_EOL_INFO (JESD84-B51 section 7.4.55, EXT_CSD[267]): reserved blocks
// consumed; 0x01 normal, 0x02 warning (80 %), 0x03 urgent (90 %).
enum class PreEolInfo { kNotDefined, kNormal, kWarning, kUrgent, kReserved };
struct PreEol {
  std::uint8_t raw = 0;
  PreEolInfo state = PreEolInfo::kNotDefined;
};
PreEol DecodePreEolInfo(std::uint8_t raw);
// sysfs `pre_eol_info` ("0x%02x\n"). Errors: not one hex byte.
ParseResult<PreEol> ParsePreEolInfo(std::string_view text);
std::string_view ToString(PreEolInfo state);

}  // namespace diskprobe::parsers
