// util/strings.h: the shared trim and number helpers every parser uses. The cases are the inputs
// the parsers meet (sysfs "%u\n" values, "0x"-prefixed firmware words, kernel decimal fields)
// and the ones they must refuse (sign on unsigned, trailing garbage, overflow, empty).
#include "util/strings.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>

namespace diskprobe::util {
namespace {

TEST(Trim, StripsAsciiWhitespaceOnBothEnds) {
  EXPECT_EQ(Trim("  42\n"), "42");
  EXPECT_EQ(Trim("\t\r\v\fa b\f\v\r\t"), "a b");
  EXPECT_EQ(Trim("a b"), "a b");
  EXPECT_EQ(Trim(" \n\t "), "");
  EXPECT_EQ(Trim(""), "");
}

TEST(Trim, KeepsNonAsciiAndNulBytes) {
  // Not whitespace in the "C" locale: a NUL (device-tree strings) and UTF-8 bytes stay.
  EXPECT_EQ(Trim(std::string_view("x\0", 2)), std::string_view("x\0", 2));
  EXPECT_EQ(Trim("\xc2\xa0x"), "\xc2\xa0x");
}

TEST(ParseNumber, WholeStringDecimal) {
  EXPECT_EQ(ParseNumber<std::uint64_t>("4732260326"), 4732260326u);
  EXPECT_EQ(ParseNumber<unsigned>("0"), 0u);
  EXPECT_EQ(ParseNumber<std::uint64_t>("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(ParseNumber<std::uint64_t>(""), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint64_t>("12a"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint64_t>("12 "), std::nullopt);  // no trimming of its own
  EXPECT_EQ(ParseNumber<std::uint64_t>(" 12"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint64_t>("0x10"), std::nullopt);  // hex only through ParseHex
}

TEST(ParseNumber, SignOnlyForSignedTypes) {
  EXPECT_EQ(ParseNumber<std::uint64_t>("-1"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint64_t>("+1"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::int64_t>("-110"), -110);
  EXPECT_EQ(ParseNumber<std::int64_t>("+110"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("-"), std::nullopt);
}

TEST(ParseNumber, OutOfRangeForTheTypeIsRefused) {
  EXPECT_EQ(ParseNumber<std::uint64_t>("18446744073709551616"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint8_t>("255"), 255);
  EXPECT_EQ(ParseNumber<std::uint8_t>("256"), std::nullopt);
  EXPECT_EQ(ParseNumber<std::uint32_t>("4294967296"), std::nullopt);
  EXPECT_EQ(ParseNumber<int>("-2147483649"), std::nullopt);
}

TEST(ParseNumber, OtherBases) {
  EXPECT_EQ(ParseNumber<std::uint32_t>("50005", 16), 0x50005u);
  EXPECT_EQ(ParseNumber<std::uint32_t>("aBcD", 16), 0xabcdu);
  EXPECT_EQ(ParseNumber<std::uint32_t>("g", 16), std::nullopt);
  EXPECT_EQ(ParseNumber<unsigned>("17", 8), 15u);
  EXPECT_EQ(ParseNumber<unsigned>("8", 8), std::nullopt);
}

TEST(ParseNumber, FloatingPoint) {
  EXPECT_EQ(ParseNumber<double>("3.30"), 3.30);
  EXPECT_EQ(ParseNumber<double>("1.65"), 1.65);
  EXPECT_EQ(ParseNumber<double>("-0.5"), -0.5);
  EXPECT_EQ(ParseNumber<double>("3"), 3.0);
  EXPECT_EQ(ParseNumber<double>("3.3 "), std::nullopt);
  EXPECT_EQ(ParseNumber<double>("3.3V"), std::nullopt);
  EXPECT_EQ(ParseNumber<double>(""), std::nullopt);
  EXPECT_EQ(ParseNumber<double>("0x1p3"), std::nullopt);  // no hex floats
}

TEST(ParseU64, TrimsThenParsesDecimal) {
  EXPECT_EQ(ParseU64("7812500\n"), 7812500u);
  EXPECT_EQ(ParseU64("  0 "), 0u);
  EXPECT_EQ(ParseU64("\n"), std::nullopt);
  EXPECT_EQ(ParseU64("-1"), std::nullopt);
  EXPECT_EQ(ParseU64("1 2"), std::nullopt);
  EXPECT_EQ(ParseU64("18446744073709551616"), std::nullopt);
}

TEST(StripHexPrefix, OnlyWhenDigitsFollow) {
  EXPECT_EQ(StripHexPrefix("0x1f"), "1f");
  EXPECT_EQ(StripHexPrefix("0X1F"), "1F");
  EXPECT_EQ(StripHexPrefix("1f"), "1f");
  EXPECT_EQ(StripHexPrefix("0x"), "0x");
  EXPECT_EQ(StripHexPrefix("00x1"), "00x1");
}

TEST(ParseHex, WithOrWithoutPrefix) {
  EXPECT_EQ(ParseHex<std::uint32_t>("50005"), 0x50005u);
  EXPECT_EQ(ParseHex<std::uint32_t>("0x50005"), 0x50005u);
  EXPECT_EQ(ParseHex<std::uint32_t>("0XFFFFFFFF"), 0xffffffffu);
  EXPECT_EQ(ParseHex<std::uint32_t>("0x100000000"), std::nullopt);
  EXPECT_EQ(ParseHex<std::uint32_t>("0x"), std::nullopt);
  EXPECT_EQ(ParseHex<std::uint32_t>(""), std::nullopt);
  EXPECT_EQ(ParseHex<std::uint32_t>("0x-1"), std::nullopt);
  EXPECT_EQ(ParseHex<std::uint32_t>("50005\n"), std::nullopt);  // caller trims
  EXPECT_EQ(ParseHex<std::uint8_t>("0x0a"), 0x0a);
}

TEST(HexDigitValue, EveryDigitAndNothingElse) {
  EXPECT_EQ(HexDigitValue('0'), 0);
  EXPECT_EQ(HexDigitValue('9'), 9);
  EXPECT_EQ(HexDigitValue('a'), 10);
  EXPECT_EQ(HexDigitValue('F'), 15);
  EXPECT_EQ(HexDigitValue('g'), -1);
  EXPECT_EQ(HexDigitValue('x'), -1);
  EXPECT_EQ(HexDigitValue(' '), -1);
  int digits = 0;
  for (int c = 0; c < 256; ++c) digits += HexDigitValue(static_cast<char>(c)) >= 0;
  EXPECT_EQ(digits, 22);
}

TEST(ParseDevNumber, MajorMinorAsSysfsAndMountinfoWriteIt) {
  using P = std::pair<unsigned, unsigned>;
  EXPECT_EQ(ParseDevNumber("179:2"), P(179, 2));
  EXPECT_EQ(ParseDevNumber("259:0\n"), P(259, 0));
  EXPECT_EQ(ParseDevNumber("4294967295:1"), P(4294967295u, 1));
  for (const char* bad : {"", "179", ":2", "179:", "179:2:3", "-1:2", "4294967296:0", "b179:0", "179 :2"})
    EXPECT_EQ(ParseDevNumber(bad), std::nullopt) << bad;
}

}  // namespace
}  // namespace diskprobe::util
