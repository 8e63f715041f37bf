#include "parsers/mmc_registers.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "parsers/mmc_ios.h"
#include "pi_samples.h"

namespace {

using namespace diskprobe::parsers;
using diskprobe::test_pi::sample_body;
using diskprobe::test_pi::sample_lines;

std::string first_line(const std::string& category, const std::string& file) {
  return sample_lines(category, file).at(0);
}

Cid sd_cid(const std::string& hex) {
  auto r = DecodeCid(hex, CardLayout::kSd);
  EXPECT_TRUE(r) << r.error;
  return r.value.value_or(Cid{});
}

// ------------------------------------------------------------ samples/cid

TEST(MmcRegistersCid, Sample01KingstonSd64g) {
  const auto c = sd_cid(first_line("cid", "01-kingston-sd64g-2019-mid9f.txt"));
  EXPECT_EQ(c.manfid, 0x9f);
  EXPECT_EQ(c.oemid, 0x5449);
  EXPECT_EQ(c.oemid_text, "TI");
  EXPECT_EQ(c.name, "SD64G");
  EXPECT_EQ(c.prv, 0x61);
  EXPECT_EQ(c.prv_major, 6u);
  EXPECT_EQ(c.prv_minor, 1u);
  EXPECT_EQ(c.serial, 0x0a0b0c0du);
  EXPECT_EQ(c.month, 11u);
  EXPECT_EQ(c.year, 2019u);
  EXPECT_EQ(c.crc_byte, 0x00);
  EXPECT_FALSE(c.crc_ok.has_value());  // host stripped the CRC: not validated
  // The kernel calls 0x9F Kingston, but white-label makers use the same MID and OEM "TI": the
  // maker is not known from the CID (sample 09 is a Gigastone card with the same pair).
  const auto m = LookupManufacturer(CardLayout::kSd, c.manfid, c.oemid);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "unknown");
  EXPECT_TRUE(m->shared);
  EXPECT_NE(m->brands.find("Kingston"), std::string_view::npos);
  EXPECT_NE(m->brands.find("Gigastone"), std::string_view::npos);
  EXPECT_NE(m->source.find("CID_MANFID_KINGSTON_SD"), std::string_view::npos);
  EXPECT_EQ(c.oemid_sysfs, 0x5449);
  EXPECT_TRUE(CidSuspicions(c).empty());
}

TEST(MmcRegistersCid, Sample09GigastoneWhiteLabelSharedMid) {
  const auto c = sd_cid(first_line("cid", "09-gigastone-00000-shared-oem-mid9f.txt"));
  EXPECT_EQ(c.manfid, 0x9f);
  EXPECT_EQ(c.oemid_text, "TI");
  EXPECT_EQ(c.name, "00000");
  EXPECT_EQ(c.prv, 0x00);
  EXPECT_EQ(c.serial, 0x0001b9d5u);
  EXPECT_EQ(c.year, 2021u);
  EXPECT_EQ(c.month, 9u);
  EXPECT_EQ(c.crc_ok, std::optional<bool>(true));
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, c.manfid, c.oemid)->name, "unknown");
  const auto why = CidSuspicions(c);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_EQ(why[0].rfind("placeholder product name \"00000\"", 0), 0u) << why[0];
  EXPECT_EQ(why[1].rfind("product revision 0.0", 0), 0u) << why[1];
}

// Shared MIDs give a brand only with the OEM ID that pins it (sbc-bench: genuine Toshiba cards are
// 0x02/"TM", ADATA 0x1d/"AD"); other pairs and no OEM ID say unknown with the candidates.
TEST(MmcRegistersCid, SharedMidsNeedTheirOemId) {
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x02, 0x544d)->name, "Toshiba");
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x02, 0x4b47)->name, "unknown");
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x02)->brands, "Toshiba/Kingston/Viking");
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x1d, 0x4144)->name, "ADATA");
  EXPECT_TRUE(LookupManufacturer(CardLayout::kSd, 0x1d, 0x0000)->shared);
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x82, 0x4a54)->name, "unknown");
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x03, 0x5344)->name, "SanDisk");
  EXPECT_FALSE(LookupManufacturer(CardLayout::kSd, 0x03, 0x5344)->shared);
}

// White-label and counterfeit patterns from the sbc-bench table (real CIDs of that table,
// rebuilt from its columns), one indicator each.
TEST(MmcRegistersCid, WhiteLabelPatternsAreSuspicions) {
  auto count = [](const std::string& hex) { return CidSuspicions(sd_cid(hex)).size(); };
  // name "ASTC", MID 0x12 OEM 0x3456: MID + name.
  EXPECT_EQ(count("12" "3456" "4153544300" "00" "000000b5" "0167" "00"), 3u);  // + PRV 0.0
  // name "SMI", serial 0, PRV 0.0, MID 0x6f OEM 0x0013: name + PRV + serial.
  EXPECT_EQ(count("6f" "0013" "534d490000" "00" "00000000" "0118" "00"), 3u);
  // "AS" on SanDisk's MID with PRV 3.0 and a real serial: one.
  EXPECT_EQ(count("03" "5344" "4153000000" "30" "00000028" "0144" "00"), 1u);
  // Month 0 is no date.
  EXPECT_EQ(count("27" "5048" "5344313647" "60" "00000012" "0150" "00"), 1u);
  // A genuine Phison-made card from the table: nothing.
  EXPECT_EQ(count("27" "5048" "5344313647" "60" "00000012" "0154" "00"), 0u);
}

