// SD vendor health over CMD56: the layouts on recorded replies (exact values, the card's own
// report), the plausibility checks on recorded garbage, the background reader with a fake
// command (rejections, errors, a hanging card), the real ioctl's error path on a file that is not
// an MMC device, and the collector's exposition.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <mutex>
#include <sstream>

#include "collect_util.h"
#include "collectors/sd_vendor.h"
#include "parsers/sd_vendor_health.h"
#include "sources/sd_vendor_health.h"
#include "test_util.h"

namespace diskprobe {
namespace {

using parsers::ParseSdVendorReply;
using parsers::SdGenCmdBlock;
using parsers::SdReject;
using parsers::SdVendorLayout;

// A fixture: "# ..." comment lines, then 32 lines of 16 hex bytes. Fails the test unless it holds
// exactly 512 bytes.
SdGenCmdBlock Reply(const std::string& name) {
  SdGenCmdBlock b{};
  std::istringstream in(testing::ReadText(testing::Fixture("samples/sd-cmd56/" + name)));
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream bytes(line);
    std::string h;
    while (bytes >> h) {
      if (n >= b.size()) {
        ADD_FAILURE() << name << ": more than 512 bytes";
        return b;
      }
      b[n++] = static_cast<std::uint8_t>(std::stoul(h, nullptr, 16));
    }
  }
  EXPECT_EQ(n, b.size()) << name;
  return b;
}

TEST(SdVendorLayouts, EveryRowHasADistinctNameAndAutoHasNoTwoStep) {
  std::set<std::string_view> names;
  for (const auto& l : parsers::SdVendorLayouts()) {
    EXPECT_TRUE(names.insert(l.name).second) << l.name;
    EXPECT_EQ(parsers::FindSdVendorLayout(l.name), &l);
    EXPECT_EQ(&parsers::InfoOf(l.layout), &l);
    EXPECT_FALSE(l.in_auto && l.prepare_write_arg) << l.name << ": auto must never send a write";
    EXPECT_FALSE(l.source.empty());
  }
  EXPECT_EQ(parsers::FindSdVendorLayout("auto"), nullptr);
  EXPECT_EQ(parsers::FindSdVendorLayout("sandisk")->read_arg, 0x00000001u);
  EXPECT_EQ(*parsers::FindSdVendorLayout("apacer")->prepare_write_arg, 0x10u);
  EXPECT_EQ(parsers::FindSdVendorLayout("apacer")->read_arg, 0x21u);
  EXPECT_EQ(parsers::FindSdVendorLayout("swissbit")->read_arg, 0x53420001u);
}

// The Western Digital card's real reply: health status 1 % used, as the card reports in byte 8.
TEST(SdVendorParse, WesternDigitalRealReply) {
  SdReject rej;
  auto h = ParseSdVendorReply(SdVendorLayout::kSandisk, Reply("01-wd-industrial-arg1-real.txt"), &rej);
  ASSERT_TRUE(h) << rej.reason << ": " << rej.detail;
  EXPECT_EQ(*h->life_used_percent, 1.0);
  EXPECT_FALSE(h->power_cycles);  // not taken from this layout
  EXPECT_FALSE(h->erase_count_average);
  // The same bytes are no other layout's.
  for (const auto& l : parsers::SdVendorLayouts()) {
    if (l.layout == SdVendorLayout::kSandisk || l.layout == SdVendorLayout::kApacer) continue;
    EXPECT_FALSE(ParseSdVendorReply(l.layout, Reply("01-wd-industrial-arg1-real.txt"), &rej)) << l.name;
    EXPECT_EQ(rej.reason, parsers::kSdRejectSignature) << l.name;
  }
}

TEST(SdVendorParse, SwissbitReply) {
  SdReject rej;
  auto h = ParseSdVendorReply(SdVendorLayout::kSwissbit, Reply("04-swissbit-s56u-reconstructed.txt"), &rej);
  ASSERT_TRUE(h) << rej.detail;
  EXPECT_EQ(*h->life_used_percent, 1.0);  // 99 % remaining
  EXPECT_EQ(*h->erase_count_max, 3u);
  EXPECT_EQ(*h->erase_count_average, 1.0);
  EXPECT_EQ(*h->spare_blocks, 482u);
  EXPECT_EQ(*h->grown_bad_blocks, 0u);
  EXPECT_EQ(*h->power_cycles, 19u);
}

TEST(SdVendorParse, ApacerReply) {
  SdReject rej;
  auto h = ParseSdVendorReply(SdVendorLayout::kApacer, Reply("05-apacer-industrial-reconstructed.txt"), &rej);
  ASSERT_TRUE(h) << rej.detail;
  EXPECT_NEAR(*h->life_used_percent, 0.03, 1e-9);  // 99.97 % remaining
  EXPECT_EQ(*h->erase_count_average, 1.0);
  EXPECT_EQ(*h->erase_count_max, 5u);
  EXPECT_EQ(*h->power_cycles, 55u);
  EXPECT_EQ(*h->abnormal_power_losses, 0u);
  EXPECT_EQ(*h->grown_bad_blocks, 0u);
}

// A data sector (x86 boot code) answered to CMD56: no layout takes it as health.
TEST(SdVendorParse, RecordedGarbageIsRejectedByEveryLayout) {
  const SdGenCmdBlock mbr = Reply("02-ld-card-mbr-garbage-real.txt");
  for (const auto& l : parsers::SdVendorLayouts()) {
    SdReject rej;
    EXPECT_FALSE(ParseSdVendorReply(l.layout, mbr, &rej)) << l.name;
    EXPECT_FALSE(rej.reason.empty()) << l.name;
  }
  SdReject rej;
  ParseSdVendorReply(SdVendorLayout::kApacer, mbr, &rej);
  EXPECT_EQ(rej.reason, parsers::kSdRejectRange);  // its "good block rate" would be 194 %
}

TEST(SdVendorParse, AllOnesAndAllZerosAreRejected) {
  const SdGenCmdBlock ff = Reply("03-sandisk-2step-all-ff-real.txt");
  SdGenCmdBlock zero{};
  for (const auto& l : parsers::SdVendorLayouts()) {
    SdReject rej;
    EXPECT_FALSE(ParseSdVendorReply(l.layout, ff, &rej));
    EXPECT_EQ(rej.reason, parsers::kSdRejectAllOnes);
    EXPECT_FALSE(ParseSdVendorReply(l.layout, zero, &rej));
    EXPECT_EQ(rej.reason, parsers::kSdRejectAllZero);
  }
}

// QEMU's emulated SD card through the real kernel path: a block of EC, for every argument.
TEST(SdVendorParse, RecordedQemuCardReplyIsRejected) {
  const SdGenCmdBlock ec = Reply("06-qemu-raspi3b-card-arg1-recorded.txt");
  for (const auto& l : parsers::SdVendorLayouts()) {
    SdReject rej;
    EXPECT_FALSE(ParseSdVendorReply(l.layout, ec, &rej)) << l.name;
    EXPECT_EQ(rej.reason, parsers::kSdRejectConstant) << l.name;
    EXPECT_EQ(rej.detail, "512 bytes of ec");
  }
}

TEST(SdVendorParse, PercentagesOutOfRangeAreRejected) {
  SdGenCmdBlock b = Reply("04-swissbit-s56u-reconstructed.txt");
  b[80] = 101;
  SdReject rej;
  EXPECT_FALSE(ParseSdVendorReply(SdVendorLayout::kSwissbit, b, &rej));
  EXPECT_EQ(rej.reason, parsers::kSdRejectRange);
  b[80] = 100;  // a new card: 0 % used
  auto h = ParseSdVendorReply(SdVendorLayout::kSwissbit, b, &rej);
  ASSERT_TRUE(h);
  EXPECT_EQ(*h->life_used_percent, 0);
  // Apacer's 453 % left (sdmon issue 2): no documented meaning, rejected.
  SdGenCmdBlock a = Reply("05-apacer-industrial-reconstructed.txt");
  a[96] = 0xb0;
  a[97] = 0xf4;
  EXPECT_FALSE(ParseSdVendorReply(SdVendorLayout::kApacer, a, &rej));
  EXPECT_EQ(rej.reason, parsers::kSdRejectRange);
  // A SanDisk signature without a date in ASCII digits is not a health block.
  SdGenCmdBlock s = Reply("01-wd-industrial-arg1-real.txt");
  s[4] = 0xA0;
  EXPECT_FALSE(ParseSdVendorReply(SdVendorLayout::kSandisk, s, &rej));
  EXPECT_EQ(rej.reason, parsers::kSdRejectRange);
}

TEST(SdVendorParse, CountersGoingBackwardsAreImplausible) {
  SdReject rej;
  auto a = *ParseSdVendorReply(SdVendorLayout::kSwissbit, Reply("04-swissbit-s56u-reconstructed.txt"), &rej);
  auto b = a;
  EXPECT_FALSE(parsers::CheckSdVendorProgress(a, b));
  b.power_cycles = 20;
  EXPECT_FALSE(parsers::CheckSdVendorProgress(a, b));
  b.power_cycles = 18;
  auto r = parsers::CheckSdVendorProgress(a, b);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, parsers::kSdRejectBackwards);
  EXPECT_NE(r->detail.find("power_cycles"), std::string::npos);
}

