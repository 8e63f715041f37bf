#include "parsers/mmc_registers.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

#include "util/strings.h"

namespace diskprobe::parsers {

namespace {

constexpr std::string_view kMmcUtils = "mmc-utils lsmmc.c (sd_database/mmc_database)";
constexpr std::string_view kSbcBench = "sbc-bench results/SD-cards-with-low-serial-numbers.md";

constexpr std::string_view kIronsheep = "ironsheep/P2-uSD-FS DOCs/cards (card register notes)";

struct ManufacturerRow {
  std::uint8_t id;
  std::string_view name;
  std::string_view source;
  // Shared MIDs: the brands documented for the ID; `name` then applies only with `pin_oemid`.
  std::string_view shared_brands = {};
  std::optional<std::uint16_t> pin_oemid = std::nullopt;
};

// SD card MIDs (SD-3C assignments, no official public list). Rows and their
// disagreements are collected in tests/fixtures/samples/cid/00-sd-manufacturer-id-table.txt.
constexpr std::array<ManufacturerRow, 24> kSdManufacturers{{
    {0x01, "Panasonic", kMmcUtils},
    {0x02, "Toshiba", "mmc-utils lsmmc.c (\"Toshiba/Kingston/Viking\"); sbc-bench (genuine Toshiba: OEM \"TM\")",
     "Toshiba/Kingston/Viking", 0x544d},
    {0x03, "SanDisk", "kernel card.h CID_MANFID_SANDISK_SD; mmc-utils lsmmc.c"},
    {0x08, "Silicon Power", kMmcUtils},
    {0x12, "Gigastone", "kernel card.h CID_MANFID_GIGASTONE (sbc-bench: common counterfeit MID)"},
    {0x18, "Infineon", kMmcUtils},
    {0x1b, "Samsung", "kernel card.h CID_MANFID_SAMSUNG_SD; mmc-utils (\"Transcend/Samsung\")"},
    {0x1c, "Transcend", kMmcUtils},
    {0x1d, "ADATA", "mmc-utils lsmmc.c (\"Corsair/AData\"); sbc-bench (ADATA: OEM \"AD\")", "ADATA/Corsair", 0x4144},
    {0x1e, "Transcend", kMmcUtils},
    {0x1f, "Kingston", kMmcUtils},
    {0x27, "Phison", "sbc-bench (OEM \"PH\", many brands); mmc-utils (\"Delkin/Phison\")"},
    {0x28, "Lexar", kMmcUtils},
    {0x30, "SanDisk", kMmcUtils},
    {0x31, "Silicon Power", "mmc-utils lsmmc.c; sbc-bench (OEM \"SP\")"},
    {0x33, "STMicroelectronics", kMmcUtils},
    {0x41, "Kingston", "mmc-utils lsmmc.c; kernel quirks.h (SD16G/SD32G/SD64G, OEM 0x3432)"},
    {0x5d, "Swissbit", "kernel card.h CID_MANFID_SWISSBIT"},
    {0x6f, "STMicroelectronics", "mmc-utils lsmmc.c (sbc-bench: OEM 0x0013 \"SMI\" counterfeit pattern)"},
    {0x74, "Transcend", "mmc-utils lsmmc.c; usbsdmux CID decoder"},
    {0x76, "Patriot", kMmcUtils},
    {0x82, "Sony", "mmc-utils lsmmc.c (\"Gobe/Sony\")", "Sony/Gobe"},
    {0x9c, "Angelbird/Hoodman", "cameramemoryspeed.com-derived tables (OEM \"SO\"); not in mmc-utils or kernel"},
    // The kernel names 0x9F CID_MANFID_KINGSTON_SD (a Kingston Canvas SD64G carries it), but the same
    // MID and OEM "TI" are on Gigastone, Amazon, Kodak, Micro Center and Silicon Power cards and on
    // "00000"-named white-label cards: the OEM ID does not tell them apart.
    {0x9f, "Kingston",
     "kernel card.h CID_MANFID_KINGSTON_SD; ironsheep/P2-uSD-FS (shared OEM); sbc-bench (\"00000\"/\"ASTC\" cards)",
     "Kingston/Gigastone/Amazon/Kodak/Micro Center/Silicon Power"},
}};

// eMMC MIDs (JEDEC JEP106-independent CID space).
constexpr std::array<ManufacturerRow, 12> kMmcManufacturers{{
    {0x02, "SanDisk", "kernel card.h CID_MANFID_SANDISK; mmc-utils (\"Kingston/SanDisk\")"},
    {0x09, "ATP", "kernel card.h CID_MANFID_ATP"},
    {0x11, "Toshiba", "kernel card.h CID_MANFID_TOSHIBA; mmc-utils lsmmc.c"},
    {0x13, "Micron", "kernel card.h CID_MANFID_MICRON; mmc-utils lsmmc.c"},
    {0x15, "Samsung", "kernel card.h CID_MANFID_SAMSUNG; mmc-utils (\"Samsung/SanDisk/LG\")"},
    {0x2c, "Kingston", kMmcUtils},
    {0x37, "KingMax", kMmcUtils},
    {0x44, "ATP", kMmcUtils},
    {0x45, "SanDisk", "kernel card.h CID_MANFID_SANDISK_MMC; mmc-utils lsmmc.c"},
    {0x70, "Kingston", "kernel card.h CID_MANFID_KINGSTON; mmc-utils lsmmc.c"},
    {0x90, "SK Hynix", "kernel card.h CID_MANFID_HYNIX"},
    {0xfe, "Micron/Numonyx", "kernel card.h CID_MANFID_NUMONYX; mmc-utils (\"Micron\")"},
}};

// Bits [hi:lo] of a big-endian register, numbered as in the specs (bit 0 is
// the least significant bit of the last byte).
std::uint64_t Bits(const std::vector<std::uint8_t>& reg, unsigned hi, unsigned lo) {
  const unsigned total = static_cast<unsigned>(reg.size()) * 8;
  std::uint64_t v = 0;
  for (unsigned i = hi + 1; i-- > lo;) {
    const unsigned byte = (total - 1 - i) / 8;
    v = (v << 1) | ((reg[byte] >> (i % 8)) & 1u);
  }
  return v;
}

ParseResult<std::vector<std::uint8_t>> RegisterBytes(std::string_view hex, std::size_t want, std::string_view what) {
  auto bytes = HexToBytes(hex);
  if (!bytes) return ParseResult<std::vector<std::uint8_t>>::Fail(std::string(what) + ": " + bytes.error);
  const auto& b = *bytes.value;
  if (b.size() != want) {
    return ParseResult<std::vector<std::uint8_t>>::Fail(std::string(what) + ": expected " + std::to_string(want * 2) +
                                                        " hex digits, got " + std::to_string(b.size() * 2));
  }
  if (std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0x00; }))
    return ParseResult<std::vector<std::uint8_t>>::Fail(std::string(what) + ": all zero");
  if (std::all_of(b.begin(), b.end(), [](std::uint8_t x) { return x == 0xff; }))
    return ParseResult<std::vector<std::uint8_t>>::Fail(std::string(what) + ": all 0xFF");
  return bytes;
}