// eMMC: sysfs `oemid` is 0x%04x of CID bits [119:104] (CBX and OID), not the 8-bit OID.
TEST(MmcRegistersCid, MmcSysfsOemidHasCbxBits) {
  auto m = DecodeCid("150100424a544434520812345678a400", CardLayout::kMmc, 8);
  ASSERT_TRUE(m) << m.error;
  EXPECT_EQ(m->oemid, 0x00);
  EXPECT_EQ(m->oemid_sysfs, 0x0100);
  EXPECT_EQ(m->mmc_cbx, std::optional<std::uint8_t>(1));
}

TEST(MmcRegistersCid, Sample03SandiskSn512) {
  const auto c = sd_cid(first_line("cid", "03-sandisk-sn512-mid03.txt"));
  EXPECT_EQ(c.manfid, 0x03);
  EXPECT_EQ(c.oemid, 0x5344);
  EXPECT_EQ(c.oemid_text, "SD");
  EXPECT_EQ(c.name, "SN512");
  EXPECT_EQ(c.prv_major, 8u);
  EXPECT_EQ(c.prv_minor, 0u);
  EXPECT_EQ(c.serial, 0x0a0b0c0fu);
  EXPECT_EQ(c.month, 7u);
  EXPECT_EQ(c.year, 2021u);
  EXPECT_FALSE(c.crc_ok.has_value());
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, c.manfid)->name, "SanDisk");
}

TEST(MmcRegistersCid, Sample04PhisonRealCrc) {
  const auto c = sd_cid(first_line("cid", "04-phison-sd16g-mid27-real-crc.txt"));
  EXPECT_EQ(c.manfid, 0x27);
  EXPECT_EQ(c.oemid, 0x5048);
  EXPECT_EQ(c.oemid_text, "PH");
  EXPECT_EQ(c.name, "SD16G");
  EXPECT_EQ(c.prv_major, 3u);
  EXPECT_EQ(c.prv_minor, 0u);
  EXPECT_EQ(c.serial, 0x0a0b0c10u);
  EXPECT_EQ(c.month, 11u);
  EXPECT_EQ(c.year, 2015u);
  EXPECT_EQ(c.crc_byte, 0x7f);
  ASSERT_TRUE(c.crc_ok.has_value());
  EXPECT_TRUE(*c.crc_ok);
  const std::uint8_t raw[15] = {0x27, 0x50, 0x48, 0x53, 0x44, 0x31, 0x36, 0x47,
                                0x30, 0x0a, 0x0b, 0x0c, 0x10, 0x00, 0xfb};
  EXPECT_EQ(Crc7(raw, 15), 0x3f);
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, c.manfid)->name, "Phison");
}

TEST(MmcRegistersCid, CorruptedCrcIsReportedNotRejected) {
  auto r = DecodeCid("2750485344313647300a0b0c1000fb7d", CardLayout::kSd);  // 0x7d: CRC7 0x3e
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->crc_ok.has_value());
  EXPECT_FALSE(*r->crc_ok);
  // Right CRC7 but end bit 0 is not a valid CRC byte either.
  r = DecodeCid("2750485344313647300a0b0c1000fb7e", CardLayout::kSd);
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r->crc_ok);
}

TEST(MmcRegistersCid, Sample06TranscendBacktickOemAndPaddedName) {
  const auto c = sd_cid(first_line("cid", "06-transcend-usd-mid74-oid-backtick.txt"));
  EXPECT_EQ(c.manfid, 0x74);
  EXPECT_EQ(c.oemid, 0x4a60);
  EXPECT_EQ(c.oemid_text, "J`");
  EXPECT_EQ(c.name, "USD  ");  // two trailing spaces kept: pad, not NUL
  EXPECT_EQ(c.prv_major, 1u);
  EXPECT_EQ(c.prv_minor, 0u);
  EXPECT_EQ(c.serial, 0x0a0b0c12u);
  EXPECT_EQ(c.month, 6u);
  EXPECT_EQ(c.year, 2016u);
  EXPECT_FALSE(c.crc_ok.has_value());
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, c.manfid)->name, "Transcend");
}

