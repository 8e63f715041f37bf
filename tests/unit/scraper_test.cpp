// The scraper's share of every collector: the collector's name (once, from the registry),
// diskprobe_collector_success and _duration_seconds, a failure logged once per change of its
// reason, exceptions contained; and the registry's rows (names, sources, construction).
#include "scrape/scraper.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <set>
#include <stdexcept>

#include "collectors/registry.h"
#include "config/config.h"
#include "sources/device_registry.h"
#include "test_util.h"

namespace diskprobe {
namespace {

using collectors::CollectResult;
using collectors::ScrapeContext;

// Writes one gauge and returns the scripted results in turn (the last one repeats); "throw"
// throws instead.
class Scripted : public collectors::Collector {
 public:
  Scripted(std::string family, std::deque<std::string> errors)
      : family_(std::move(family)), errors_(std::move(errors)) {}
  CollectResult Collect(const ScrapeContext& ctx, FamilySink& out) override {
    ++calls;
    devices_seen = ctx.devices.size();
    out.Family(family_, "A test family.", prometheus::MetricType::Gauge);
    out.Sample({}, calls);
    std::string e = errors_.front();
    if (errors_.size() > 1) errors_.pop_front();
    if (e == "throw") throw std::runtime_error("boom");
    return e.empty() ? CollectResult::Ok() : CollectResult::Failed(e);
  }
  int calls = 0;
  std::size_t devices_seen = 0;

 private:
  std::string family_;
  std::deque<std::string> errors_;
};

std::size_t Lines(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t pos = 0; (pos = s.find(needle, pos)) != std::string::npos; pos += needle.size()) ++n;
  return n;
}

class ScraperTest : public ::testing::Test {
 protected:
  ScraperTest() : devices_(testing::Fixture("sys"), config::LoadDefault().config->devices) { devices_.Refresh(); }
  collectors::Paths paths_;
  DeviceRegistry devices_;
};

TEST_F(ScraperTest, SuccessDurationOrderAndLogOnChange) {
  auto a = std::make_unique<Scripted>("diskprobe_test_a", std::deque<std::string>{""});
  auto b = std::make_unique<Scripted>("diskprobe_test_b",
                                      std::deque<std::string>{"x: broken", "x: broken", "y: other", "", ""});
  Scripted* pa = a.get();
  std::vector<NamedCollector> list;
  list.push_back({"alpha", std::move(a)});
  list.push_back({"beta", std::move(b)});
  Scraper scraper(paths_, &devices_, std::move(list));

  ::testing::internal::CaptureStderr();
  std::vector<std::string> pages;
  for (int i = 0; i < 5; ++i) pages.push_back(scraper.Render());
  const std::string log = ::testing::internal::GetCapturedStderr();

  EXPECT_EQ(pa->calls, 5);
  // tests/fixtures/sys by the default rules: mmcblk0, nvme0n1, sdb, vda (loop1 needs an include).
  EXPECT_EQ(pa->devices_seen, 4u) << "the registry's device list reaches every collector";
  // Collectors in the order given, then the exporter's own families: nothing after them.
  const std::string& p = pages[0];
  ASSERT_NE(p.find("diskprobe_test_a 1\n"), std::string::npos) << p;
  EXPECT_LT(p.find("diskprobe_test_a 1\n"), p.find("diskprobe_test_b 1\n"));
  EXPECT_LT(p.find("diskprobe_test_b 1\n"), p.find("# HELP diskprobe_build_info "));
  EXPECT_EQ(p.substr(p.find("# HELP diskprobe_config_last_reload_success_timestamp_seconds")).find("diskprobe_test"),
            std::string::npos);
  EXPECT_NE(p.find("diskprobe_collector_success{collector=\"alpha\"} 1\n"), std::string::npos);
  EXPECT_NE(p.find("diskprobe_collector_success{collector=\"beta\"} 0\n"), std::string::npos);
  EXPECT_NE(pages[3].find("diskprobe_collector_success{collector=\"beta\"} 1\n"), std::string::npos);
  EXPECT_EQ(Lines(p, "diskprobe_collector_duration_seconds{collector=\""), 2u);
  // Failures: one line per change of reason, one recovery line, nothing for the steady states.
  EXPECT_EQ(Lines(log, "\n"), 3u) << log;
  EXPECT_EQ(Lines(log, "msg=\"collector failed\" collector=beta err=\"x: broken\""), 1u) << log;
  EXPECT_EQ(Lines(log, "msg=\"collector failed\" collector=beta err=\"y: other\""), 1u) << log;
  EXPECT_EQ(Lines(log, "msg=\"collector recovered\" collector=beta"), 1u) << log;
  EXPECT_EQ(Lines(log, "alpha"), 0u) << log;
}

TEST_F(ScraperTest, ExceptionIsAFailureAndTheScrapeAnswers) {
  std::vector<NamedCollector> list;
  list.push_back({"thrower", std::make_unique<Scripted>("diskprobe_test_t", std::deque<std::string>{"throw"})});
  list.push_back({"after", std::make_unique<Scripted>("diskprobe_test_after", std::deque<std::string>{""})});
  Scraper scraper(paths_, &devices_, std::move(list));
  ::testing::internal::CaptureStderr();
  const std::string p = scraper.Render();
  scraper.Render();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(p.find("diskprobe_collector_success{collector=\"thrower\"} 0\n"), std::string::npos) << p;
  EXPECT_NE(p.find("diskprobe_collector_success{collector=\"after\"} 1\n"), std::string::npos) << p;
  EXPECT_NE(p.find("diskprobe_test_after 1\n"), std::string::npos);
  EXPECT_EQ(Lines(log, "collector=thrower err=\"exception: boom\""), 1u) << log;
}

TEST(Registry, NamesAreUniqueAndSourcesDeclared) {
  std::set<std::string> names;
  std::vector<const collectors::CollectorInfo*> all;
  for (const auto& c : collectors::AllCollectors()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
    EXPECT_FALSE(c.help.empty()) << c.name;
    all.push_back(&c);
  }
  auto row = [&](std::string_view name) {
    return *std::find_if(all.begin(), all.end(), [&](const auto* c) { return c->name == name; });
  };
  EXPECT_EQ(row("probes")->needs, collectors::Source::kProbes);
  EXPECT_EQ(row("kmsg")->needs, collectors::Source::kKmsg);
  EXPECT_EQ(row("block_stat")->needs, collectors::Source::kNone);
  EXPECT_TRUE(collectors::Needs(all, collectors::Source::kKmsg));
  std::vector<const collectors::CollectorInfo*> without = {row("block_stat"), row("kmsg")};
  EXPECT_FALSE(collectors::Needs(without, collectors::Source::kProbes)) << "--no-collector.probes: no probe I/O";
  // Built with no sources running: named as in the registry, in its order, each one usable.
  std::vector<NamedCollector> built = collectors::Build(all, {});
  ASSERT_EQ(built.size(), all.size());
  for (std::size_t i = 0; i < built.size(); ++i) {
    EXPECT_EQ(built[i].name, all[i]->name);
    EXPECT_NE(built[i].collector, nullptr);
  }
}

}  // namespace
}  // namespace diskprobe