bool IsPrintable(std::uint8_t c) { return c >= 0x20 && c <= 0x7e; }

// "0x1f" or "1f" (one byte). nullopt otherwise.
std::optional<std::uint8_t> ParseHexByte(std::string_view s) {
  s = util::StripHexPrefix(s);
  if (s.size() > 2) return std::nullopt;  // "0x001" is not one byte, though its value fits
  return util::ParseNumber<std::uint8_t>(s, 16);
}

}  // namespace

ParseResult<std::vector<std::uint8_t>> HexToBytes(std::string_view text) {
  std::string digits;
  digits.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    // A "0x" prefix only at the start of a word.
    const bool word_start = i == 0 || std::isspace(static_cast<unsigned char>(text[i - 1]));
    if (word_start && c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X')) {
      ++i;
      continue;
    }
    if (util::HexDigitValue(c) < 0)
      return ParseResult<std::vector<std::uint8_t>>::Fail(std::string("not a hex digit: '") + c + "'");
    digits.push_back(c);
  }
  if (digits.empty()) return ParseResult<std::vector<std::uint8_t>>::Fail("empty");
  if (digits.size() % 2 != 0)
    return ParseResult<std::vector<std::uint8_t>>::Fail("odd number of hex digits (" + std::to_string(digits.size()) +
                                                        ")");
  std::vector<std::uint8_t> out(digits.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] =
        static_cast<std::uint8_t>(util::HexDigitValue(digits[2 * i]) * 16 + util::HexDigitValue(digits[2 * i + 1]));
  return ParseResult<std::vector<std::uint8_t>>::Ok(std::move(out));
}

