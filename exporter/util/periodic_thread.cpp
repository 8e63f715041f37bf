#include "util/periodic_thread.h"

namespace diskprobe::util {

PeriodicThread::~PeriodicThread() { Stop(); }

void PeriodicThread::Start(std::chrono::milliseconds interval, std::function<void()> pass) {
  std::lock_guard<std::mutex> l(mu_);
  if (thread_.joinable()) return;
  // A fresh state per thread: one left running by StopBy keeps the old one.
  state_ = std::make_shared<State>();
  state_->interval = interval;
  thread_ = std::thread([s = state_, pass = std::move(pass)] { Loop(*s, pass); });
}

void PeriodicThread::Loop(State& s, const std::function<void()>& pass) {
  auto last = Clock::now();
  pass();
  std::unique_lock<std::mutex> l(s.mu);
  while (!s.stop) {
    // Woken by RequestStop and SetInterval too: a new interval counts from the last pass.
    s.cv.wait_until(l, last + s.interval);
    if (s.stop) break;
    if (Clock::now() < last + s.interval) continue;
    l.unlock();
    last = Clock::now();
    pass();
    l.lock();
  }
  s.ended = true;
  s.cv.notify_all();
}

void PeriodicThread::SetInterval(std::chrono::milliseconds interval) {
  std::lock_guard<std::mutex> l(mu_);
  if (!state_) return;
  {
    std::lock_guard<std::mutex> sl(state_->mu);
    state_->interval = interval;
  }
  state_->cv.notify_all();
}

void PeriodicThread::RequestStop() {
  std::lock_guard<std::mutex> l(mu_);
  if (!state_) return;
  {
    std::lock_guard<std::mutex> sl(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_all();
}

bool PeriodicThread::StopBy(Clock::time_point deadline) {
  std::lock_guard<std::mutex> l(mu_);
  if (!thread_.joinable()) return true;
  State& s = *state_;
  std::unique_lock<std::mutex> sl(s.mu);
  s.stop = true;
  s.cv.notify_all();
  const auto ended = [&s] { return s.ended; };
  const bool done = deadline == Clock::time_point::max() ? (s.cv.wait(sl, ended), true)
                                                         : s.cv.wait_until(sl, deadline, ended);
  sl.unlock();
  if (done) thread_.join();
  else thread_.detach();
  return done;
}

bool PeriodicThread::Stop(std::chrono::milliseconds wait) {
  if (wait == std::chrono::milliseconds::max()) return StopBy(Clock::time_point::max());
  return StopBy(Clock::now() + wait);
}

bool PeriodicThread::Running() const {
  std::lock_guard<std::mutex> l(mu_);
  return thread_.joinable();
}

}  // namespace diskprobe::util