TEST(MmcRegistersCid, Sample08Pi5BootloaderShiftedByOneByte) {
  const auto line = first_line("cid", "08-pi5-bootloader-cid-shifted-by-one-byte.txt");
  // Parsed without realigning, the register is garbage (MID 0x00, OID 0x9c53):
  // the reason the realign step exists.
  auto wrong = DecodeCid(line.substr(line.find(':') + 2), CardLayout::kSd);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->manfid, 0x00);

  const auto realigned = RealignPi5BootloaderCid(line);
  ASSERT_TRUE(realigned) << realigned.error;
  EXPECT_EQ(*realigned, "9c534f444831334c450a0b0c14013a00");
  const auto c = sd_cid(*realigned);
  EXPECT_EQ(c.manfid, 0x9c);
  EXPECT_EQ(c.oemid, 0x534f);
  EXPECT_EQ(c.oemid_text, "SO");
  EXPECT_EQ(c.name, "DH13L");
  EXPECT_EQ(c.prv_major, 4u);
  EXPECT_EQ(c.prv_minor, 5u);
  EXPECT_EQ(c.serial, 0x0a0b0c14u);
  EXPECT_EQ(c.month, 10u);
  EXPECT_EQ(c.year, 2019u);
  EXPECT_FALSE(c.crc_ok.has_value());
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, c.manfid)->name, "Angelbird/Hoodman");
}

TEST(MmcRegistersCid, RealignRejectsUnshiftedInput) {
  EXPECT_FALSE(RealignPi5BootloaderCid("9f54495344363447610a0b0c0d013b00"));
  EXPECT_FALSE(RealignPi5BootloaderCid("CID: 009c"));
}

TEST(MmcRegistersCid, ManufacturerTableSeparatesSdAndMmcIdSpaces) {
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x03)->name, "SanDisk");
  EXPECT_FALSE(LookupManufacturer(CardLayout::kMmc, 0x03));
  EXPECT_EQ(LookupManufacturer(CardLayout::kMmc, 0x45)->name, "SanDisk");
  EXPECT_EQ(LookupManufacturer(CardLayout::kMmc, 0x15)->name, "Samsung");
  EXPECT_EQ(LookupManufacturer(CardLayout::kMmc, 0xfe)->name, "Micron/Numonyx");
  EXPECT_FALSE(LookupManufacturer(CardLayout::kSd, 0xfe));
  EXPECT_FALSE(LookupManufacturer(CardLayout::kSd, 0xdf));
  EXPECT_EQ(LookupManufacturer(CardLayout::kSd, 0x02, 0x544d)->name, "Toshiba");
  EXPECT_EQ(LookupManufacturer(CardLayout::kMmc, 0x02)->name, "SanDisk");
}

// SD CID built from fields: MID, OID, PNM "SD64G", PRV 1.0, PSN 1, MDT 2019-11, no CRC.
std::string sd_cid_hex(const std::string& mid, const std::string& oid) {
  return mid + oid + "5344363447" + "10" + "00000001" + "013b" + "00";
}

TEST(MmcRegistersCid, SuspiciousIdsAreFlagged) {
  // OEM "42" on a MID that is not Kingston's 0x41.
  auto c = sd_cid(sd_cid_hex("1f", "3432"));
  EXPECT_EQ(c.oemid, 0x3432);
  EXPECT_EQ(c.oemid_text, "42");
  EXPECT_EQ(CidSuspicions(c).size(), 1u);
  c = sd_cid(sd_cid_hex("41", "3432"));
  EXPECT_TRUE(CidSuspicions(c).empty());
  c = sd_cid(sd_cid_hex("fe", "3456"));
  EXPECT_EQ(CidSuspicions(c).size(), 1u);
  c = sd_cid(sd_cid_hex("fe", "3432"));
  EXPECT_EQ(CidSuspicions(c).size(), 2u);
  c = sd_cid(sd_cid_hex("00", "0000"));
  EXPECT_EQ(CidSuspicions(c).size(), 1u);
  // MMC IDs are a different space: 0xfe is Micron/Numonyx there.
  auto m = DecodeCid("fe0100424a54443452081234567 8a400", CardLayout::kMmc);
  ASSERT_TRUE(m) << m.error;
  EXPECT_TRUE(CidSuspicions(*m).empty());
}

TEST(MmcRegistersCid, ImplausibleRegistersAreRejectedWithReason) {
  auto r = DecodeCid("00000000000000000000000000000000", CardLayout::kSd);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("all zero"), std::string::npos);
  r = DecodeCid("ffffffffffffffffffffffffffffffff\n", CardLayout::kSd);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("0xFF"), std::string::npos);
  r = DecodeCid("9f54495344363447610a0b0c0d013b", CardLayout::kSd);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("expected 32 hex digits, got 30"), std::string::npos);
  r = DecodeCid("9f54495344363447610a0b0c0d013b0", CardLayout::kSd);
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("odd"), std::string::npos);
  r = DecodeCid("9g54495344363447610a0b0c0d013b00", CardLayout::kSd);
  EXPECT_FALSE(r);
  r = DecodeCid("", CardLayout::kSd);
  EXPECT_FALSE(r);
}

TEST(MmcRegistersCid, ToleratesWhitespaceNewlineAndWordPrefixes) {
  auto a = DecodeCid("9f544953 44363447 610a0b0c 0d013b00\n", CardLayout::kSd);
  auto b = DecodeCid("0x9f544953 0x44363447 0x610a0b0c 0x0d013b00", CardLayout::kSd);
  ASSERT_TRUE(a);
  ASSERT_TRUE(b);
  EXPECT_EQ(a->name, "SD64G");
  EXPECT_EQ(b->serial, 0x0a0b0c0du);
  // "0x" in the middle of a word is not a prefix.
  EXPECT_FALSE(DecodeCid("9f5449530x4436344761 0a0b0c0d013b00", CardLayout::kSd));
}