// A fake card: answers per argument, counts commands, can hang until released.
struct FakeCard {
  std::map<std::uint32_t, SdGenCmdBlock> replies;  // by read argument
  int error = 0;                                  // returned for every command when set
  std::vector<std::pair<std::uint32_t, bool>> sent;
  std::mutex mu;
  std::condition_variable cv;
  bool hang = false;  // the next command blocks until released
  bool released = false;

  Cmd56Fn Fn() {
    return [this](const std::string& path, std::uint32_t arg, bool write, SdGenCmdBlock* block) {
      std::unique_lock<std::mutex> l(mu);
      EXPECT_EQ(path, "/devfs/mmcblk0");
      sent.emplace_back(arg, write);
      if (hang) cv.wait(l, [&] { return released; });
      if (error) return error;
      if (write) return 0;
      auto it = replies.find(arg);
      if (it == replies.end()) return ETIMEDOUT;  // what a card without this command answers
      *block = it->second;
      return 0;
    };
  }
};

config::SdVendorHealthConfig Cfg(std::string layout = "auto") {
  config::SdVendorHealthConfig c;
  c.devices = {"mmcblk0"};
  c.layout = std::move(layout);
  c.interval = std::chrono::hours(6);
  c.timeout = std::chrono::seconds(30);  // never reached by a fake that answers
  return c;
}

