#pragma once
// A probes::Env for tests: a manual clock, a regular file per "device", a temp lock directory,
// io_ticks and thread creation under the test's control. No root, no devices, no real sleeping.
//
// Time moves only when the test calls Advance(). Settle(n) waits (in real time, up to a generous
// bound) until n threads are blocked in WaitUntil having seen the current time, so a test can step
// the clock without racing the threads it steps: each Advance() then lands on idle threads.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "probes/env.h"

namespace diskprobe::testing {

class FakeEnv : public probes::Env {
 public:
  // Device "files" are <device_dir>/<name>; locks go to lock_dir.
  FakeEnv(std::string device_dir, std::string lock_dir)
      : device_dir_(std::move(device_dir)), lock_dir_(std::move(lock_dir)) {}

  // Starts at an arbitrary steady time; Unix time 2026-12-01T00:00:00Z plus the same offset.
  static constexpr double kUnixStart = 1796083200.0;

  Clock::time_point Now() const override { return Clock::time_point(std::chrono::nanoseconds(now_ns_.load())); }
  double UnixSeconds() const override { return kUnixStart + static_cast<double>(now_ns_.load() - kStartNs) / 1e9; }

  // Moves the clock and wakes every waiter to look at it.
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard<std::mutex> g(mu_);
    now_ns_.fetch_add(d.count());
    for (auto& [id, w] : seen_) w.second->notify_all();
  }
  std::chrono::nanoseconds Elapsed() const { return std::chrono::nanoseconds(now_ns_.load() - kStartNs); }

  bool WaitUntil(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Clock::time_point deadline,
                 const std::function<bool()>& wake) override {
    const auto id = std::this_thread::get_id();
    while (!wake()) {
      const std::int64_t now = now_ns_.load();
      if (deadline != Clock::time_point::max() && Clock::time_point(std::chrono::nanoseconds(now)) >= deadline) {
        Unregister(id);
        return false;
      }
      {
        std::lock_guard<std::mutex> g(mu_);
        seen_[id] = {now, &cv};
      }
      // Real time only polls for the fake clock's moves; notifications end it early.
      cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    Unregister(id);
    return true;
  }

  // Waits until `threads` threads wait having seen the current time. False after 60 s of real time.
  // Waits until `threads` threads wait at the current fake time, or `done` (when given) holds;
  // false after 60 s of real time.
  bool Settle(int threads, const std::function<bool()>& done = {}) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      if (done && done()) return true;
      {
        std::lock_guard<std::mutex> g(mu_);
        int n = 0;
        for (const auto& [id, w] : seen_) n += w.first == now_ns_.load() ? 1 : 0;
        if (n >= threads) return true;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return false;
  }

  // Advance() by `step`, `steps` times, each after Settle(threads).
  void Run(int threads, std::chrono::nanoseconds step, int steps) {
    for (int i = 0; i < steps; ++i) {
      ASSERT_TRUE(Settle(threads)) << "threads did not settle at step " << i;
      Advance(step);
    }
    ASSERT_TRUE(Settle(threads));
  }

  probes::OpenedDevice OpenDevice(const Device& device) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      opens_.push_back({device.name, Elapsed()});
    }
    if (open_hook) open_hook(device);
    probes::OpenedDevice d;
    if (int e = open_error.load(); e != 0) {
      d.error = e;
      return d;
    }
    const std::string path = device_dir_ + "/" + device.name;
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
      d.direct = false;
      fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
      d.error = errno;
      return d;
    }
    d.opened = true;
    struct stat st {};
    ::fstat(fd, &st);
    d.bytes = static_cast<std::uint64_t>(st.st_size);
    d.fd.reset(fd);
    return d;
  }

  std::string LockDirectory() const override { return lock_dir_; }

  std::optional<std::uint64_t> IoTicks(const Device&) override {
    if (busy.load()) return static_cast<std::uint64_t>(Elapsed().count() / 1000000);  // busy all the time
    return 1000;
  }

  std::thread StartThread(const std::string& name, std::function<void()> fn) override {
    ++threads_asked;
    {
      std::lock_guard<std::mutex> g(mu_);
      if (refused_.count(name))
        throw std::system_error(EAGAIN, std::generic_category(), "Resource temporarily unavailable");
    }
    return std::thread(std::move(fn));
  }
  // StartThread(name, ...) throws EAGAIN while refused.
  void RefuseThread(const std::string& name, bool refuse) {
    std::lock_guard<std::mutex> g(mu_);
    if (refuse) refused_.insert(name);
    else refused_.erase(name);
  }

  // (device, fake time since start) of every OpenDevice call.
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> Opens() const {
    std::lock_guard<std::mutex> g(mu_);
    return opens_;
  }

  std::function<void(const Device&)> open_hook;  // runs inside OpenDevice (set before threads start)
  std::atomic<int> open_error{0};                // errno every OpenDevice returns when non-zero
  std::atomic<bool> busy{false};                 // io_ticks grow as fast as the clock
  std::atomic<int> threads_asked{0};

 private:
  static constexpr std::int64_t kStartNs = 1000ll * 1000000000;  // steady "boot" + 1000 s

  void Unregister(std::thread::id id) {
    std::lock_guard<std::mutex> g(mu_);
    seen_.erase(id);
  }

  const std::string device_dir_, lock_dir_;
  std::atomic<std::int64_t> now_ns_{kStartNs};
  mutable std::mutex mu_;
  // Threads in WaitUntil: the time they last saw, and the condition variable they wait on (alive
  // while registered: a waiter unregisters before it returns).
  std::map<std::thread::id, std::pair<std::int64_t, std::condition_variable*>> seen_;
  std::set<std::string> refused_;
  std::vector<std::pair<std::string, std::chrono::nanoseconds>> opens_;
};

// A one-shot gate: Wait() blocks until Open().
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> l(mu_);
    waiting_ = true;
    cv_.notify_all();
    cv_.wait(l, [this] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits (real time, up to 60 s) until a thread is in Wait().
  bool AwaitWaiter() {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(60), [this] { return waiting_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false, waiting_ = false;
};

}  // namespace diskprobe::testing