TEST(MmcRegistersCid, NonPrintableOemHasNoText) {
  const auto c = sd_cid(sd_cid_hex("12", "0012"));
  EXPECT_EQ(c.oemid, 0x0012);
  EXPECT_EQ(c.oemid_text, "");
}

// MMC layout (JESD84-B51 7.2), fields chosen by hand:
// 15 | 01 (CBX 1 = BGA) | 00 (OID) | "BJTD4R" | 08 (PRV 0.8) | 12345678 | a4 | 00
// MDT 0xa4 -> month 10, 4-bit year code 4.
TEST(MmcRegistersCid, MmcLayoutAndExtCsdRevYearRule) {
  const std::string hex =
      "150100424a54443452081234567"
      "8a400";
  auto r = DecodeCid(hex, CardLayout::kMmc);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->manfid, 0x15);
  EXPECT_EQ(r->mmc_cbx, std::optional<std::uint8_t>(1));
  EXPECT_EQ(r->oemid, 0x00);
  EXPECT_EQ(r->oemid_text, "");  // NUL is not printable
  EXPECT_EQ(r->name, "BJTD4R");
  EXPECT_EQ(r->prv_major, 0u);
  EXPECT_EQ(r->prv_minor, 8u);
  EXPECT_EQ(r->serial, 0x12345678u);
  EXPECT_EQ(r->month, 10u);
  EXPECT_EQ(r->year, 2001u);  // no EXT_CSD_REV: 1997 + 4
  EXPECT_EQ(LookupManufacturer(CardLayout::kMmc, r->manfid)->name, "Samsung");

  r = DecodeCid(hex, CardLayout::kMmc, 8);  // eMMC 5.1: kernel adds 16
  EXPECT_EQ(r->year, 2017u);
  r = DecodeCid(hex, CardLayout::kMmc, 4);  // eMMC 4.4: no adjustment
  EXPECT_EQ(r->year, 2001u);
  // Year code 13 is 2010 on both sides of the kernel rule.
  r = DecodeCid(
      "150100424a54443452081234567"
      "8ad00",
      CardLayout::kMmc, 8);
  EXPECT_EQ(r->year, 2010u);
  EXPECT_EQ(r->month, 10u);
  // The same bytes read with the SD layout give a different card: layout matters.
  auto sd = DecodeCid(hex, CardLayout::kSd);
  ASSERT_TRUE(sd);
  EXPECT_EQ(sd->oemid, 0x0100);
}

// ------------------------------------------------------------ samples/ssr-scr

