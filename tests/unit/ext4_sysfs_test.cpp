// Tests for parsers/ext4_sysfs on ext4-mountinfo sample 04 (fs/ext4/sysfs.c declarations) with the
// counter values the kernel logged in kmsg samples 09 and 11.
#include "parsers/ext4_sysfs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#ifndef DISKPROBE_FIXTURES_DIR
#error "DISKPROBE_FIXTURES_DIR must name tests/fixtures"
#endif

namespace diskprobe::parsers {
namespace {

using Files = std::map<std::string, std::string, std::less<>>;

struct Declaration {
  std::string macro;  // e.g. "EXT4_RO_ATTR_ES_UI"
  std::string name;   // e.g. "errors_count"
};

// "EXT4_RO_ATTR_ES_UI(errors_count, s_error_count);" -> {EXT4_RO_ATTR_ES_UI, errors_count}
std::vector<Declaration> SampleDeclarations() {
  std::ifstream in(std::string(DISKPROBE_FIXTURES_DIR) + "/samples/ext4-mountinfo/04-sysfs-ext4-error-attributes.txt");
  EXPECT_TRUE(in.good());
  std::vector<Declaration> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::size_t open = line.find('('), comma = line.find(',');
    if (open == std::string::npos || comma == std::string::npos) continue;
    out.push_back({line.substr(0, open), line.substr(open + 1, comma - open - 1)});
  }
  return out;
}

TEST(Ext4Sysfs, Sample04DeclaredAttributesAreKnown) {
  auto decls = SampleDeclarations();
  ASSERT_EQ(decls.size(), 10u);
  for (const auto& d : decls) {
    EXPECT_NE(std::find(kExt4ErrorAttributes.begin(), kExt4ErrorAttributes.end(), d.name), kExt4ErrorAttributes.end())
        << d.name;
  }
  // The macro says how the kernel prints each one; the parser used for it must accept that shape.
  Files files;
  for (const auto& d : decls) {
    if (d.macro == "EXT4_RO_ATTR_ES_UI") files[d.name] = "4294967295\n";                        // "%u\n", u32 max
    else if (d.macro == "EXT4_RO_ATTR_ES_U8") files[d.name] = "2\n";                            // "%u\n"
    else if (d.macro == "EXT4_RO_ATTR_ES_U64") files[d.name] = "18446744073709551615\n";        // "%llu\n"
    else if (d.macro == "EXT4_RO_ATTR_ES_STRING") files[d.name] = std::string(32, 'f') + "\n";  // "%.*s\n", 32
    else ADD_FAILURE() << "unexpected macro " << d.macro;
  }
  auto e = ParseExt4Errors(files);
  EXPECT_EQ(e.errors_count, 4294967295u);
  EXPECT_EQ(e.first.errcode, 2u);
  EXPECT_EQ(e.last.errcode, 2u);
  EXPECT_EQ(e.first.inode, 4294967295u);
  EXPECT_EQ(e.last.inode, 4294967295u);
  EXPECT_EQ(e.first.block, 18446744073709551615u);
  EXPECT_EQ(e.last.block, 18446744073709551615u);
  EXPECT_EQ(e.first.line, 4294967295u);
  EXPECT_EQ(e.last.line, 4294967295u);
  EXPECT_EQ(e.first.function, std::string(32, 'f'));
  EXPECT_FALSE(e.last.function);  // last_error_func is not in the excerpt
  EXPECT_FALSE(e.first.time);     // nor are the times (attr_first_error_time, print_tstamp)
  EXPECT_FALSE(e.warning_count);
}

TEST(Ext4Sysfs, Kmsg09CountersAsSysfsShowsThem) {
  // The summary logged in kmsg sample 09 for sda1, as /sys/fs/ext4/sda1/ shows the same counters.
  Files files{
      {"errors_count", "6\n"},
      {"first_error_time", "1415238176\n"},
      {"first_error_func", "ext4_journal_check_start\n"},
      {"first_error_line", "56\n"},
      {"first_error_ino", "0\n"},
      {"first_error_block", "0\n"},
      {"first_error_errcode", "0\n"},
      {"last_error_time", "1415238717\n"},
      {"last_error_func", "ext4_discard_preallocations\n"},
      {"last_error_line", "3954\n"},
      {"last_error_ino", "131073\n"},
      {"last_error_block", "524288\n"},
      {"last_error_errcode", "2\n"},
      {"warning_count", "3\n"},
      {"msg_count", "17\n"},
  };
  auto e = ParseExt4Errors(files);
  EXPECT_EQ(e.errors_count, 6u);
  EXPECT_EQ(e.first.time, 1415238176);
  EXPECT_EQ(e.first.function, "ext4_journal_check_start");
  EXPECT_EQ(e.first.line, 56u);
  EXPECT_FALSE(e.first.inode);
  EXPECT_FALSE(e.first.block);
  EXPECT_FALSE(e.first.errcode);
  EXPECT_EQ(e.last.time, 1415238717);
  EXPECT_EQ(e.last.function, "ext4_discard_preallocations");
  EXPECT_EQ(e.last.line, 3954u);
  EXPECT_EQ(e.last.inode, 131073u);
  EXPECT_EQ(e.last.block, 524288u);
  EXPECT_EQ(e.last.errcode, 2u);
  EXPECT_EQ(Ext4ErrcodeName(*e.last.errcode), "EIO");
  EXPECT_EQ(e.warning_count, 3);
  EXPECT_EQ(e.msg_count, 17);
}

TEST(Ext4Sysfs, Kmsg11RtcLessTimesAreKept) {
  // kmsg sample 11: 2 errors, first at 33 s and last at 31 s after the epoch (no RTC on the Pi).
  auto e = ParseExt4Errors(Files{{"errors_count", "2\n"},
                                 {"first_error_time", "33\n"},
                                 {"last_error_time", "31\n"},
                                 {"first_error_func", "ext4_mb_generate_buddy\n"},
                                 {"first_error_line", "755\n"}});
  EXPECT_EQ(e.errors_count, 2u);
  EXPECT_EQ(e.first.time, 33);
  EXPECT_EQ(e.last.time, 31);
  EXPECT_EQ(e.first.function, "ext4_mb_generate_buddy");
  EXPECT_EQ(e.first.line, 755u);
  EXPECT_FALSE(e.last.function);
}

TEST(Ext4Sysfs, CleanFilesystem) {
  // A healthy filesystem: count 0 is a value, everything else "never".
  auto e = ParseExt4Errors(Files{{"errors_count", "0\n"},
                                 {"first_error_time", "0\n"},
                                 {"last_error_time", "0\n"},
                                 {"first_error_func", "\n"},
                                 {"first_error_line", "0\n"}});
  EXPECT_EQ(e.errors_count, 0u);
  EXPECT_FALSE(e.first.time);
  EXPECT_FALSE(e.last.time);
  EXPECT_FALSE(e.first.function);
  EXPECT_FALSE(e.first.line);
  auto empty = ParseExt4Errors(Files{});
  EXPECT_FALSE(empty.errors_count);
  EXPECT_FALSE(empty.first.time);
}

TEST(Ext4Sysfs, SingleValues) {
  EXPECT_EQ(ParseExt4Counter("6\n"), 6u);
  EXPECT_EQ(ParseExt4Counter(" 7 "), 7u);
  EXPECT_FALSE(ParseExt4Counter(""));
  EXPECT_FALSE(ParseExt4Counter("\n"));
  EXPECT_FALSE(ParseExt4Counter("-1\n"));
  EXPECT_FALSE(ParseExt4Counter("+1\n"));
  EXPECT_FALSE(ParseExt4Counter("12abc\n"));
  EXPECT_FALSE(ParseExt4Counter("18446744073709551616\n"));
  EXPECT_EQ(ParseExt4Time("1415238176\n"), 1415238176);
  EXPECT_EQ(ParseExt4Time("1099511627775\n"), 1099511627775);  // 40-bit maximum on disk
  EXPECT_FALSE(ParseExt4Time("0\n"));
  EXPECT_FALSE(ParseExt4Time("soon\n"));
  EXPECT_EQ(ParseExt4String("ext4_find_extent\n"), "ext4_find_extent");
  EXPECT_FALSE(ParseExt4String("\n"));
  EXPECT_FALSE(ParseExt4String(""));
  auto bad = ParseExt4Errors(Files{{"errors_count", "many\n"}, {"warning_count", "-2\n"}});
  EXPECT_FALSE(bad.errors_count);
  EXPECT_EQ(bad.warning_count, -2);  // atomic_t printed with "%d"
}

TEST(Ext4Sysfs, ErrcodeNames) {
  EXPECT_EQ(Ext4ErrcodeName(0), "");
  EXPECT_EQ(Ext4ErrcodeName(1), "UNKNOWN");
  EXPECT_EQ(Ext4ErrcodeName(2), "EIO");
  EXPECT_EQ(Ext4ErrcodeName(4), "EFSBADCRC");
  EXPECT_EQ(Ext4ErrcodeName(5), "EFSCORRUPTED");
  EXPECT_EQ(Ext4ErrcodeName(8), "EROFS");
  EXPECT_EQ(Ext4ErrcodeName(16), "ESHUTDOWN");
  EXPECT_EQ(Ext4ErrcodeName(17), "EFAULT");
  EXPECT_EQ(Ext4ErrcodeName(18), "");
}

}  // namespace
}  // namespace diskprobe::parsers