std::uint8_t Crc7(const std::uint8_t* bytes, std::size_t n) {
  std::uint8_t crc = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t d = bytes[i];
    for (int j = 0; j < 8; ++j) {
      crc = static_cast<std::uint8_t>(crc << 1);
      if ((d ^ crc) & 0x80) crc ^= 0x09;
      d = static_cast<std::uint8_t>(d << 1);
    }
  }
  return crc & 0x7f;
}

// ---------------------------------------------------------------- CID ----

ParseResult<Cid> DecodeCid(std::string_view hex, CardLayout layout, std::optional<unsigned> ext_csd_rev) {
  auto reg = RegisterBytes(hex, 16, "CID");
  if (!reg) return ParseResult<Cid>::Fail(reg.error);
  const auto& r = *reg.value;

  Cid c;
  c.layout = layout;
  c.manfid = static_cast<std::uint8_t>(Bits(r, 127, 120));
  std::vector<std::uint8_t> oid_bytes;
  if (layout == CardLayout::kSd) {
    c.oemid = static_cast<std::uint16_t>(Bits(r, 119, 104));
    c.oemid_sysfs = c.oemid;
    oid_bytes = {r[1], r[2]};
    for (unsigned i = 3; i <= 7; ++i) c.name.push_back(static_cast<char>(r[i]));
    c.prv = r[8];
    c.serial = static_cast<std::uint32_t>(Bits(r, 55, 24));
    c.year = 2000 + static_cast<unsigned>(Bits(r, 19, 12));
    c.month = static_cast<unsigned>(Bits(r, 11, 8));
  } else {
    c.mmc_cbx = static_cast<std::uint8_t>(Bits(r, 113, 112));
    c.oemid = static_cast<std::uint16_t>(Bits(r, 111, 104));
    c.oemid_sysfs = static_cast<std::uint16_t>(Bits(r, 119, 104));
    oid_bytes = {r[2]};
    for (unsigned i = 3; i <= 8; ++i) c.name.push_back(static_cast<char>(r[i]));
    c.prv = r[9];
    c.serial = static_cast<std::uint32_t>(Bits(r, 47, 16));
    c.month = static_cast<unsigned>(Bits(r, 15, 12));
    c.year = 1997 + static_cast<unsigned>(Bits(r, 11, 8));
    if (ext_csd_rev && *ext_csd_rev >= 5 && c.year < 2010) c.year += 16;
  }
  c.prv_major = c.prv >> 4;
  c.prv_minor = c.prv & 0x0f;
  if (std::all_of(oid_bytes.begin(), oid_bytes.end(), IsPrintable))
    c.oemid_text.assign(oid_bytes.begin(), oid_bytes.end());
  c.crc_byte = r[15];
  if (c.crc_byte != 0x00) c.crc_ok = (c.crc_byte & 1u) == 1u && (c.crc_byte >> 1) == Crc7(r.data(), 15);
  return ParseResult<Cid>::Ok(std::move(c));
}

ParseResult<std::string> RealignPi5BootloaderCid(std::string_view line) {
  if (auto pos = line.find("CID:"); pos != std::string_view::npos) line.remove_prefix(pos + 4);
  auto bytes = HexToBytes(util::Trim(line));
  if (!bytes) return ParseResult<std::string>::Fail("bootloader CID: " + bytes.error);
  const auto& b = *bytes.value;
  if (b.size() != 16) return ParseResult<std::string>::Fail("bootloader CID: expected 32 hex digits");
  if (b[0] != 0x00) return ParseResult<std::string>::Fail("bootloader CID: first byte is not 0x00, not shifted");
  std::string out;
  char buf[3];
  for (std::size_t i = 1; i < 16; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    out += buf;
  }
  out += "00";
  return ParseResult<std::string>::Ok(std::move(out));
}

std::optional<Manufacturer> LookupManufacturer(CardLayout layout, std::uint8_t manfid,
                                               std::optional<std::uint16_t> oemid) {
  auto find = [manfid, oemid](const auto& table) -> std::optional<Manufacturer> {
    for (const auto& row : table) {
      if (row.id != manfid) continue;
      if (row.shared_brands.empty() || (row.pin_oemid && oemid == row.pin_oemid))
        return Manufacturer{row.name, row.source, false, {}};
      return Manufacturer{"unknown", row.source, true, row.shared_brands};
    }
    return std::nullopt;
  };
  return layout == CardLayout::kSd ? find(kSdManufacturers) : find(kMmcManufacturers);
}