// "ssr:<hex>" / "scr:<hex>" lines -> attribute map.
std::map<std::string, std::string> attr_lines(const std::string& category, const std::string& file) {
  std::map<std::string, std::string> out;
  for (const auto& line : sample_lines(category, file)) {
    const auto colon = line.find(':');
    if (colon != std::string::npos) out[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return out;
}

TEST(MmcRegistersSsr, Sample01KingstonU3V30A2) {
  const auto attrs = attr_lines("ssr-scr", "01-kingston-sd64g-2019-ssr-scr.txt");
  const auto& ssr_hex = attrs.at("ssr");
  EXPECT_EQ(ssr_hex.size(), 128u);
  const auto r = DecodeSsr(ssr_hex);
  ASSERT_TRUE(r) << r.error;
  const Ssr& s = *r;
  EXPECT_EQ(s.dat_bus_width, 0u);
  EXPECT_FALSE(s.secured_mode);
  EXPECT_EQ(s.sd_card_type, 0x0000);
  EXPECT_EQ(s.size_of_protected_area, 0x08000000u);
  EXPECT_EQ(s.speed_class_raw, 4u);
  EXPECT_EQ(s.SpeedClass(), std::optional<unsigned>(10));
  EXPECT_EQ(s.performance_move, 0u);
  EXPECT_EQ(s.au_size, 9u);
  EXPECT_EQ(Ssr::AuSizeBytes(s.au_size), std::optional<std::uint64_t>(4u * 1024 * 1024));
  EXPECT_EQ(s.erase_size, 1u);
  EXPECT_EQ(s.erase_timeout, 6u);
  EXPECT_EQ(s.erase_offset, 3u);
  EXPECT_EQ(s.uhs_speed_grade, 3u);
  EXPECT_EQ(s.uhs_au_size, 9u);
  EXPECT_EQ(s.video_speed_class, 30u);
  EXPECT_EQ(s.vsc_au_size, 8u);
  EXPECT_EQ(s.sus_addr, 0u);
  EXPECT_EQ(s.app_perf_class, 2u);
  EXPECT_EQ(s.performance_enhance, 0xffu);
  EXPECT_TRUE(s.discard_support);
  EXPECT_TRUE(s.fule_support);
}

TEST(MmcRegistersScr, Sample01Kingston) {
  const auto attrs = attr_lines("ssr-scr", "01-kingston-sd64g-2019-ssr-scr.txt");
  const auto r = DecodeScr(attrs.at("scr"));
  ASSERT_TRUE(r) << r.error;
  const Scr& s = *r;
  EXPECT_EQ(s.scr_structure, 0u);
  EXPECT_EQ(s.sd_spec, 2u);
  EXPECT_TRUE(s.sd_spec3);
  EXPECT_TRUE(s.sd_spec4);
  EXPECT_EQ(s.sd_specx, 2u);
  EXPECT_EQ(s.spec_version, std::optional<std::string>("6.xx"));
  EXPECT_EQ(s.spec_major, std::optional<unsigned>(6));
  EXPECT_FALSE(s.data_stat_after_erase);
  EXPECT_EQ(s.sd_security, 0u);
  EXPECT_EQ(s.sd_bus_widths, 0x5u);
  EXPECT_TRUE(s.BusWidth1Bit());
  EXPECT_TRUE(s.BusWidth4Bit());
  EXPECT_EQ(s.cmd_support, 0x7u);
  EXPECT_EQ(s.manufacturer_reserved, 0x01006432u);
}

TEST(MmcRegistersScr, Sample03SandiskSdxcSecurity) {
  const auto r = DecodeScr(first_line("ssr-scr", "03-sandisk-sn512-scr.txt"));
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->scr_structure, 0u);
  EXPECT_EQ(r->sd_spec, 2u);
  EXPECT_TRUE(r->sd_spec3);
  EXPECT_TRUE(r->sd_spec4);
  EXPECT_EQ(r->sd_specx, 2u);
  EXPECT_EQ(r->spec_version, std::optional<std::string>("6.xx"));
  EXPECT_FALSE(r->data_stat_after_erase);
  EXPECT_EQ(r->sd_security, 4u);
  EXPECT_EQ(r->sd_bus_widths, 0x5u);
  EXPECT_EQ(r->cmd_support, 0x7u);
  EXPECT_EQ(r->manufacturer_reserved, 0u);
}

TEST(MmcRegistersScr, Sample05Pi5BootloaderTwoWords) {
  const auto line = first_line("ssr-scr", "05-pi5-bootloader-scr-two-words.txt");
  const auto words = line.substr(line.find("SCR:") + 4);  // " 0x02458083 0x00000000"
  const auto r = DecodeScr(words);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->scr_structure, 0u);
  EXPECT_EQ(r->sd_spec, 2u);  // the bootloader's "spec: 2" is this raw field
  EXPECT_TRUE(r->sd_spec3);
  EXPECT_FALSE(r->sd_spec4);
  EXPECT_EQ(r->sd_specx, 2u);
  EXPECT_EQ(r->spec_version, std::optional<std::string>("6.xx"));
  EXPECT_EQ(r->sd_security, 4u);
  EXPECT_EQ(r->sd_bus_widths, 0x5u);
  EXPECT_EQ(r->cmd_support, 0x3u);
  EXPECT_EQ(r->manufacturer_reserved, 0u);
  // Joined form gives the same register.
  EXPECT_EQ(DecodeScr("0245808300000000")->cmd_support, 0x3u);
}

TEST(MmcRegistersScr, SpecVersionTable) {
  // SD_SPEC / SD_SPEC3 / SD_SPEC4 / SD_SPECX placed by hand:
  // byte0 = 0x0S, byte2 bit7 = SPEC3, bit2 = SPEC4, bits1..0 = SPECX[3:2],
  // byte3 bits7..6 = SPECX[1:0].
  EXPECT_EQ(DecodeScr("0005000000000000")->spec_version, std::optional<std::string>("1.0x"));
  EXPECT_EQ(DecodeScr("0105000000000000")->spec_version, std::optional<std::string>("1.10"));
  EXPECT_EQ(DecodeScr("0235000000000000")->spec_version, std::optional<std::string>("2.00"));
  EXPECT_EQ(DecodeScr("0235800000000000")->spec_version, std::optional<std::string>("3.0x"));
  EXPECT_EQ(DecodeScr("0235840000000000")->spec_version, std::optional<std::string>("4.xx"));
  EXPECT_EQ(DecodeScr("0235804000000000")->spec_version, std::optional<std::string>("5.xx"));
  EXPECT_EQ(DecodeScr("023580c000000000")->spec_version, std::optional<std::string>("7.xx"));
  EXPECT_EQ(DecodeScr("0235810000000000")->spec_version, std::optional<std::string>("8.xx"));
  EXPECT_EQ(DecodeScr("0235814000000000")->spec_version, std::optional<std::string>("9.xx"));
  EXPECT_EQ(DecodeScr("0235814000000000")->spec_major, std::optional<unsigned>(9));
  // SD_SPEC3 without SD_SPEC 2 is not in the table.
  EXPECT_FALSE(DecodeScr("0135800000000000")->spec_version.has_value());
  // SCR_STRUCTURE 1 is not defined: rejected.
  EXPECT_FALSE(DecodeScr("1235800000000000"));
  EXPECT_FALSE(DecodeScr("ffffffffffffffff"));
  EXPECT_FALSE(DecodeScr("0000000000000000"));
  EXPECT_FALSE(DecodeScr("02358000"));
}

