// Tests for parsers/mountinfo on the ext4-mountinfo samples (01-03) plus edge cases of proc(5).
#include "parsers/mountinfo.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifndef DISKPROBE_FIXTURES_DIR
#error "DISKPROBE_FIXTURES_DIR must name tests/fixtures"
#endif

namespace diskprobe::parsers {
namespace {

std::vector<std::string> SampleLines(const std::string& relative) {
  std::ifstream in(std::string(DISKPROBE_FIXTURES_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << "missing fixture " << relative;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  return lines;
}

TEST(Mountinfo, Sample01SuperRoMountRw) {
  auto lines = SampleLines("samples/ext4-mountinfo/01-mountinfo-super-ro-mount-rw.txt");
  ASSERT_EQ(lines.size(), 2u);
  auto m = ParseMountinfoLine(lines[0]);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->mount_id, 44u);
  EXPECT_EQ(m->parent_id, 0u);
  EXPECT_EQ(m->major, 9u);
  EXPECT_EQ(m->minor, 127u);
  EXPECT_EQ(m->root, "/");
  EXPECT_EQ(m->mount_point, "/");
  EXPECT_EQ(m->mount_options, "rw,relatime");
  EXPECT_EQ(m->optional_fields, std::vector<std::string>{"shared:1"});
  EXPECT_EQ(m->fstype, "ext4");
  EXPECT_EQ(m->source, "/dev/md127");
  EXPECT_EQ(m->super_options, "ro");
  EXPECT_TRUE(IsReadOnly(m->mount_options, m->super_options));  // super ro although the mount is rw
  // The /proc/mounts line of the same sample is not a mountinfo line.
  EXPECT_FALSE(ParseMountinfoLine(lines[1]));
}

TEST(Mountinfo, Sample02EmergencyRoSuperOption615) {
  // Go test-case values of node_exporter PR 3717, not a raw line: the two option strings.
  auto lines = SampleLines("samples/ext4-mountinfo/02-emergency-ro-super-option-6.15.txt");
  ASSERT_EQ(lines.size(), 2u);
  auto value = [](const std::string& l) {
    std::size_t a = l.find('"'), b = l.rfind('"');
    return l.substr(a + 1, b - a - 1);
  };
  std::string mount_options = value(lines[0]);
  std::string super_options = value(lines[1]);
  EXPECT_EQ(mount_options, "rw,user_id=1000,group_id=1000");
  EXPECT_EQ(super_options, "emergency_ro");
  EXPECT_TRUE(IsReadOnly(mount_options, super_options));
  // The same as a real 6.15 line.
  auto m = ParseMountinfoLine("30 1 179:2 / / rw,relatime shared:1 - ext4 /dev/mmcblk0p2 rw,emergency_ro\n");
  ASSERT_TRUE(m);
  EXPECT_TRUE(IsReadOnly(m->mount_options, m->super_options));
  // 6.12-6.14 after an error remount: nothing to see here (the ext4 error counter and the kernel log tell instead).
  EXPECT_FALSE(IsReadOnly("rw,relatime", "rw,errors=remount-ro"));
}

TEST(Mountinfo, Sample03EscapesAndSuperoptsWithoutRw) {
  auto lines = SampleLines("samples/ext4-mountinfo/03-fixture-escapes-and-superopts-without-rw.txt");
  ASSERT_EQ(lines.size(), 3u);
  auto l1 = ParseMountinfoLine(lines[0]);
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->mount_id, 29u);
  EXPECT_EQ(l1->major, 259u);
  EXPECT_EQ(l1->minor, 2u);
  EXPECT_EQ(l1->mount_point, "/");
  EXPECT_EQ(l1->fstype, "ext4");
  EXPECT_EQ(l1->source, "/dev/dm-2");
  EXPECT_EQ(l1->mount_options, "rw,relatime");
  EXPECT_EQ(l1->super_options, "errors=remount-ro,data=ordered");
  EXPECT_FALSE(IsReadOnly(l1->mount_options, l1->super_options));  // errors=remount-ro is a policy

  auto l2 = ParseMountinfoLine(lines[1]);
  ASSERT_TRUE(l2);
  EXPECT_EQ(l2->mount_point, "/sys/fs/cgroup");
  EXPECT_EQ(l2->mount_options, "ro,nosuid,nodev,noexec");
  EXPECT_EQ(l2->super_options, "ro,mode=755");
  EXPECT_EQ(l2->fstype, "tmpfs");
  EXPECT_EQ(l2->source, "tmpfs");
  EXPECT_TRUE(IsReadOnly(l2->mount_options, l2->super_options));

  auto l3 = ParseMountinfoLine(lines[2]);
  ASSERT_TRUE(l3);
  EXPECT_EQ(l3->mount_id, 3148u);
  EXPECT_EQ(l3->parent_id, 3003u);
  EXPECT_EQ(l3->major, 260u);
  EXPECT_EQ(l3->minor, 0u);
  EXPECT_EQ(l3->mount_point,
            "/var/lib/kubelet/plugins/kubernetes.io/vsphere-volume/mounts/[vsanDatastore] "
            "bafb9e5a-8856-7e6c-699c-801844e77a4a/kubernetes-dynamic-pvc-3eba5bba-48a3-11e8-89ab-005056b92113.vmdk");
  EXPECT_EQ(l3->optional_fields, std::vector<std::string>{"shared:31"});
  EXPECT_EQ(l3->source, "/dev/sda");
  EXPECT_EQ(l3->super_options, "rw,data=ordered");
  EXPECT_FALSE(IsReadOnly(l3->mount_options, l3->super_options));

  std::string whole;
  for (const auto& l : lines) whole += l + "\n";
  std::size_t bad = 99;
  auto all = ParseMountinfo(whole, &bad);
  EXPECT_EQ(all.size(), 3u);
  EXPECT_EQ(bad, 0u);
}

TEST(Mountinfo, OptionalFieldsZeroOrMany) {
  auto none = ParseMountinfoLine("25 1 8:1 / /mnt rw - vfat /dev/sda1 rw,fmask=0022");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->optional_fields.empty());
  EXPECT_EQ(none->fstype, "vfat");
  auto many = ParseMountinfoLine(
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:7 propagate_from:2 - ext3 "
      "/dev/root rw,errors=continue");
  ASSERT_TRUE(many);
  EXPECT_EQ(many->root, "/mnt1");
  EXPECT_EQ(many->optional_fields, (std::vector<std::string>{"master:1", "shared:7", "propagate_from:2"}));
  EXPECT_EQ(many->source, "/dev/root");
}

TEST(Mountinfo, AllEscapesDecoded) {
  auto m = ParseMountinfoLine(
      "40 30 179:1 /a\\134b /media/pi/My\\040Card\\011x\\012y rw - fuse.sshfs me@host:/a\\040b rw\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->root, "/a\\b");
  EXPECT_EQ(m->mount_point, "/media/pi/My Card\tx\ny");
  EXPECT_EQ(m->fstype, "fuse.sshfs");
  EXPECT_EQ(m->source, "me@host:/a b");
  EXPECT_EQ(DecodeMountinfoEscapes("\\04"), "\\04");
  EXPECT_EQ(DecodeMountinfoEscapes("a\\999b"), "a\\999b");
  EXPECT_EQ(DecodeMountinfoEscapes("\\"), "\\");
}

TEST(Mountinfo, MalformedLines) {
  EXPECT_FALSE(ParseMountinfoLine(""));
  EXPECT_FALSE(ParseMountinfoLine("44 0 9:127 / / rw,relatime shared:1 ext4 /dev/md127 ro"));  // no '-'
  EXPECT_FALSE(ParseMountinfoLine("44 0 9:127 / / rw,relatime - ext4 /dev/md127"));            // no super
  EXPECT_FALSE(ParseMountinfoLine("x 0 9:127 / / rw - ext4 /dev/md127 ro"));
  EXPECT_FALSE(ParseMountinfoLine("44 0 9-127 / / rw - ext4 /dev/md127 ro"));
  EXPECT_FALSE(ParseMountinfoLine("44 0 9: / / rw - ext4 /dev/md127 ro"));
  std::size_t bad = 0;
  auto all = ParseMountinfo("garbage\n\n25 1 8:1 / /mnt rw - vfat /dev/sda1 rw\n", &bad);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].mount_point, "/mnt");
  EXPECT_EQ(bad, 1u);
}