std::vector<std::string> CidSuspicions(const Cid& cid) {
  std::vector<std::string> out;
  if (cid.layout != CardLayout::kSd) return out;
  if (cid.oemid == 0x3432 && cid.manfid != 0x41)
    out.emplace_back("OEM \"42\" with MID other than 0x41 (" + std::string(kSbcBench) + ")");
  if (cid.manfid == 0x00 || cid.manfid == 0x12 || cid.manfid == 0xfe)
    out.emplace_back("MID commonly seen on counterfeit SD cards (" + std::string(kSbcBench) + ")");
  std::string name;
  for (char ch : cid.name)
    if (ch != '\0' && ch != ' ') name.push_back(ch);
  if (name == "00000" || name == "ASTC" || name == "SMI")
    out.emplace_back("placeholder product name \"" + name + "\" of white-label and counterfeit cards (" +
                     std::string(kSbcBench) + "; " + std::string(kIronsheep) + ")");
  if (name == "AS" && cid.manfid == 0x03)
    out.emplace_back("product name \"AS\" on SanDisk's MID, not a SanDisk name (" + std::string(kSbcBench) + ")");
  if (cid.prv == 0x00)
    out.emplace_back("product revision 0.0, left unprogrammed on white-label cards (" + std::string(kIronsheep) + ")");
  if (cid.serial == 0)
    out.emplace_back("serial number 0 (" + std::string(kSbcBench) + ")");
  if (!cid.DateValid())
    out.emplace_back("manufacturing month " + std::to_string(cid.month) + " is not a month (SD spec 5.2 MDT)");
  return out;
}

// ---------------------------------------------------------------- CSD ----

ParseResult<Csd> DecodeCsd(std::string_view hex, CardLayout layout) {
  auto reg = RegisterBytes(hex, 16, "CSD");
  if (!reg) return ParseResult<Csd>::Fail(reg.error);
  const auto& r = *reg.value;

  // Kernel sd.c / mmc.c tran_exp and tran_mant (exp * mant = Hz). The MMC
  // mantissas have 26 and 52 where SD has 25 and 50 (JESD84 vs SD spec 5.3.2).
  static constexpr std::array<std::uint64_t, 8> kTranExp{10000, 100000, 1000000, 10000000, 0, 0, 0, 0};
  static constexpr std::array<std::uint64_t, 16> kSdTranMant{0,  10, 12, 13, 15, 20, 25, 30,
                                                             35, 40, 45, 50, 55, 60, 70, 80};
  static constexpr std::array<std::uint64_t, 16> kMmcTranMant{0,  10, 12, 13, 15, 20, 26, 30,
                                                              35, 40, 45, 52, 55, 60, 70, 80};
  const auto& kTranMant = layout == CardLayout::kSd ? kSdTranMant : kMmcTranMant;
  Csd c;
  c.layout = layout;
  c.csd_structure = static_cast<unsigned>(Bits(r, 127, 126));
  c.taac = r[1];
  c.nsac = r[2];
  c.tran_speed = r[3];
  const std::uint64_t dtr = kTranExp[c.tran_speed & 0x7] * kTranMant[(c.tran_speed >> 3) & 0xf];
  if (dtr != 0) c.max_dtr_hz = dtr;
  c.ccc = static_cast<std::uint16_t>(Bits(r, 95, 84));
  c.read_bl_len = static_cast<unsigned>(Bits(r, 83, 80));

  auto v1_capacity = [&]() {
    c.c_size = static_cast<std::uint32_t>(Bits(r, 73, 62));
    c.c_size_mult = static_cast<unsigned>(Bits(r, 49, 47));
    c.capacity_bytes = (std::uint64_t{c.c_size} + 1) << (*c.c_size_mult + 2 + c.read_bl_len);
  };

  if (layout == CardLayout::kSd) {
    switch (c.csd_structure) {
      case 0: v1_capacity(); break;
      case 1:
        c.c_size = static_cast<std::uint32_t>(Bits(r, 69, 48));
        c.capacity_bytes = (std::uint64_t{c.c_size} + 1) * 512 * 1024;
        break;
      case 2:
        c.c_size = static_cast<std::uint32_t>(Bits(r, 75, 48));
        c.capacity_bytes = (std::uint64_t{c.c_size} + 1) * 512 * 1024;
        break;
      default: return ParseResult<Csd>::Fail("CSD: reserved CSD_STRUCTURE 3");
    }
  } else {
    c.spec_vers = static_cast<unsigned>(Bits(r, 125, 122));
    v1_capacity();
    if (c.c_size == 0xfff) c.capacity_bytes.reset();
  }
  return ParseResult<Csd>::Ok(std::move(c));
}