TEST(MmcRegistersSsr, EncodingsAndRejections) {
  std::string hex(128, '0');
  hex.replace(16, 2, "02");  // SPEED_CLASS 2 -> class 4
  hex.replace(20, 1, "f");   // AU_SIZE 0xF -> 64 MiB
  hex.replace(28, 2, "12");  // UHS grade 1, UHS AU 2
  hex.replace(30, 2, "06");  // V6
  hex.replace(43, 1, "1");   // A1
  auto r = DecodeSsr(hex);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->SpeedClass(), std::optional<unsigned>(4));
  EXPECT_EQ(Ssr::AuSizeBytes(r->au_size), std::optional<std::uint64_t>(64ull << 20));
  EXPECT_EQ(r->uhs_speed_grade, 1u);
  EXPECT_EQ(Ssr::AuSizeBytes(r->uhs_au_size), std::optional<std::uint64_t>(32 * 1024));
  EXPECT_EQ(r->video_speed_class, 6u);
  EXPECT_EQ(r->app_perf_class, 1u);
  EXPECT_FALSE(r->discard_support);
  EXPECT_FALSE(Ssr::AuSizeBytes(0));

  hex.replace(16, 2, "05");
  EXPECT_FALSE(DecodeSsr(hex)->SpeedClass().has_value());  // reserved code

  EXPECT_FALSE(DecodeSsr(std::string(128, '0')));
  EXPECT_FALSE(DecodeSsr(std::string(128, 'f')));
  auto short_ssr = DecodeSsr(std::string(126, '1'));
  EXPECT_FALSE(short_ssr);
  EXPECT_NE(short_ssr.error.find("expected 128 hex digits"), std::string::npos);
}

// ------------------------------------------------------------ CSD

TEST(MmcRegistersCsd, SdV1CapacityFormula) {
  // SanDisk 2 GB SDSC: 002600325f5a83c4f6dbbfff8e400000 (common public dump):
  // READ_BL_LEN 10, C_SIZE 0xf13, C_SIZE_MULT 7 -> (0xf13+1) * 512 * 1024.
  auto r = DecodeCsd("002600325f5a83c4f6dbbfff8e400000", CardLayout::kSd);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->csd_structure, 0u);
  EXPECT_EQ(r->read_bl_len, 10u);
  EXPECT_EQ(r->c_size, 0xf13u);
  EXPECT_EQ(r->c_size_mult, std::optional<unsigned>(7));
  EXPECT_EQ(r->capacity_bytes, std::optional<std::uint64_t>(std::uint64_t{0xf14} * 512 * 1024));
  EXPECT_EQ(r->max_dtr_hz, std::optional<std::uint64_t>(25000000));
}

TEST(MmcRegistersCsd, SdV3SducUses28BitCSize) {
  // CSD_STRUCTURE 2, C_SIZE 0x1000000 in bits [75:48].
  auto r = DecodeCsd(
      "800e00325b590100"
      "00007f800a400000",
      CardLayout::kSd);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->csd_structure, 2u);
  EXPECT_EQ(r->c_size, 0x100u << 16);
  EXPECT_EQ(r->capacity_bytes, std::optional<std::uint64_t>((std::uint64_t{0x1000000} + 1) * 512 * 1024));
  EXPECT_FALSE(DecodeCsd("c00e00325b590001cfff7f800a400000", CardLayout::kSd));  // structure 3
}

TEST(MmcRegistersCsd, MmcBlockAddressedHasNoCsdCapacity) {
  // Typical eMMC 4.5+ CSD: structure 3, SPEC_VERS 4, C_SIZE 0xfff.
  auto r = DecodeCsd("d02700320f5903ffffffffef8a400000", CardLayout::kMmc);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r->csd_structure, 3u);
  EXPECT_EQ(r->spec_vers, std::optional<unsigned>(4));
  EXPECT_EQ(r->c_size, 0xfffu);
  EXPECT_FALSE(r->capacity_bytes.has_value());
  // MMC mantissa table differs from SD: 0x32 is 26 MHz here, 25 MHz on SD.
  EXPECT_EQ(r->max_dtr_hz, std::optional<std::uint64_t>(26000000));
}

// ------------------------------------------------------------ samples/device-attrs

// `grep -H . dir/*` output -> attribute -> value. Paths contain ':'
// ("mmc1:5048") and values contain '/' ("11/2019"), so the directory is the
// common prefix of all lines cut back to its last '/', and the attribute name
// runs from there to the next ':'. "grep: ..." noise is skipped.
std::multimap<std::string, std::string> grep_h(const std::string& file) {
  std::vector<std::string> lines;
  for (const auto& line : sample_lines("device-attrs", file))
    if (line.rfind("grep:", 0) != 0 && !line.empty()) lines.push_back(line);
  std::string dir = lines.empty() ? std::string{} : lines.front();
  for (const auto& line : lines) {
    std::size_t n = 0;
    while (n < dir.size() && n < line.size() && dir[n] == line[n]) ++n;
    dir.resize(n);
  }
  dir.resize(dir.rfind('/') + 1);
  std::multimap<std::string, std::string> out;
  for (const auto& line : lines) {
    const auto colon = line.find(':', dir.size());
    out.emplace(line.substr(dir.size(), colon - dir.size()), line.substr(colon + 1));
  }
  return out;
}