TEST(MountOptions, HasMountOptionMatchesWholeOptions) {
  EXPECT_TRUE(HasMountOption("ro", "ro"));
  EXPECT_TRUE(HasMountOption("rw,ro", "ro"));
  EXPECT_TRUE(HasMountOption("nosuid,ro,relatime", "ro"));
  EXPECT_FALSE(HasMountOption("errors=remount-ro", "ro"));
  EXPECT_FALSE(HasMountOption("rw,rootcontext=ro", "ro"));
  EXPECT_FALSE(HasMountOption("", "ro"));
  EXPECT_FALSE(HasMountOption("rw,relatime", "ro"));
}

TEST(MountOptions, IsReadOnly) {
  EXPECT_FALSE(IsReadOnly("rw,relatime", "rw"));
  EXPECT_TRUE(IsReadOnly("ro,relatime", "rw"));
  EXPECT_TRUE(IsReadOnly("rw,relatime", "ro"));
  EXPECT_TRUE(IsReadOnly("rw", "rw,emergency_ro"));
  EXPECT_FALSE(IsReadOnly("rw,emergency_ro", "rw"));  // a super-block state only
  EXPECT_FALSE(IsReadOnly("rw", "errors=remount-ro"));
}

}  // namespace
}  // namespace diskprobe::parsers
