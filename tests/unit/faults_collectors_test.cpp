// The failing-card collectors: mounts (read-only filesystems, ext4 error records) and
// kmsg (the kernel log follower and its counts), on the fixture root tests/fixtures/roots/faults
// (sources in its SOURCES.md) with a golden exposition, and the kmsg samples fed through a pipe.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "collectors/kmsg.h"
#include "collectors/mounts.h"
#include "config/config.h"
#include "sources/device_registry.h"
#include "collect_util.h"
#include "sources/kmsg_follower.h"
#include "test_util.h"
#include "util/log.h"

namespace diskprobe::collectors {
namespace {

namespace fs = std::filesystem;
using testing::Collect;
using testing::Fixture;
using testing::ReadText;
using testing::SampleValue;

Paths FaultsPaths() {
  Paths p;
  const std::string root = Fixture("roots/faults");
  p.sysfs = root + "/sys";
  p.procfs = root + "/proc";
  p.rootfs = root;
  p.debugfs = root + "/debug";
  p.kmsg = root + "/kmsg";
  return p;
}

DeviceList Devices(const Paths& p) {
  auto cfg = config::LoadDefault().config;
  return DiscoverDevices(p.sysfs, cfg->devices, nullptr);
}

// Waits (up to 20 s: a followed file is polled once a second) until the follower has read
// everything available.
KmsgSnapshot WaitDrained(const KmsgFollower& f, std::uint64_t records, const std::vector<std::string>& disks = {}) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  KmsgSnapshot s = f.Snapshot(disks);
  while ((!s.drained || s.records < records) && s.error.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    s = f.Snapshot(disks);
  }
  return s;
}

using parsers::KmsgKind;

std::uint64_t Count(const KmsgSnapshot& s, const std::string& device, const std::string& host, KmsgKind kind) {
  auto it = s.messages.find({device, host, kind});
  return it == s.messages.end() ? 0 : it->second;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/diskprobe-faults-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- mounts ----------------------------------------------------------------------------------

TEST(Mounts, PartitionMapFromSysfs) {
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  ASSERT_EQ(d.size(), 2u);
  PartitionMap m = BuildPartitionMap(p.sysfs, d);
  PartitionMap want = {
      {{8, 0}, {"sda", "sda"}},
      {{8, 1}, {"sda", "sda1"}},
      {{179, 0}, {"mmcblk0", "mmcblk0"}},
      {{179, 1}, {"mmcblk0", "mmcblk0p1"}},
      {{179, 2}, {"mmcblk0", "mmcblk0p2"}},
  };
  EXPECT_EQ(m, want);
}

TEST(Mounts, ReadOnlyCasesOnFixture) {
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  MountsCollector c;
  auto out = Collect(c, ScrapeContext{p, d});
  ASSERT_TRUE(out.ok()) << out.result.error;
  const std::string& text = out.text;
  // emergency_ro in the superblock options (6.15+), mount options rw.
  EXPECT_NE(text.find("diskprobe_filesystem_read_only{device=\"mmcblk0\",fstype=\"ext4\",mountpoint=\"/\","
                      "partition=\"mmcblk0p2\"} 1\n"),
            std::string::npos)
      << text;
  // Superblock ro, mount rw (https://github.com/prometheus/node_exporter/issues/3157); the mount point's \040 decoded.
  EXPECT_NE(text.find("mountpoint=\"/media/pi/USB STICK\",partition=\"sda1\"} 1\n"), std::string::npos);
  // errors=remount-ro is a policy, not a state.
  EXPECT_NE(text.find("fstype=\"vfat\",mountpoint=\"/boot/firmware\",partition=\"mmcblk0p1\"} 0\n"), std::string::npos);
  // Bind mounts of a subdirectory (/var/log twice, /srv/backup): counted, no series; the root
  // mounts of the same filesystems show their superblock's state.
  EXPECT_EQ(text.find("mountpoint=\"/var/log\""), std::string::npos);
  EXPECT_EQ(text.find("mountpoint=\"/srv/backup\""), std::string::npos);
  EXPECT_EQ(SampleValue(text, "diskprobe_filesystem_mounts_omitted{reason=\"bind\"}"), 3.0);
  // Not on a monitored disk.
  EXPECT_EQ(text.find("/snap/core22"), std::string::npos);
  EXPECT_EQ(text.find("/data\""), std::string::npos);
  EXPECT_EQ(text.find("tmpfs"), std::string::npos);
  // ext4 error records: counts are values (0 included), times absent when never.
  EXPECT_NE(text.find("diskprobe_ext4_errors_total{device=\"mmcblk0\",partition=\"mmcblk0p2\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("diskprobe_ext4_errors_total{device=\"sda\",partition=\"sda1\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("diskprobe_ext4_first_error_timestamp_seconds{device=\"mmcblk0\",partition=\"mmcblk0p2\"} 33\n"),
            std::string::npos);
  EXPECT_EQ(text.find("error_timestamp_seconds{device=\"sda\""), std::string::npos);
}

// A scrape's mounts text is kept while the mount table and the ext4 attributes stay the same and
// follows either when it changes: always what a new collector (no cache) writes.
TEST(Mounts, TextFollowsMountsAndExt4Attributes) {
  TempDir t;
  fs::copy(Fixture("roots/faults"), t.path(), fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  Paths p = FaultsPaths();
  p.sysfs = t.path() + "/sys";
  p.procfs = t.path() + "/proc";
  p.rootfs = t.path();
  DeviceList d = Devices(p);
  ScrapeContext ctx{p, d};
  MountsCollector c;
  auto families_text = [&] {
    MountsCollector fresh;
    auto out = Collect(fresh, ctx);
    EXPECT_TRUE(out.ok());
    return out.text;
  };
  auto scrape_text = [&] {
    auto out = Collect(c, ctx);
    EXPECT_TRUE(out.ok());
    return out.text;
  };
  const std::string first = scrape_text();
  EXPECT_EQ(first, families_text());
  EXPECT_EQ(scrape_text(), first);
  EXPECT_NE(first.find("diskprobe_ext4_errors_total{device=\"sda\",partition=\"sda1\"} 0\n"), std::string::npos);

  std::ofstream(p.sysfs + "/fs/ext4/sda1/errors_count") << "3\n";
  const std::string second = scrape_text();
  EXPECT_NE(second.find("diskprobe_ext4_errors_total{device=\"sda\",partition=\"sda1\"} 3\n"), std::string::npos)
      << second;
  EXPECT_EQ(second, families_text());

  // The vfat boot partition remounted read-only.
  const std::string mountinfo = p.procfs + "/self/mountinfo";
  std::string table = ReadText(fs::exists(p.procfs + "/1/mountinfo") ? p.procfs + "/1/mountinfo" : mountinfo);
  const std::string rw_boot = "/boot/firmware rw,";
  ASSERT_NE(table.find(rw_boot), std::string::npos) << table;
  table.replace(table.find(rw_boot), rw_boot.size(), "/boot/firmware ro,");
  std::ofstream(fs::exists(p.procfs + "/1/mountinfo") ? p.procfs + "/1/mountinfo" : mountinfo) << table;
  const std::string third = scrape_text();
  EXPECT_NE(third.find("fstype=\"vfat\",mountpoint=\"/boot/firmware\",partition=\"mmcblk0p1\"} 1\n"), std::string::npos)
      << third;
  EXPECT_EQ(third, families_text());
}

// /proc/1 hidden (ProtectProc=invisible): our own namespace, where ProtectSystem=strict makes "/"
// a read-only *mount* of a writable filesystem. Only the superblock says read-only there (the
// packaged unit once reported every root filesystem read-only this way).
TEST(Mounts, SelfWhenPid1IsHidden) {
  TempDir t;
  fs::create_directories(t.path() + "/self");
  std::ofstream(t.path() + "/self/mountinfo")
      << "27 1 179:2 / / ro,noatime shared:1 - ext4 /dev/mmcblk0p2 rw\n"
      << "28 27 179:1 / /boot/firmware ro,relatime shared:2 - vfat /dev/mmcblk0p1 ro,fmask=0022\n";
  Paths p = FaultsPaths();
  p.procfs = t.path();
  DeviceList d = Devices(p);
  MountsCollector c;
  auto out = Collect(c, ScrapeContext{p, d});
  ASSERT_TRUE(out.ok());
  const std::string& text = out.text;
  EXPECT_NE(text.find("mountpoint=\"/\",partition=\"mmcblk0p2\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mountpoint=\"/boot/firmware\",partition=\"mmcblk0p1\"} 1\n"), std::string::npos) << text;
}

// 10,000 bind mounts of one directory of the root filesystem (kubelet volumes) gave 10,001
// series; now the root mount's series and a count. Mounts of the filesystem's root beyond the
// series limit are counted too.
TEST(Mounts, BindMountsAndSeriesAreBounded) {
  TempDir t;
  fs::create_directories(t.path() + "/self");
  {
    std::ofstream m(t.path() + "/self/mountinfo");
    m << "27 1 179:2 / / rw,noatime shared:1 - ext4 /dev/mmcblk0p2 rw\n";
    for (int i = 0; i < 10000; ++i)
      m << 100 + i << " 27 179:2 /var/lib/kubelet/pods/" << i << " /var/lib/kubelet/pods/" << i
        << "/volumes/v rw,relatime shared:1 - ext4 /dev/mmcblk0p2 rw\n";
    for (int i = 0; i < 100; ++i)
      m << 20000 + i << " 27 179:2 / /srv/root" << i << " rw,relatime - ext4 /dev/mmcblk0p2 rw\n";
    // Mounted over: one series, the visible (later) mount.
    m << "29000 27 179:2 / /srv/root0 rw,relatime - ext4 /dev/mmcblk0p2 ro\n";
    // A filesystem seen only through a bind mount keeps one series.
    m << "30000 27 179:1 /overlays /mnt/overlays rw - vfat /dev/mmcblk0p1 rw\n";
    m << "30001 27 179:1 /overlays /mnt/overlays2 rw - vfat /dev/mmcblk0p1 rw\n";
  }
  Paths p = FaultsPaths();
  p.procfs = t.path();
  p.sysfs = FaultsPaths().sysfs;
  DeviceList d = Devices(p);
  MountsCollector c;
  auto out = Collect(c, ScrapeContext{p, d});
  ASSERT_TRUE(out.ok()) << out.result.error;
  std::size_t series = 0;
  for (std::size_t pos = 0; (pos = out.text.find("\ndiskprobe_filesystem_read_only{", pos)) != std::string::npos; ++pos)
    ++series;
  EXPECT_EQ(series, MountsCollector::kMaxFilesystemSeries);
  EXPECT_EQ(out.text.find("/var/lib/kubelet"), std::string::npos);
  EXPECT_NE(out.text.find("mountpoint=\"/mnt/overlays\",partition=\"mmcblk0p1\"} 0\n"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("mountpoint=\"/srv/root0\",partition=\"mmcblk0p2\"} 1\n"), std::string::npos);
  EXPECT_EQ(SampleValue(out.text, "diskprobe_filesystem_mounts_omitted{reason=\"bind\"}"), 10001.0);
  // 101 root mounts of mmcblk0p2 + 1 of mmcblk0p1 = 102 candidates, 64 exported.
  EXPECT_EQ(SampleValue(out.text, "diskprobe_filesystem_mounts_omitted{reason=\"limit\"}"),
            102.0 - MountsCollector::kMaxFilesystemSeries);
}

// A table larger than the read limit was cut silently (18,451 of 50,001 mounts seen); now what
// was read is exported and the collector fails with the reason.
TEST(Mounts, TableBeyondTheReadLimitFailsTheCollector) {
  TempDir t;
  fs::create_directories(t.path() + "/self");
  std::string table = "27 1 179:2 / / rw,noatime shared:1 - ext4 /dev/mmcblk0p2 rw\n";
  for (int i = 0; i < 500; ++i)
    table += std::to_string(100 + i) + " 27 0:" + std::to_string(50 + i) + " / /run/x" + std::to_string(i) +
             " rw - tmpfs tmpfs rw\n";
  table += "900 27 179:1 / /boot/firmware rw - vfat /dev/mmcblk0p1 rw\n";  // past the limit
  std::ofstream(t.path() + "/self/mountinfo") << table;
  Paths p = FaultsPaths();
  p.procfs = t.path();
  DeviceList d = Devices(p);

  MountsCollector whole;  // the default limit reads it all
  auto all = Collect(whole, ScrapeContext{p, d});
  ASSERT_TRUE(all.ok()) << all.result.error;
  EXPECT_NE(all.text.find("mountpoint=\"/boot/firmware\""), std::string::npos);

  MountsCollector small(4096);
  auto cut = Collect(small, ScrapeContext{p, d});
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.result.error.find("mountinfo: larger than 4096 bytes; read the first "), std::string::npos)
      << cut.result.error;
  EXPECT_NE(cut.result.error.find(" mounts, the rest not seen"), std::string::npos);
  EXPECT_NE(cut.text.find("mountpoint=\"/\",partition=\"mmcblk0p2\"} 0\n"), std::string::npos) << cut.text;
  EXPECT_EQ(cut.text.find("/boot/firmware"), std::string::npos);
}

TEST(Mounts, UnreadableMountinfoFails) {
  Paths p = FaultsPaths();
  p.procfs = "/nonexistent-procfs";
  DeviceList d = Devices(p);
  MountsCollector c;
  auto out = Collect(c, ScrapeContext{p, d});
  EXPECT_EQ(out.result.error,
            "/nonexistent-procfs/1/mountinfo: No such file or directory; "
            "/nonexistent-procfs/self/mountinfo: No such file or directory");
  EXPECT_EQ(out.text, "");
}

// --- kmsg: resolver and counter --------------------------------------------------------------

TEST(KmsgResolver, SysfsNamesAndHosts) {
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  EXPECT_EQ(r.DiskOf("mmcblk0p2"), "mmcblk0");
  EXPECT_EQ(r.DiskOf("mmcblk0"), "mmcblk0");
  EXPECT_EQ(r.DiskOf("sda1"), "sda");
  EXPECT_EQ(r.DiskOf("loop7p1"), "loop7");        // gone from sysfs: the naming rules
  EXPECT_EQ(r.DiskOf("../../etc"), "../../etc");  // never joined into a path
  EXPECT_EQ(r.HostOfDisk("mmcblk0"), "mmc0");
  EXPECT_EQ(r.HostOfDisk("sda"), "");
  EXPECT_EQ(r.DiskOfHost("mmc0"), "mmcblk0");
  EXPECT_EQ(r.DiskOfHost("mmc1"), "");  // SDIO
  EXPECT_EQ(r.DiskOfHost("mmc9"), "");
}

TEST(KmsgCounter, ContinuationUserspaceGapsAndMalformed) {
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  c.AddRecord("3,10,0,c;I/O error, dev ");
  c.AddRecord("3,11,0,+;mmcblk0p2, sector 8 op 0x1:(WRITE) flags 0x800 phys_seg 1 prio class 2\n");
  c.AddRecord("30,12,0,-;mmc0: timeout waiting for hardware interrupt.\n");  // facility 3: userspace
  c.AddRecord("3,20,0,-;mmc0: timeout waiting for hardware interrupt.\n");   // 13..19 lost
  c.AddRecord("garbage\n");
  c.AddRecord("3,15,0,-;mmcblk0: recovery failed!\n");  // older than the last: no negative gap
  c.Idle();
  KmsgCounts want = {
      {{"mmcblk0", "mmc0", KmsgKind::kIoError}, 1},
      {{"mmcblk0", "mmc0", KmsgKind::kTimeout}, 1},
      {{"mmcblk0", "mmc0", KmsgKind::kCardRemoved}, 1},
  };
  EXPECT_EQ(c.counts(), want);
  EXPECT_EQ(c.records(), 5u);
  EXPECT_EQ(c.lost(), 7u);
  EXPECT_EQ(c.malformed(), 1u);
}

// A file or pipe can hold the same record twice (a log appended twice, a collector that
// re-sends); /dev/kmsg never does. Sequence numbers restart at each boot, so a file holding two
// boots repeats them with other timestamps: those records count.
TEST(KmsgCounter, RepeatedRecordsCountOnce) {
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  const std::string line = "3,40,5000,-;mmc0: timeout waiting for hardware interrupt.\n";
  c.AddRecord(line);
  c.AddRecord(line);                                                        // repeat
  c.AddRecord("3,40,9000,-;mmc0: timeout waiting for hardware interrupt.\n");  // next boot, same seq
  c.AddRecord("3,41,5001,-;mmc0: timeout waiting for hardware interrupt.\n");
  for (std::size_t i = 0; i < KmsgCounter::kRecentRecords; ++i)              // push line out of the window
    c.AddRecord("3," + std::to_string(100 + i) + ",6000,-;hello\n");
  c.AddRecord(line);  // too old to be recognised: counted again
  c.Idle();
  KmsgCounts want = {{{"mmcblk0", "mmc0", KmsgKind::kTimeout}, 4}};
  EXPECT_EQ(c.counts(), want);
  EXPECT_EQ(c.duplicate(), 1u);
  EXPECT_EQ(c.records(), 4u + KmsgCounter::kRecentRecords);
}

TEST(KmsgCounter, SuppressedGoToTheNextEventOfTheirKind) {
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  c.AddRecord("4,1,0,-;EXT4-fs error: 20 callbacks suppressed\n");
  c.AddRecord("3,2,0,-;mmc0: timeout waiting for hardware interrupt.\n");  // another kind in between
  c.AddRecord(
      "3,3,0,-;EXT4-fs error (device sda1): ext4_find_extent:916: inode #16: comm rs:main Q:Reg: pblk 25 "
      "bad header/extent: extent tree corrupted - magic f30a, entries 12, max 340(340), depth 0(0)\n");
  c.AddRecord("3,4,0,-;buffer_io_error: 6 callbacks suppressed\n");  // nothing follows
  c.Idle();
  EXPECT_EQ(c.counts().at({"sda", "", KmsgKind::kFilesystemError}), 21u);
  EXPECT_EQ(c.counts().at({"", "", KmsgKind::kIoError}), 6u);

  // Past the horizon, a suppressed count is not given to an unrelated later message.
  KmsgCounter h(&r);
  h.AddRecord("3,1,0,-;blk_update_request: 5 callbacks suppressed\n");
  for (int i = 0; i <= KmsgCounter::kSuppressedHorizon; ++i)
    h.AddRecord("6," + std::to_string(i + 2) + ",0,-;unrelated\n");
  h.AddRecord("3,999,0,-;blk_update_request: I/O error, dev sda, sector 8\n");
  EXPECT_EQ(h.counts().at({"", "", KmsgKind::kIoError}), 5u);
  EXPECT_EQ(h.counts().at({"sda", "", KmsgKind::kIoError}), 1u);
}

// A new device name in every record gave 1.45 M series: names that are not monitored disks are
// counted without their name, and even monitored names are capped.
// Lines that name a controller (SCSI host or device, USB device, mmc platform device) count for
// the one disk below it in sysfs; the fixture's sda sits below 2-1/2-1:1.0/host0/0:0:0:0 and
// mmcblk0 below fe340000.mmc.
TEST(KmsgCounter, ControllersCountForTheDiskBelowThem) {
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  c.AddRecord("6,1,0,-;scsi host0: uas_eh_device_reset_handler start\n");
  c.AddRecord("6,2,0,-;usb 2-1: reset SuperSpeed USB device number 2 using xhci_hcd\n");
  c.AddRecord("3,3,0,-;sd 0:0:0:0: Device offlined - not ready after error recovery\n");
  c.AddRecord("3,4,0,-;sd 0:0:0:0: [sda] tag#1 uas_eh_abort_handler 0 uas-tag 2 inflight: CMD IN \n");
  c.AddRecord("3,5,0,-;sdhci-iproc fe340000.mmc: error -110 requesting status\n");
  c.AddRecord("4,6,0,-;nvme nvme0: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0x10\n");
  // An unknown call site's count goes to the very next record only if it counts.
  c.AddRecord("4,7,0,-;__ratelimit: 5 callbacks suppressed\n");
  c.AddRecord("6,8,0,-;usb 2-1: reset SuperSpeed USB device number 2 using xhci_hcd\n");
  c.AddRecord("4,9,0,-;__ratelimit: 9 callbacks suppressed\n");
  c.AddRecord("6,10,0,-;usb 2-1: new SuperSpeed USB device number 3 using xhci_hcd\n");
  c.AddRecord("6,11,0,-;usb 2-1: reset SuperSpeed USB device number 3 using xhci_hcd\n");
  c.Idle();
  KmsgCounts want = {
      {{"sda", "", KmsgKind::kReset}, 1 + 1 + 6 + 1},
      {{"sda", "", KmsgKind::kCardRemoved}, 1},
      {{"sda", "", KmsgKind::kTimeout}, 1},
      {{"mmcblk0", "mmc0", KmsgKind::kTimeout}, 1},
  };
  EXPECT_EQ(c.counts(), want);
  // No nvme0 in the fixture: counted without a name.
  KmsgUnattributed unattributed = {{{KmsgUnattributedReason::kUnmonitored, KmsgKind::kReset}, 1}};
  EXPECT_EQ(c.unattributed(), unattributed);
}

TEST(KmsgCounter, DeviceNamesAreBounded) {
  using Reason = KmsgUnattributedReason;
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  const int n = 20000;
  for (int i = 0; i < n; ++i)
    c.AddRecord("3," + std::to_string(i) + ",0,-;I/O error, dev fake" + std::to_string(i) + "q, sector 8\n");
  c.AddRecord("3,20000,0,-;I/O error, dev sda, sector 8\n");                  // a disk of the fixture
  c.AddRecord("3,20001,0,-;mmc7: error -110 whilst initialising SD card\n");  // a host sysfs does not know
  c.Idle();
  KmsgCounts want = {{{"sda", "", KmsgKind::kIoError}, 1}};
  EXPECT_EQ(c.counts(), want);
  EXPECT_EQ(c.unattributed().at({Reason::kUnmonitored, KmsgKind::kIoError}), static_cast<std::uint64_t>(n));
  EXPECT_EQ(c.unattributed().at({Reason::kUnmonitored, KmsgKind::kTimeout}), 1u);

  // Every name monitored (a fuzzed filter): no more than kMaxDevices names get series.
  KmsgCounter all(&r, [](const std::string&) { return true; });
  for (int i = 0; i < n; ++i)
    all.AddRecord("3," + std::to_string(i) + ",0,-;I/O error, dev fake" + std::to_string(i) + "q, sector 8\n");
  EXPECT_EQ(all.counts().size(), KmsgCounter::kMaxDevices);
  EXPECT_EQ(all.unattributed().at({Reason::kLimit, KmsgKind::kIoError}), n - KmsgCounter::kMaxDevices);
}

// Ring-buffer errors of a previous card under the same name were the new card's after a restart.
TEST(KmsgCounter, RecordsBeforeADevicesAppearanceAreNotItsOwn) {
  using Reason = KmsgUnattributedReason;
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  KmsgCounter c(&r);
  c.AddRecord("3,1,1000,-;I/O error, dev sda, sector 8\n");
  c.AddRecord("3,2,1001,-;I/O error, dev sda1, sector 8\n");
  c.AddRecord("3,3,1002,-;mmcblk0: error -110 sending status command, retrying\n");
  c.AddRecord("6,4,5000,-;mmc0: card aaaa removed\n");
  // The new card and the new USB medium, as their drivers log them before any I/O.
  c.AddRecord("6,5,9000,-;mmcblk0: mmc0:bbbb SD64G 59.5 GiB\n");
  c.AddRecord("5,6,9001,-;sd 0:0:0:0: [sda] 62333952 512-byte logical blocks: (31.9 GB/29.7 GiB)\n");
  c.AddRecord("3,7,9002,-;I/O error, dev sda, sector 16\n");
  c.Idle();
  KmsgCounts want = {{{"sda", "", KmsgKind::kIoError}, 1}};
  EXPECT_EQ(c.counts(), want);
  EXPECT_EQ(c.unattributed().at({Reason::kPreviousDevice, KmsgKind::kIoError}), 2u);
  EXPECT_EQ(c.unattributed().at({Reason::kPreviousDevice, KmsgKind::kTimeout}), 1u);
  EXPECT_EQ(c.unattributed().at({Reason::kPreviousDevice, KmsgKind::kCardRemoved}), 1u);
}

// --- kmsg: the follower ----------------------------------------------------------------------

// The message of a dmesg line "[  303.215569] text".
std::string DmesgMessage(const std::string& line) {
  std::size_t close = line.find("] ");
  return close == std::string::npos ? line : line.substr(close + 2);
}

// Every sample of tests/fixtures/samples/kmsg, as /dev/kmsg records through a pipe, counted as the
// classifier says line by line (the .expected files are asserted line by line in kmsg_test.cpp).
TEST(KmsgFollower, AllSamplesThroughAPipe) {
  std::string records;
  KmsgDeviceResolver r(FaultsPaths().sysfs);
  std::map<std::string, std::uint64_t> want;  // kind -> messages, rate-limited ones included
  std::uint64_t seq = 0;
  for (const auto& e : fs::directory_iterator(Fixture("samples/kmsg"))) {
    if (e.path().extension() != ".txt") continue;
    std::istringstream in(ReadText(e.path().string()));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::string msg;
      if (line[0] == '[') {
        msg = DmesgMessage(line);
      } else if (line[0] != ' ' && line.find(';') != std::string::npos) {
        records += line + "\n";  // sample 00 is in the record format already (its own numbers)
        continue;
      } else {
        continue;
      }
      if (auto ev = parsers::ClassifyKmsg(msg)) want[std::string(parsers::ToString(ev->kind))] += ev->count;
      records += "3," + std::to_string(1000 + seq++) + ",0,-;" + msg + "\n";
    }
  }
  ASSERT_GT(seq, 40u);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  KmsgFollower f("(pipe)", FaultsPaths().sysfs);
  f.StartFd(p[0]);
  // Written in odd-sized pieces: records split across reads must be reassembled.
  for (std::size_t i = 0; i < records.size(); i += 777) {
    std::string_view piece = std::string_view(records).substr(i, 777);
    ASSERT_EQ(::write(p[1], piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
  }
  ::close(p[1]);
  KmsgSnapshot s = WaitDrained(f, seq);
  EXPECT_EQ(s.error, "");
  EXPECT_EQ(s.malformed, 0u);
  std::map<std::string, std::uint64_t> got;
  for (const auto& [k, v] : s.messages) got[std::string(parsers::ToString(std::get<2>(k)))] += v;
  // Messages of disks the fixture does not have, or of a card replaced later, are counted too.
  for (const auto& [k, v] : s.unattributed) got[std::string(parsers::ToString(k.second))] += v;
  got.erase("under_voltage");  // Snapshot's zero series
  for (auto it = got.begin(); it != got.end();) it = it->second == 0 ? got.erase(it) : std::next(it);
  want.erase("under_voltage");
  EXPECT_EQ(got, want);
  EXPECT_GE(want.size(), 6u);
  auto start = std::chrono::steady_clock::now();
  f.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(KmsgFollower, FollowsAFileLikeTailF) {
  TempDir t;
  const std::string path = t.path() + "/kmsg";
  std::ofstream(path) << "3,1,0,-;mmc0: timeout waiting for hardware interrupt.\n";
  KmsgFollower f(path, FaultsPaths().sysfs);
  ASSERT_TRUE(f.Start());
  KmsgSnapshot s = WaitDrained(f, 1);
  EXPECT_EQ(Count(s, "mmcblk0", "mmc0", KmsgKind::kTimeout), 1u);
  std::ofstream(path, std::ios::app)
      << "3,2,0,-;I/O error, dev sda, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0\n"
         " SUBSYSTEM=block\n DEVICE=b8:0\n";
  s = WaitDrained(f, 2);
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(Count(s, "sda", "", KmsgKind::kIoError), 1u);
  // Zero series for every kind of each disk asked for, with the disk's host.
  s = f.Snapshot({"mmcblk0"});
  EXPECT_EQ(s.messages.count({"mmcblk0", "mmc0", KmsgKind::kCrcError}), 1u);
  EXPECT_EQ(Count(s, "mmcblk0", "mmc0", KmsgKind::kCrcError), 0u);
  EXPECT_EQ(s.messages.count({"", "", KmsgKind::kUnderVoltage}), 1u);
  auto start = std::chrono::steady_clock::now();
  f.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500)) << "the stop pipe wakes poll()";
}

// A named pipe whose writers come after start-up, one after another (a replay tool, a test
// harness): every writer's records are read.
TEST(KmsgFollower, FollowsANamedPipeWhoseWritersComeLater) {
  TempDir t;
  const std::string path = t.path() + "/kmsg.fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  KmsgFollower f(path, FaultsPaths().sysfs);
  ASSERT_TRUE(f.Start());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the follower reads first: no writer yet
  for (int i = 1; i <= 2; ++i) {
    int w = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(w, 0);
    std::string rec = "3," + std::to_string(i) + ",0,-;I/O error, dev sda, sector 8 op 0x0:(READ) flags 0x0\n";
    ASSERT_EQ(::write(w, rec.data(), rec.size()), static_cast<ssize_t>(rec.size()));
    ::close(w);
  }
  KmsgSnapshot s = WaitDrained(f, 2);
  EXPECT_EQ(s.records, 2u);
  EXPECT_EQ(s.error, "");
  auto start = std::chrono::steady_clock::now();
  f.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

// Past the name limit a disk has no zero series (it would read 0 while its errors are counted
// as reason="limit"); the disks within it keep theirs.
TEST(KmsgFollower, DisksPastTheNameLimitHaveNoZeroSeries) {
  TempDir t;
  const std::size_t n = KmsgCounter::kMaxDevices + 6;
  for (std::size_t i = 0; i < n; ++i) fs::create_directories(t.path() + "/sys/block/loop" + std::to_string(i));
  std::string records;
  for (std::size_t i = 0; i < n; ++i)
    records += "3," + std::to_string(i + 1) + ",0,-;I/O error, dev loop" + std::to_string(i) + ", sector 8\n";
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  KmsgFollower f("(pipe)", t.path() + "/sys");
  f.StartFd(p[0]);
  for (std::size_t i = 0; i < records.size(); i += 4096) {
    std::string_view piece = std::string_view(records).substr(i, 4096);
    ASSERT_EQ(::write(p[1], piece.data(), piece.size()), static_cast<ssize_t>(piece.size()));
  }
  ::close(p[1]);
  const std::string first = "loop0", last = "loop" + std::to_string(n - 1);
  KmsgSnapshot s = WaitDrained(f, n, {first, last});
  ASSERT_EQ(s.records, n);
  EXPECT_EQ(Count(s, first, "", KmsgKind::kIoError), 1u);
  EXPECT_EQ(s.messages.count({first, "", KmsgKind::kCrcError}), 1u) << "zero series within the limit";
  for (const auto& [k, v] : s.messages) EXPECT_NE(std::get<0>(k), last) << "a series for a disk past the limit";
  EXPECT_EQ(s.unattributed.at({KmsgUnattributedReason::kLimit, KmsgKind::kIoError}), 6u);
  f.Stop();
}

// A followed file that is truncated and written again is read from its start again.
TEST(KmsgFollower, ReadsATruncatedFileFromItsStart) {
  TempDir t;
  const std::string path = t.path() + "/kmsg";
  {
    std::ofstream out(path);
    for (int i = 1; i <= 5; ++i) out << "3," << i << ",0,-;mmc0: timeout waiting for hardware interrupt.\n";
  }
  KmsgFollower f(path, FaultsPaths().sysfs);
  ASSERT_TRUE(f.Start());
  KmsgSnapshot s = WaitDrained(f, 5);
  ASSERT_EQ(s.records, 5u);
  std::ofstream(path, std::ios::trunc) << "3,6,0,-;I/O error, dev sda, sector 8 op 0x0:(READ) flags 0x0\n";
  s = WaitDrained(f, 6);
  EXPECT_EQ(s.records, 6u);
  f.Stop();
}

// A scrape's kmsg text is kept while the counts stay the same and follows them when a message
// (or any record) arrives: always what a new collector (no cache) writes.
TEST(KmsgCollector, TextFollowsTheCounts) {
  TempDir t;
  const std::string path = t.path() + "/kmsg";
  std::ofstream(path) << "3,1,0,-;mmc0: timeout waiting for hardware interrupt.\n";
  auto follower = std::make_shared<KmsgFollower>(path, FaultsPaths().sysfs);
  ASSERT_TRUE(follower->Start());
  WaitDrained(*follower, 1);
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  ScrapeContext ctx{p, d};
  KmsgCollector kmsg(follower.get());
  auto families_text = [&] {
    KmsgCollector fresh(follower.get());
    auto out = Collect(fresh, ctx);
    EXPECT_TRUE(out.ok());
    return out.text;
  };
  auto scrape_text = [&] {
    auto out = Collect(kmsg, ctx);
    EXPECT_TRUE(out.ok());
    return out.text;
  };
  const std::string first = scrape_text();
  EXPECT_EQ(first, families_text());
  EXPECT_NE(first.find("diskprobe_kernel_messages_total{device=\"mmcblk0\",host=\"mmc0\",kind=\"timeout\"} 1\n"),
            std::string::npos)
      << first;
  EXPECT_EQ(scrape_text(), first);
  std::ofstream(path, std::ios::app) << "3,2,0,-;mmc0: timeout waiting for hardware interrupt.\n";
  WaitDrained(*follower, 2);
  const std::string second = scrape_text();
  EXPECT_EQ(second, families_text());
  EXPECT_NE(second.find("diskprobe_kernel_messages_total{device=\"mmcblk0\",host=\"mmc0\",kind=\"timeout\"} 2\n"),
            std::string::npos)
      << second;
  // A record that is no card message moves only the record count.
  std::ofstream(path, std::ios::app) << "6,3,0,-;usb 1-1: new high-speed USB device number 2\n";
  WaitDrained(*follower, 3);
  const std::string third = scrape_text();
  EXPECT_EQ(third, families_text());
  EXPECT_NE(third.find("diskprobe_kernel_log_records_total 3\n"), std::string::npos) << third;
  follower->Stop();
}

// dmesg's human text given as --path.kmsg: no line is a record. The collector fails (one log line
// from the scraper, the message does not change) and shows the log's own counters, not zeros.
TEST(KmsgCollector, InputWithNoRecordFailsWithTheLogCountersOnly) {
  TempDir t;
  const std::string path = t.path() + "/dmesg.txt";
  std::ofstream(path) << "[    2.226450] mmc0: error -5 whilst initialising MMC card\n"
                         "[    2.355168] mmc0: command never completed.\n";
  auto follower = std::make_shared<KmsgFollower>(path, FaultsPaths().sysfs);
  ASSERT_TRUE(follower->Start());
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  ScrapeContext ctx{p, d};
  KmsgCollector kmsg(follower.get());
  for (int i = 0; i < 200 && follower->Snapshot().malformed < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  auto out = Collect(kmsg, ctx);
  EXPECT_NE(out.result.error.find(path + ": no line read is a /dev/kmsg record"), std::string::npos)
      << out.result.error;
  EXPECT_EQ(out.text.find("diskprobe_kernel_messages_total"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("diskprobe_kernel_log_skipped_records_total{reason=\"malformed\"} 2\n"), std::string::npos)
      << out.text;
  EXPECT_EQ(Collect(kmsg, ctx).result.error, out.result.error);  // the same text: logged once
  // One record in the kernel's format and the counts are the log's again.
  std::ofstream(path, std::ios::app) << "3,1,0,-;mmc0: timeout waiting for hardware interrupt.\n";
  WaitDrained(*follower, 1);
  out = Collect(kmsg, ctx);
  EXPECT_TRUE(out.ok()) << out.result.error;
  EXPECT_NE(out.text.find("diskprobe_kernel_messages_total{device=\"mmcblk0\",host=\"mmc0\",kind=\"timeout\"} 1\n"),
            std::string::npos);
  follower->Stop();
}

// One endless line without a newline kept 97 MB and a core busy: now it is skipped up to its
// newline and counted; the records around it count as before.
TEST(KmsgFollower, OversizedLinesAreSkippedAndCounted) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  KmsgFollower f("(pipe)", FaultsPaths().sysfs);
  f.StartFd(p[0]);
  auto put = [&](const std::string& text) {
    for (std::size_t i = 0; i < text.size();) {
      ssize_t n = ::write(p[1], text.data() + i, text.size() - i);
      ASSERT_GT(n, 0);
      i += static_cast<std::size_t>(n);
    }
  };
  put("3,1,0,-;I/O error, dev sda, sector 8\n");
  const std::string chunk(1 << 16, 'x');
  put("3,2,0,-;");
  for (int i = 0; i < 64; ++i) put(chunk);  // 4 MiB of one line
  put("\n3,3,0,-;I/O error, dev sda, sector 16\n");
  put("3,4,0,-;" + std::string(parsers::kKmsgRecordMax, 'y') + "\n");       // just over the size
  put("3,5,0,-;" + std::string(parsers::kKmsgRecordMax - 16, 'z') + "\n");  // within it
  ::close(p[1]);
  KmsgSnapshot s = WaitDrained(f, 3);
  EXPECT_EQ(s.oversized, 2u);
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(Count(s, "sda", "", KmsgKind::kIoError), 2u);
  f.Stop();
}

TEST(KmsgFollower, MissingPathIsAnError) {
  KmsgFollower f("/nonexistent/kmsg", "/sys");
  EXPECT_FALSE(f.Start());
  EXPECT_EQ(f.Snapshot().error, "/nonexistent/kmsg: No such file or directory");
  f.Stop();
}

// --- the two collectors on the fixture root: golden exposition -------------------------------

TEST(FaultsRoot, GoldenExposition) {
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  auto follower = std::make_shared<KmsgFollower>(p.kmsg, p.sysfs);
  ASSERT_TRUE(follower->Start());
  KmsgSnapshot s = WaitDrained(*follower, 36);
  EXPECT_EQ(s.records, 36u);
  MountsCollector mounts;
  KmsgCollector kmsg(follower.get());
  ScrapeContext ctx{p, d};
  auto scrape = [&] {
    std::string text;
    FamilySink out(&text);
    EXPECT_TRUE(mounts.Collect(ctx, out).ok());
    EXPECT_TRUE(kmsg.Collect(ctx, out).ok());
    return text;
  };
  const std::string first = scrape();
  testing::ExpectGolden("roots_faults.prom", first);
  // The second scrape comes from the collectors' cached text: the same page.
  EXPECT_EQ(scrape(), first);
}

TEST(FaultsRoot, UnreadableKernelLog) {
  Paths p = FaultsPaths();
  DeviceList d = Devices(p);
  KmsgFollower follower("/nonexistent/kmsg", p.sysfs);
  EXPECT_FALSE(follower.Start());
  KmsgCollector kmsg(&follower);
  auto out = Collect(kmsg, ScrapeContext{p, d});
  EXPECT_EQ(out.result.error, "/nonexistent/kmsg: No such file or directory");
  EXPECT_EQ(out.text, "");
  EXPECT_EQ(Collect(kmsg, ScrapeContext{p, d}).result.error, out.result.error);
  // No follower at all (the wiring did not start one): a failure too, not an empty success.
  KmsgCollector none(nullptr);
  EXPECT_EQ(Collect(none, ScrapeContext{p, d}).result.error, "the kernel log follower was not started");
}

}  // namespace
}  // namespace diskprobe::collectors