testing::Collected CollectFrom(const SdVendorHealthReader& r) {
  collectors::SdVendorCollector c(&r);
  collectors::Paths paths;
  DeviceList none;
  collectors::ScrapeContext ctx{paths, none};
  return testing::Collect(c, ctx);
}

TEST(SdVendorReader, AcceptedReplyIsExportedAsTheCardReportsIt) {
  FakeCard card;
  card.replies[0x00000001] = Reply("01-wd-industrial-arg1-real.txt");
  SdVendorHealthReader reader("/devfs", Cfg(), card.Fn());
  EXPECT_TRUE(CollectFrom(reader).text.empty());  // nothing before the first pass
  reader.PassNow();
  auto got = CollectFrom(reader);
  ASSERT_TRUE(got.ok());
  testing::ExpectGolden("sd_vendor_wd.prom", got.text.substr(0, got.text.find("# HELP diskprobe_sd_health_last_success")) +
                                                 got.text.substr(got.text.find("# HELP diskprobe_sd_health_info")));
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_life_used_ratio{device=\"mmcblk0\",layout=\"sandisk\"}"),
            0.01);
  ASSERT_EQ(card.sent.size(), 1u);  // auto found it at the first layout
  // Next pass: the found layout first, still one command.
  reader.PassNow();
  EXPECT_EQ(card.sent.size(), 2u);
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").reads, 2u);
}

// Acceptance: a garbage reply is rejected, counted, and exports no health value.
TEST(SdVendorReader, GarbageReplyIsRejectedCountedAndNotExported) {
  FakeCard card;
  const SdGenCmdBlock mbr = Reply("02-ld-card-mbr-garbage-real.txt");
  for (const auto& l : parsers::SdVendorLayouts()) card.replies[l.read_arg] = mbr;
  SdVendorHealthReader reader("/devfs", Cfg(), card.Fn());
  reader.PassNow();
  auto got = CollectFrom(reader);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_up{device=\"mmcblk0\"}"), 0);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_sd_health_rejected_replies_total{device=\"mmcblk0\",layout=\"sandisk\",reason=\"signature\"}"),
            1);
  EXPECT_EQ(testing::SampleValue(
                got.text, "diskprobe_sd_health_rejected_replies_total{device=\"mmcblk0\",layout=\"swissbit\",reason=\"signature\"}"),
            1);
  for (const char* f : {"diskprobe_sd_health_info", "diskprobe_sd_health_life_used_ratio", "diskprobe_sd_health_power_cycles_total",
                        "diskprobe_sd_health_erase_count_average", "diskprobe_sd_health_spare_blocks"})
    EXPECT_EQ(got.text.find(std::string(f) + "{"), std::string::npos) << f;
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "rejected");
  // auto never sends apacer's write.
  for (const auto& [arg, write] : card.sent) EXPECT_FALSE(write);
  EXPECT_EQ(card.sent.size(), 7u);
}