std::string one(const std::multimap<std::string, std::string>& m, const std::string& key) {
  EXPECT_EQ(m.count(key), 1u) << key;
  auto it = m.find(key);
  return it == m.end() ? std::string{} : it->second;
}

std::string hex6(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%06x", v);
  return buf;
}

TEST(MmcRegistersDeviceAttrs, Sample01KingstonAllAttributesAgreeWithRegisters) {
  const auto a = grep_h("01-kingston-sd64g-grep-H-all.txt");
  EXPECT_EQ(one(a, "type"), "SD");
  const auto cid = sd_cid(one(a, "cid"));
  EXPECT_EQ(cid.name, one(a, "name"));
  EXPECT_EQ(cid.name, "SD64G");
  EXPECT_EQ(hex6(cid.manfid), one(a, "manfid"));
  EXPECT_EQ(one(a, "manfid"), "0x00009f");
  EXPECT_EQ(cid.oemid, 0x5449);
  EXPECT_EQ(one(a, "oemid"), "0x5449");
  EXPECT_EQ(one(a, "date"), "11/2019");
  EXPECT_EQ(cid.month, 11u);
  EXPECT_EQ(cid.year, 2019u);
  EXPECT_EQ(cid.prv_major, 6u);
  EXPECT_EQ(one(a, "hwrev"), "0x6");
  EXPECT_EQ(cid.prv_minor, 1u);
  EXPECT_EQ(one(a, "fwrev"), "0x1");
  EXPECT_EQ(cid.serial, 0x0a0b0c0du);
  EXPECT_EQ(one(a, "serial"), "0x0a0b0c0d");
  EXPECT_EQ(one(a, "preferred_erase_size"), "4194304");
  EXPECT_EQ(one(a, "erase_size"), "512");
  EXPECT_EQ(one(a, "ocr"), "0x00300000");
  EXPECT_EQ(one(a, "dsr"), "0x404");
  EXPECT_EQ(one(a, "rca"), "0x5048");

  const auto csd = DecodeCsd(one(a, "csd"), CardLayout::kSd);
  ASSERT_TRUE(csd) << csd.error;
  EXPECT_EQ(csd->csd_structure, 1u);
  EXPECT_EQ(csd->c_size, 0x1cfffu);
  EXPECT_EQ(csd->capacity_bytes, std::optional<std::uint64_t>(62277025792ull));

  EXPECT_EQ(DecodeSsr(one(a, "ssr"))->app_perf_class, 2u);
  EXPECT_EQ(DecodeScr(one(a, "scr"))->spec_version, std::optional<std::string>("6.xx"));

  EXPECT_EQ(a.count("uevent"), 4u);  // multi-line file
  std::map<std::string, std::string> uevent;
  for (auto [it, end] = a.equal_range("uevent"); it != end; ++it)
    uevent[it->second.substr(0, it->second.find('='))] = it->second.substr(it->second.find('=') + 1);
  EXPECT_EQ(uevent, (std::map<std::string, std::string>{
                        {"DRIVER", "mmcblk"}, {"MMC_TYPE", "SD"}, {"MMC_NAME", "SD64G"}, {"MODALIAS", "mmc:block"}}));
  for (const char* emmc_only : {"life_time", "pre_eol_info", "rev", "cmdq_en"})
    EXPECT_EQ(a.count(emmc_only), 0u) << emmc_only;
}

TEST(MmcRegistersDeviceAttrs, Sample02SandiskVendorExtraAttributes) {
  const auto a = grep_h("02-sandisk-sn512-vendor-extra-attrs.txt");
  EXPECT_EQ(a.count("type"), 0u);   // truncated excerpt
  EXPECT_EQ(a.count("block"), 0u);  // "grep: ... Is a directory" skipped
  const auto cid = sd_cid(one(a, "cid"));
  EXPECT_EQ(cid.name, one(a, "name"));
  EXPECT_EQ(hex6(cid.manfid), one(a, "manfid"));
  EXPECT_EQ(one(a, "manfid"), "0x000003");
  EXPECT_EQ(one(a, "oemid"), "0x5344");
  EXPECT_EQ(cid.oemid_text, "SD");
  EXPECT_EQ(one(a, "date"), "07/2021");

  const auto csd = DecodeCsd(one(a, "csd"), CardLayout::kSd);
  ASSERT_TRUE(csd) << csd.error;
  EXPECT_EQ(csd->csd_structure, 1u);
  EXPECT_EQ(csd->tran_speed, 0x32);
  EXPECT_EQ(csd->max_dtr_hz, std::optional<std::uint64_t>(25000000));
  EXPECT_EQ(csd->ccc, 0xdb7);
  EXPECT_TRUE(csd->ccc & (1u << 10));  // class 10: switch
  EXPECT_EQ(csd->capacity_bytes, std::optional<std::uint64_t>((0xee5b7ull + 1) * 512 * 1024));

  EXPECT_EQ(one(a, "error_stats"), "0");
  const auto ios_timing = one(a, "ios_timing");
  EXPECT_EQ(ios_timing, "timing spec:\t6 (sd uhs SDR104)");
  // One line of an ios file is not a reading of the bus (the other always-printed lines are
  // missing); the code and the kernel's name for it still agree.
  const auto ios = ParseMmcIos(ios_timing);
  EXPECT_FALSE(ios);
  EXPECT_EQ(ios.error, "ios: incomplete, no 'clock', 'vdd', 'bus mode', 'chip select', 'power mode', 'bus width' line");
  EXPECT_EQ(MmcTimingName(6), std::optional<std::string_view>("sd uhs SDR104"));
}

