// util::SysfsAttributes: a kept-open sysfs attribute reads its current value, never a stale one;
// files elsewhere are opened anew; errors are ReadAttribute's.
#include "util/file.h"
#include "util/strings.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include <string>

namespace diskprobe::util {
namespace {

// One UDP datagram to 127.0.0.1: the loopback device counts it in rx_packets.
void SendLoopbackPacket() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(9);  // discard; nothing needs to listen
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::sendto(fd, "x", 1, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 1);
  ::close(fd);
}

TEST(SysfsAttributes, KeptOpenAttributeReadsTheCurrentValue) {
  const std::string path = "/sys/class/net/lo/statistics/rx_packets";
  if (ReadAttribute(path).error != 0) DISKPROBE_SKIP_OUTSIDE_CI(path << " unreadable (no sysfs here)");
  SysfsAttributes files;
  for (int i = 0; i < 3; ++i) {
    FileContent before = files.Read(path);
    ASSERT_TRUE(before.ok());
    SendLoopbackPacket();
    FileContent after = files.Read(path);
    ASSERT_TRUE(after.ok());
    EXPECT_GT(ParseU64(after.text).value_or(0), ParseU64(before.text).value_or(0))
        << "read " << i << ": the second read of a kept descriptor must see the new count";
    files.CloseUnread();
  }
}

std::size_t OpenDescriptors() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(SysfsAttributes, KeepsSysfsFilesOpenUntilNotReadForAScrape) {
  const std::string path = "/sys/class/net/lo/statistics/rx_packets";
  if (ReadAttribute(path).error != 0) DISKPROBE_SKIP_OUTSIDE_CI(path << " unreadable (no sysfs here)");
  SysfsAttributes files;
  const std::size_t before = OpenDescriptors();
  ASSERT_TRUE(files.Read(path).ok());
  EXPECT_EQ(OpenDescriptors(), before + 1) << "the sysfs attribute is kept open";
  ASSERT_TRUE(files.Read(path).ok());
  EXPECT_EQ(OpenDescriptors(), before + 1) << "and read again through the same descriptor";
  files.CloseUnread();  // it was read in this round: stays
  EXPECT_EQ(OpenDescriptors(), before + 1);
  files.CloseUnread();  // not read since: closed
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST(SysfsAttributes, OtherFilesAreOpenedAnew) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("sysfs_attributes_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "stat").string();
  std::ofstream(path) << "1\n";
  SysfsAttributes files;
  EXPECT_EQ(files.Read(path).text, "1\n");
  // Replaced the way a fixture or a test rewrites it: a new inode under the same name.
  std::ofstream(path + ".new") << "2\n";
  std::filesystem::rename(path + ".new", path);
  EXPECT_EQ(files.Read(path).text, "2\n");
  std::filesystem::remove(path);
  EXPECT_EQ(files.Read(path).error, ENOENT);
  files.CloseUnread();
  std::filesystem::remove_all(dir);
}

TEST(SysfsAttributes, MissingAttributeIsEnoent) {
  SysfsAttributes files;
  EXPECT_EQ(files.Read("/sys/block/no-such-disk/stat").error, ENOENT);
  EXPECT_EQ(files.Read("/sys/block/no-such-disk/stat").error, ENOENT);
}

}  // namespace
}  // namespace diskprobe::util