// ---------------------------------------------------------------- SCR ----

ParseResult<Scr> DecodeScr(std::string_view hex) {
  auto reg = RegisterBytes(hex, 8, "SCR");
  if (!reg) return ParseResult<Scr>::Fail(reg.error);
  const auto& r = *reg.value;
  Scr s;
  s.scr_structure = static_cast<unsigned>(Bits(r, 63, 60));
  if (s.scr_structure != 0)
    return ParseResult<Scr>::Fail("SCR: unknown SCR_STRUCTURE " + std::to_string(s.scr_structure));
  s.sd_spec = static_cast<unsigned>(Bits(r, 59, 56));
  s.data_stat_after_erase = Bits(r, 55, 55) != 0;
  s.sd_security = static_cast<unsigned>(Bits(r, 54, 52));
  s.sd_bus_widths = static_cast<unsigned>(Bits(r, 51, 48));
  s.sd_spec3 = Bits(r, 47, 47) != 0;
  s.ex_security = static_cast<unsigned>(Bits(r, 46, 43));
  s.sd_spec4 = Bits(r, 42, 42) != 0;
  s.sd_specx = static_cast<unsigned>(Bits(r, 41, 38));
  s.cmd_support = static_cast<unsigned>(Bits(r, 35, 32));
  s.manufacturer_reserved = static_cast<std::uint32_t>(Bits(r, 31, 0));

  auto set = [&s](unsigned major, const char* text) {
    s.spec_major = major;
    s.spec_version = text;
  };
  // Table "Physical Layer Specification Version" (Simplified Spec 9.x, 5.6).
  if (s.sd_spec == 0 && !s.sd_spec3 && !s.sd_spec4 && s.sd_specx == 0) set(1, "1.0x");
  else if (s.sd_spec == 1 && !s.sd_spec3 && !s.sd_spec4 && s.sd_specx == 0) set(1, "1.10");
  else if (s.sd_spec == 2 && !s.sd_spec3 && !s.sd_spec4 && s.sd_specx == 0) set(2, "2.00");
  else if (s.sd_spec == 2 && s.sd_spec3 && !s.sd_spec4 && s.sd_specx == 0) set(3, "3.0x");
  else if (s.sd_spec == 2 && s.sd_spec3 && s.sd_spec4 && s.sd_specx == 0) set(4, "4.xx");
  else if (s.sd_spec == 2 && s.sd_spec3 && s.sd_specx >= 1 && s.sd_specx <= 5) {
    static constexpr std::array<const char*, 5> kText{"5.xx", "6.xx", "7.xx", "8.xx", "9.xx"};
    set(4 + s.sd_specx, kText[s.sd_specx - 1]);
  }
  return ParseResult<Scr>::Ok(std::move(s));
}

// ---------------------------------------------------------------- SSR ----

std::optional<unsigned> Ssr::SpeedClass() const {
  switch (speed_class_raw) {
    case 0: return 0u;
    case 1: return 2u;
    case 2: return 4u;
    case 3: return 6u;
    case 4: return 10u;
    default: return std::nullopt;
  }
}

std::optional<std::uint64_t> Ssr::AuSizeBytes(unsigned code) {
  static constexpr std::array<std::uint64_t, 16> kKiB{0,    16,   32,   64,    128,   256,   512,   1024,
                                                      2048, 4096, 8192, 12288, 16384, 24576, 32768, 65536};
  if (code == 0 || code >= kKiB.size()) return std::nullopt;
  return kKiB[code] * 1024;
}