// A card that was readable and then answers garbage: its health disappears, not frozen.
TEST(SdVendorReader, HealthDisappearsAfterARejectedReply) {
  FakeCard card;
  card.replies[0x53420001] = Reply("04-swissbit-s56u-reconstructed.txt");
  SdVendorHealthReader reader("/devfs", Cfg("swissbit"), card.Fn());
  reader.PassNow();
  ASSERT_TRUE(testing::SampleValue(CollectFrom(reader).text,
                                   "diskprobe_sd_health_power_cycles_total{device=\"mmcblk0\",layout=\"swissbit\"}"));
  // Counters going backwards: rejected.
  card.replies[0x53420001][119] = 18;
  reader.PassNow();
  auto got = CollectFrom(reader);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_up{device=\"mmcblk0\"}"), 0);
  EXPECT_EQ(testing::SampleValue(got.text,
                                 "diskprobe_sd_health_rejected_replies_total{device=\"mmcblk0\",layout=\"swissbit\",reason=\"backwards\"}"),
            1);
  EXPECT_EQ(got.text.find("diskprobe_sd_health_life_used_ratio{"), std::string::npos);
  // All FF: rejected too, counted under its own reason.
  card.replies[0x53420001].fill(0xFF);
  reader.PassNow();
  got = CollectFrom(reader);
  EXPECT_EQ(testing::SampleValue(got.text,
                                 "diskprobe_sd_health_rejected_replies_total{device=\"mmcblk0\",layout=\"swissbit\",reason=\"all_ones\"}"),
            1);
  EXPECT_EQ(got.text.find("diskprobe_sd_health_info{"), std::string::npos);
  // The card's counters move on again: accepted, exported.
  card.replies[0x53420001] = Reply("04-swissbit-s56u-reconstructed.txt");
  card.replies[0x53420001][119] = 20;
  reader.PassNow();
  got = CollectFrom(reader);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_power_cycles_total{device=\"mmcblk0\",layout=\"swissbit\"}"), 20);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_up{device=\"mmcblk0\"}"), 1);
}

TEST(SdVendorReader, PermissionRefusedIsAStateNotZeros) {
  FakeCard card;
  card.error = EPERM;
  SdVendorHealthReader reader("/devfs", Cfg(), card.Fn());
  reader.PassNow();
  auto got = CollectFrom(reader);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_up{device=\"mmcblk0\"}"), 0);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_read_failures_total{device=\"mmcblk0\",reason=\"permission\"}"), 1);
  EXPECT_EQ(got.text.find("diskprobe_sd_health_life_used_ratio{"), std::string::npos);
  EXPECT_EQ(card.sent.size(), 1u);  // EPERM holds for every layout: no further command
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "permission");
}

TEST(SdVendorReader, CardErrorsTryTheNextLayout) {
  FakeCard card;  // answers only Transcend's argument; every other one times out on the card
  SdGenCmdBlock t{};
  t[0] = 0x54;
  t[1] = 0x72;
  t[70] = 87;  // 87 % left
  t[77] = 3;   // 3 power cycles
  card.replies[0x110005F9] = t;
  SdVendorHealthReader reader("/devfs", Cfg(), card.Fn());
  reader.PassNow();
  auto got = CollectFrom(reader);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_life_used_ratio{device=\"mmcblk0\",layout=\"transcend\"}"), 0.13);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_read_failures_total{device=\"mmcblk0\",reason=\"card_error\"}"), 4);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_commands_total{device=\"mmcblk0\"}"), 5);
}

TEST(SdVendorReader, TwoStepLayoutWritesThenReads) {
  FakeCard card;
  card.replies[0x21] = Reply("05-apacer-industrial-reconstructed.txt");
  SdVendorHealthReader reader("/devfs", Cfg("apacer"), card.Fn());
  reader.PassNow();
  ASSERT_EQ(card.sent.size(), 2u);
  EXPECT_EQ(card.sent[0], std::make_pair(std::uint32_t{0x10}, true));
  EXPECT_EQ(card.sent[1], std::make_pair(std::uint32_t{0x21}, false));
  EXPECT_EQ(testing::SampleValue(CollectFrom(reader).text, "diskprobe_sd_health_power_cycles_total{device=\"mmcblk0\",layout=\"apacer\"}"),
            55);
}

