// util::PeriodicThread: the loop the NVMe, SD vendor and SMART readers run on. The waits below are
// bounds far beyond a busy machine's noise (seconds for things that take microseconds); no test
// passes or fails on how fast a pass runs.
#include "util/periodic_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace diskprobe::util {
namespace {

using namespace std::chrono_literals;
using Clock = PeriodicThread::Clock;

// Waits up to `bound` for `pred`.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds bound = 10s) {
  const auto end = Clock::now() + bound;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

// A pass that blocks until released; shared with the thread, which may outlive the test's frame
// when it is left running.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> entered{0};
  void Pass() {
    entered.fetch_add(1);
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [this] { return open; });
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
};

TEST(PeriodicThread, OnePassAtOnceThenNoneBeforeTheInterval) {
  auto passes = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t;
  EXPECT_FALSE(t.Running());
  t.Start(1h, [passes] { passes->fetch_add(1); });
  EXPECT_TRUE(t.Running());
  ASSERT_TRUE(Eventually([&] { return passes->load() == 1; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(passes->load(), 1);  // the next is an hour away
  EXPECT_TRUE(t.Stop());
  EXPECT_FALSE(t.Running());
  EXPECT_EQ(passes->load(), 1);
}

TEST(PeriodicThread, AShorterIntervalStartsTheNextPassWithoutWaitingForTheOldOne) {
  auto passes = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t;
  t.Start(1h, [passes] { passes->fetch_add(1); });
  ASSERT_TRUE(Eventually([&] { return passes->load() == 1; }));
  t.SetInterval(1ms);  // an hour's wait ended by the new interval, counted from the last pass
  EXPECT_TRUE(Eventually([&] { return passes->load() >= 5; }));
  EXPECT_TRUE(t.Stop());
  const int after = passes->load();
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(passes->load(), after);  // none after the stop
}

TEST(PeriodicThread, StartTwiceKeepsOneThread) {
  auto a = std::make_shared<std::atomic<int>>(0);
  auto b = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t;
  t.Start(1h, [a] { a->fetch_add(1); });
  t.Start(1h, [b] { b->fetch_add(1); });
  ASSERT_TRUE(Eventually([&] { return a->load() == 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(b->load(), 0);
  EXPECT_TRUE(t.Stop());
  // Stopped, it starts again (a reader reconfigured after a stop).
  t.Start(1h, [b] { b->fetch_add(1); });
  EXPECT_TRUE(Eventually([&] { return b->load() == 1; }));
}

TEST(PeriodicThread, RequestStopReturnsAtOnceAndTheDeadlineBoundsTheWait) {
  auto gate = std::make_shared<Gate>();
  PeriodicThread t;
  t.Start(1h, [gate] { gate->Pass(); });
  ASSERT_TRUE(Eventually([&] { return gate->entered.load() == 1; }));
  // The pass is stuck: a request does not wait for it.
  const auto t0 = Clock::now();
  t.RequestStop();
  EXPECT_LT(Clock::now() - t0, 5s);
  // A wait until a deadline 100 ms away ends unfinished: the thread is left (detached).
  const auto deadline = Clock::now() + 100ms;
  EXPECT_FALSE(t.StopBy(deadline));
  EXPECT_GE(Clock::now(), deadline);
  EXPECT_FALSE(t.Running());
  EXPECT_TRUE(t.Stop());  // nothing left to wait for
  // The left thread still ends cleanly once its pass returns, and starts no other pass.
  gate->Open();
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(gate->entered.load(), 1);
}

TEST(PeriodicThread, StopWaitsForThePassInProgress) {
  auto gate = std::make_shared<Gate>();
  auto finished = std::make_shared<std::atomic<bool>>(false);
  PeriodicThread t;
  t.Start(1h, [gate, finished] {
    gate->Pass();
    finished->store(true);
  });
  ASSERT_TRUE(Eventually([&] { return gate->entered.load() == 1; }));
  std::thread opener([gate] {
    std::this_thread::sleep_for(50ms);
    gate->Open();
  });
  EXPECT_TRUE(t.StopBy(Clock::now() + 30s));  // joined: the pass ended first
  EXPECT_TRUE(finished->load());
  opener.join();
}

TEST(PeriodicThread, StopBeforeStartAndTwiceAreHarmless) {
  PeriodicThread t;
  t.RequestStop();
  t.SetInterval(1s);
  EXPECT_TRUE(t.Stop(0ms));
  EXPECT_TRUE(t.StopBy(Clock::now()));
}

}  // namespace
}  // namespace diskprobe::util
