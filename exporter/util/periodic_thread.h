#pragma once
// A background thread that runs a pass at once and then one every interval, until asked to stop.
// The device-health readers (NVMe log page, SD CMD56, smartctl) run on it: a pass may block in
// the kernel (an NVMe admin command has a 60 s timeout, MMC_IOC_CMD waits for the card) or wait
// for a child process, and it is never interrupted. So stopping is two steps: a request that
// returns at once, so that every component of the process can be asked together, and a wait
// against a deadline shared by all of them (the exporter's exit stays bounded, app.cpp).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace diskprobe::util {

class PeriodicThread {
 public:
  using Clock = std::chrono::steady_clock;

  PeriodicThread() = default;
  // Stop() with no deadline, unless the thread was left running by an earlier StopBy.
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Starts the thread: `pass` at once, then each time `interval` (steady clock) has gone by since
  // the start of the previous pass; a pass longer than the interval is followed by the next at
  // once. A no-op while a thread started earlier has not been stopped. `interval` must be
  // positive and finite (the config's bounds).
  void Start(std::chrono::milliseconds interval, std::function<void()> pass);
  // A new interval (a config reload): the next pass is due `interval` after the start of the last
  // one, so a shorter interval may start it at once. Before Start: ignored.
  void SetInterval(std::chrono::milliseconds interval);
  // Asks the thread to end after the pass in progress (or at once, between passes); returns
  // without waiting. A pass is not started after it.
  void RequestStop();
  // RequestStop, then waits until `deadline` for the thread to end. True: it ended and was joined
  // (also when it never started). False: a pass is still running; the thread is left (detached)
  // and keeps only its own state alive, so the caller must keep what `pass` uses alive, i.e. exit
  // the process without destructors (std::_Exit). Safe to call more than once.
  bool StopBy(Clock::time_point deadline);
  // StopBy(now + wait); the default waits for as long as the pass takes.
  bool Stop(std::chrono::milliseconds wait = std::chrono::milliseconds::max());
  // A thread was started and has not been stopped yet.
  bool Running() const;

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::chrono::milliseconds interval{0};
    bool stop = false;
    bool ended = false;  // the thread left its loop
  };
  static void Loop(State& s, const std::function<void()>& pass);

  mutable std::mutex mu_;  // guards state_ and thread_ (Start, Stop and Running from other threads)
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace diskprobe::util