TEST(MmcRegistersDeviceAttrs, Sample05EmmcLifeTime) {
  // mmc-utils output; the sysfs equivalent is life_time="0x01 0x01", pre_eol_info="0x01".
  std::map<std::string, std::string> v;
  for (const auto& line : sample_lines("device-attrs", "05-emmc-life-time-mmc-utils.txt")) {
    const auto open = line.find('['), close = line.find(']'), colon = line.rfind(": ");
    v[line.substr(open + 1, close - open - 1)] = line.substr(colon + 2);
  }
  const auto lt =
      ParseLifeTime(v.at("EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_A") + " " + v.at("EXT_CSD_DEVICE_LIFE_TIME_EST_TYP_B"));
  ASSERT_TRUE(lt) << lt.error;
  EXPECT_EQ(lt->type_a.raw, 0x01);
  EXPECT_EQ(lt->type_a.state, LifeTimeEstimate::State::kUsed);
  EXPECT_EQ(lt->type_a.used_percent_min, std::optional<unsigned>(0));
  EXPECT_EQ(lt->type_a.used_percent_max, std::optional<unsigned>(10));
  EXPECT_EQ(lt->type_b.raw, 0x01);
  EXPECT_EQ(lt->type_b.used_percent_max, std::optional<unsigned>(10));
  const auto eol = ParsePreEolInfo(v.at("EXT_CSD_PRE_EOL_INFO"));
  ASSERT_TRUE(eol) << eol.error;
  EXPECT_EQ(eol->raw, 0x01);
  EXPECT_EQ(eol->state, PreEolInfo::kNormal);
  EXPECT_EQ(ToString(eol->state), "normal");
}

TEST(MmcRegistersLifeTime, SysfsFormsAndEdgeValues) {
  auto lt = ParseLifeTime("0x01 0x02\n");
  ASSERT_TRUE(lt);
  EXPECT_EQ(lt->type_a.used_percent_max, std::optional<unsigned>(10));
  EXPECT_EQ(lt->type_b.used_percent_min, std::optional<unsigned>(10));
  EXPECT_EQ(lt->type_b.used_percent_max, std::optional<unsigned>(20));

  lt = ParseLifeTime("0x0a 0x0b\n");
  ASSERT_TRUE(lt);
  EXPECT_EQ(lt->type_a.used_percent_min, std::optional<unsigned>(90));
  EXPECT_EQ(lt->type_a.used_percent_max, std::optional<unsigned>(100));
  EXPECT_EQ(lt->type_b.state, LifeTimeEstimate::State::kExceeded);
  EXPECT_EQ(lt->type_b.used_percent_min, std::optional<unsigned>(100));
  EXPECT_FALSE(lt->type_b.used_percent_max.has_value());

  lt = ParseLifeTime("0x00 0x0c");
  ASSERT_TRUE(lt);
  EXPECT_EQ(lt->type_a.state, LifeTimeEstimate::State::kNotDefined);  // not "0 % used"
  EXPECT_FALSE(lt->type_a.used_percent_min.has_value());
  EXPECT_EQ(lt->type_b.state, LifeTimeEstimate::State::kReserved);

  EXPECT_FALSE(ParseLifeTime("0x01"));
  EXPECT_FALSE(ParseLifeTime(""));
  EXPECT_FALSE(ParseLifeTime("0x01 0xzz"));
  EXPECT_FALSE(ParseLifeTime("0x01 0x100"));
}

TEST(MmcRegistersPreEol, AllStates) {
  EXPECT_EQ(ParsePreEolInfo("0x00\n")->state, PreEolInfo::kNotDefined);
  EXPECT_EQ(ParsePreEolInfo("0x01\n")->state, PreEolInfo::kNormal);
  EXPECT_EQ(ParsePreEolInfo("0x02\n")->state, PreEolInfo::kWarning);
  EXPECT_EQ(ParsePreEolInfo("0x03")->state, PreEolInfo::kUrgent);
  EXPECT_EQ(ParsePreEolInfo("0x04")->state, PreEolInfo::kReserved);
  EXPECT_EQ(ToString(PreEolInfo::kUrgent), "urgent");
  EXPECT_FALSE(ParsePreEolInfo("urgent"));
  EXPECT_FALSE(ParsePreEolInfo(""));
}

}  // namespace
