#include "parsers/throttled.h"

#include <gtest/gtest.h>

#include <array>

#include "pi_samples.h"

namespace {

using namespace diskprobe::parsers;
using diskprobe::test_pi::sample_body;
using diskprobe::test_pi::sample_lines;

// The nine fields every throttled .expected lists, in its order.
struct Bits {
  std::uint32_t value;
  std::array<bool, 8> flags;  // uv, cap, thr, soft now; uv, cap, thr, soft occurred
  std::uint32_t unknown;
};

void expect_bits(const Throttled& t, const Bits& b) {
  EXPECT_EQ(t.value, b.value);
  EXPECT_EQ(t.under_voltage_now, b.flags[0]);
  EXPECT_EQ(t.arm_freq_capped_now, b.flags[1]);
  EXPECT_EQ(t.throttled_now, b.flags[2]);
  EXPECT_EQ(t.soft_temp_limit_now, b.flags[3]);
  EXPECT_EQ(t.under_voltage_occurred, b.flags[4]);
  EXPECT_EQ(t.arm_freq_capped_occurred, b.flags[5]);
  EXPECT_EQ(t.throttled_occurred, b.flags[6]);
  EXPECT_EQ(t.soft_temp_limit_occurred, b.flags[7]);
  EXPECT_EQ(t.unknown_bits, b.unknown);
}

TEST(Throttled, Sample01HistoryOnlyInsideVcgencmdOutput) {
  const auto r = ParseThrottled(sample_body("throttled", "01-pi3-0x50000-history-only.txt"));
  ASSERT_TRUE(r) << r.error;
  expect_bits(*r, {0x50000, {false, false, false, false, true, false, true, false}, 0});
}

TEST(Throttled, Sample02ActiveUnderVoltage) {
  const auto r = ParseThrottled(sample_body("throttled", "02-pi3-0x50005-active-undervoltage.txt"));
  ASSERT_TRUE(r) << r.error;
  expect_bits(*r, {0x50005, {true, false, true, false, true, false, true, false}, 0});
}

TEST(Throttled, Sample03HealthyMinimalHex) {
  const auto r = ParseThrottled(sample_body("throttled", "03-healthy-0x0.txt"));
  ASSERT_TRUE(r) << r.error;
  expect_bits(*r, {0x0, {false, false, false, false, false, false, false, false}, 0});
}

TEST(Throttled, Sample05KernelLogTransitions) {
  const auto lines = sample_lines("throttled", "05-kernel-log-under-voltage-transitions.txt");
  ASSERT_EQ(lines.size(), 4u);
  const auto l1 = ParseThrottledLogLine(lines[0]);
  ASSERT_TRUE(l1);
  EXPECT_TRUE(l1->under_voltage_detected);
  expect_bits(l1->flags, {0x50005, {true, false, true, false, true, false, true, false}, 0});
  const auto l2 = ParseThrottledLogLine(lines[1]);
  ASSERT_TRUE(l2);
  EXPECT_FALSE(l2->under_voltage_detected);
  // 0x00000000 although under-voltage occurred 25 s earlier: no history here.
  expect_bits(l2->flags, {0x0, {false, false, false, false, false, false, false, false}, 0});
  EXPECT_TRUE(ParseThrottledLogLine(lines[2])->under_voltage_detected);
  EXPECT_FALSE(ParseThrottledLogLine(lines[3])->under_voltage_detected);
  EXPECT_FALSE(ParseThrottledLogLine("[ 1.0] mmc0: new high speed SDHC card at address aaaa"));
  EXPECT_FALSE(ParseThrottledLogLine("[ 1.0] Under-voltage detected! (garbage)"));
}

TEST(Throttled, Sample06SysfsFormatWithoutPrefix) {
  // The sample is the kernel source line: sprintf(buf, "%x\n", value).
  EXPECT_NE(sample_body("throttled", "06-sysfs-get-throttled-format.txt").find("\"%x\\n\""), std::string::npos);
  const auto sysfs = ParseThrottled("50005\n");
  const auto vcgencmd = ParseThrottled("throttled=0x50005");
  ASSERT_TRUE(sysfs);
  ASSERT_TRUE(vcgencmd);
  EXPECT_EQ(sysfs->value, 0x50005u);
  EXPECT_EQ(vcgencmd->value, 0x50005u);
  EXPECT_TRUE(sysfs->under_voltage_now);
}

TEST(Throttled, AllBitsUnknownBitsAndErrors) {
  auto r = ParseThrottled("f000f\n");
  ASSERT_TRUE(r);
  expect_bits(*r, {0xf000f, {true, true, true, true, true, true, true, true}, 0});
  r = ParseThrottled("e000a");
  ASSERT_TRUE(r);
  expect_bits(*r, {0xe000a, {false, true, false, true, false, true, true, true}, 0});
  r = ParseThrottled("80000010");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->unknown_bits, 0x80000010u);
  EXPECT_FALSE(r->under_voltage_now);

  EXPECT_FALSE(ParseThrottled(""));
  EXPECT_FALSE(ParseThrottled("throttled="));
  EXPECT_FALSE(ParseThrottled("0x"));
  EXPECT_FALSE(ParseThrottled("5000g"));
  EXPECT_FALSE(ParseThrottled("1ffffffff"));  // wider than 32 bits
  EXPECT_FALSE(ParseThrottled("temp=39.2'C\n"));
}

}  // namespace