// A card that never answers: the pass ends after the timeout, the card is "busy" until the stuck
// command returns, and then it is read again.
TEST(SdVendorReader, HangingCardIsBoundedByTheTimeout) {
  FakeCard card;
  card.replies[0x00000001] = Reply("01-wd-industrial-arg1-real.txt");
  card.hang = true;
  auto cfg = Cfg("sandisk");
  cfg.timeout = std::chrono::milliseconds(100);
  SdVendorHealthReader reader("/devfs", cfg, card.Fn());
  reader.PassNow();  // returns: bounded by the timeout, not by the card
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "timeout");
  reader.PassNow();  // the first command still runs: nothing sent
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "busy");
  {
    std::lock_guard<std::mutex> l(card.mu);
    EXPECT_EQ(card.sent.size(), 1u);
    card.hang = false;
    card.released = true;
  }
  card.cv.notify_all();
  // The helper thread finishes promptly once released; until then a pass still reports busy.
  for (int i = 0; i < 200 && reader.Snapshot().cards.at("mmcblk0").state != "ok"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    reader.PassNow();
  }
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "ok");
  auto got = CollectFrom(reader);
  EXPECT_EQ(testing::SampleValue(got.text, "diskprobe_sd_health_read_failures_total{device=\"mmcblk0\",reason=\"timeout\"}"), 1);
  EXPECT_GE(*testing::SampleValue(got.text, "diskprobe_sd_health_read_failures_total{device=\"mmcblk0\",reason=\"busy\"}"), 1);
}

TEST(SdVendorReader, ReconfigureDropsCardsNoLongerListed) {
  FakeCard card;
  card.replies[0x00000001] = Reply("01-wd-industrial-arg1-real.txt");
  SdVendorHealthReader reader("/devfs", Cfg(), card.Fn());
  reader.PassNow();
  EXPECT_EQ(reader.Snapshot().cards.size(), 1u);
  auto off = Cfg();
  off.devices.clear();
  reader.Reconfigure(off);
  reader.PassNow();
  EXPECT_TRUE(reader.Snapshot().cards.empty());
  EXPECT_TRUE(CollectFrom(reader).text.empty());
  collectors::SdVendorCollector none(nullptr);
  collectors::Paths paths;
  DeviceList devices;
  EXPECT_FALSE(testing::Collect(none, {paths, devices}).ok());
}

// SendCmd56 on nodes that are no block device (a fresh-user trial pointed --path.devfs at a FIFO,
// a regular file and a symlink to /dev/zero; each got the ioctl): nothing is sent, reason
// not_mmc, no command counted; a failed open is not counted either. The real ioctl on a block
// device that is no MMC card (a loop device: EINVAL) is tests/e2e/sd_cmd56_errors_e2e.sh.
TEST(SdVendorCmd56, NodesThatAreNoBlockDeviceGetNoCommand) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "sd_cmd56.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  { std::ofstream(dir / "file") << "not a card"; }
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/zero", dir / "zero");
  for (const char* name : {"file", "fifo", "zero"}) {
    SdGenCmdBlock b{};
    b.fill(0x5a);
    EXPECT_EQ(SendCmd56((dir / name).string(), 1, false, &b), -3) << name;
    EXPECT_EQ(b[0], 0x5a) << name;  // untouched
    SdVendorHealthReader reader(dir.string(), Cfg("sandisk"), nullptr);
    std::filesystem::remove(dir / "mmcblk0");
    std::filesystem::create_symlink(dir / name, dir / "mmcblk0");
    reader.PassNow();
    const SdVendorHealthSnapshot snap = reader.Snapshot();  // by value: keep it while e is read
    const SdVendorHealthEntry& e = snap.cards.at("mmcblk0");
    EXPECT_EQ(e.state, "not_mmc") << name;
    EXPECT_EQ(e.commands, 0u) << name;
  }
  SdVendorHealthReader reader("", Cfg("sandisk"), [&](const std::string&, std::uint32_t arg, bool w, SdGenCmdBlock* blk) {
    return SendCmd56("/nonexistent/mmcblk0", arg, w, blk);
  });
  reader.PassNow();
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").state, "open");
  EXPECT_EQ(reader.Snapshot().cards.at("mmcblk0").commands, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace diskprobe