ParseResult<Ssr> DecodeSsr(std::string_view hex) {
  auto reg = RegisterBytes(hex, 64, "SSR");
  if (!reg) return ParseResult<Ssr>::Fail(reg.error);
  const auto& r = *reg.value;
  Ssr s;
  s.dat_bus_width = static_cast<unsigned>(Bits(r, 511, 510));
  s.secured_mode = Bits(r, 509, 509) != 0;
  s.sd_card_type = static_cast<std::uint16_t>(Bits(r, 495, 480));
  s.size_of_protected_area = static_cast<std::uint32_t>(Bits(r, 479, 448));
  s.speed_class_raw = static_cast<unsigned>(Bits(r, 447, 440));
  s.performance_move = static_cast<unsigned>(Bits(r, 439, 432));
  s.au_size = static_cast<unsigned>(Bits(r, 431, 428));
  s.erase_size = static_cast<unsigned>(Bits(r, 423, 408));
  s.erase_timeout = static_cast<unsigned>(Bits(r, 407, 402));
  s.erase_offset = static_cast<unsigned>(Bits(r, 401, 400));
  s.uhs_speed_grade = static_cast<unsigned>(Bits(r, 399, 396));
  s.uhs_au_size = static_cast<unsigned>(Bits(r, 395, 392));
  s.video_speed_class = static_cast<unsigned>(Bits(r, 391, 384));
  s.vsc_au_size = static_cast<unsigned>(Bits(r, 377, 368));
  s.sus_addr = static_cast<std::uint32_t>(Bits(r, 367, 346));
  s.app_perf_class = static_cast<unsigned>(Bits(r, 339, 336));
  s.performance_enhance = static_cast<unsigned>(Bits(r, 335, 328));
  s.discard_support = Bits(r, 313, 313) != 0;
  s.fule_support = Bits(r, 312, 312) != 0;
  return ParseResult<Ssr>::Ok(std::move(s));
}

// ------------------------------------------------------ eMMC wear/EOL ----

LifeTimeEstimate DecodeLifeTimeEstimate(std::uint8_t raw) {
  LifeTimeEstimate e;
  e.raw = raw;
  if (raw == 0x00) {
    e.state = LifeTimeEstimate::State::kNotDefined;
  } else if (raw <= 0x0a) {
    e.state = LifeTimeEstimate::State::kUsed;
    e.used_percent_min = (raw - 1u) * 10u;
    e.used_percent_max = raw * 10u;
  } else if (raw == 0x0b) {
    e.state = LifeTimeEstimate::State::kExceeded;
    e.used_percent_min = 100u;
  } else {
    e.state = LifeTimeEstimate::State::kReserved;
  }
  return e;
}

ParseResult<LifeTime> ParseLifeTime(std::string_view text) {
  text = util::Trim(text);
  const auto sp = text.find_first_of(" \t");
  if (sp == std::string_view::npos) return ParseResult<LifeTime>::Fail("life_time: expected two values");
  auto a = ParseHexByte(util::Trim(text.substr(0, sp)));
  auto b = ParseHexByte(util::Trim(text.substr(sp)));
  if (!a || !b) return ParseResult<LifeTime>::Fail("life_time: expected two hex bytes like \"0x01 0x02\"");
  return ParseResult<LifeTime>::Ok(LifeTime{DecodeLifeTimeEstimate(*a), DecodeLifeTimeEstimate(*b)});
}

PreEol DecodePreEolInfo(std::uint8_t raw) {
  PreEol p;
  p.raw = raw;
  switch (raw) {
    case 0x00: p.state = PreEolInfo::kNotDefined; break;
    case 0x01: p.state = PreEolInfo::kNormal; break;
    case 0x02: p.state = PreEolInfo::kWarning; break;
    case 0x03: p.state = PreEolInfo::kUrgent; break;
    default: p.state = PreEolInfo::kReserved; break;
  }
  return p;
}

ParseResult<PreEol> ParsePreEolInfo(std::string_view text) {
  auto v = ParseHexByte(util::Trim(text));
  if (!v) return ParseResult<PreEol>::Fail("pre_eol_info: expected one hex byte like \"0x01\"");
  return ParseResult<PreEol>::Ok(DecodePreEolInfo(*v));
}

std::string_view ToString(PreEolInfo state) {
  switch (state) {
    case PreEolInfo::kNotDefined: return "not_defined";
    case PreEolInfo::kNormal: return "normal";
    case PreEolInfo::kWarning: return "warning";
    case PreEolInfo::kUrgent: return "urgent";
    case PreEolInfo::kReserved: return "reserved";
  }
  return "reserved";
}

}  // namespace diskprobe::parsers
