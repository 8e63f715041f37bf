#include "sources/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <mutex>
#include <set>
#include <thread>

namespace diskprobe {
namespace {

double Monotonic() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double Seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; }

// The process groups of the children running now, for KillRunningChildren at exit.
std::mutex g_running_mu;
std::set<pid_t>& Running() {
  static auto* running = new std::set<pid_t>;  // never destroyed: used until _Exit
  return *running;
}

}  // namespace

void KillRunningChildren() {
  std::lock_guard<std::mutex> l(g_running_mu);
  for (pid_t group : Running()) ::kill(-group, SIGKILL);
}

ChildResult RunChild(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::size_t max_output) {
  ChildResult out;
  if (argv.empty()) {
    out.spawn_error = EINVAL;
    return out;
  }
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    out.spawn_error = errno;
    return out;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);  // dup2 clears O_CLOEXEC on fd 1
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The child starts with default signal dispositions and an empty mask: the exporter blocks
  // SIGTERM/SIGHUP in its threads to wait for them, which a child would otherwise inherit.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  // Its own process group (pgid = its pid): a timeout kills what it started too (a wrapper's
  // children), and nothing it started outlives the run.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char path_env[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char lc_env[] = "LC_ALL=C";
  char* envp[] = {path_env, lc_env, nullptr};
  pid_t pid = -1;
  const double t0 = Monotonic();
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    out.spawn_error = rc;
    return out;
  }
  {
    std::lock_guard<std::mutex> l(g_running_mu);
    Running().insert(pid);
  }
  const double deadline = t0 + static_cast<double>(timeout.count()) / 1000.0;
  char buf[16384];
  for (;;) {
    const double left = deadline - Monotonic();
    if (left <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left * 1000.0) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;  // time is checked at the top
    const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child closed stdout (it exited, or closed it and runs on)
    const std::size_t room = max_output - out.output.size();
    if (static_cast<std::size_t>(got) > room) {
      out.output.append(buf, room);
      out.output_overflow = true;
      break;
    }
    out.output.append(buf, static_cast<std::size_t>(got));
  }
  // A child stopped for its time or its output is killed before its pipe closes: closed first, a
  // child still writing would die of SIGPIPE instead, and the result would name that signal.
  if (out.timed_out || out.output_overflow) ::kill(-pid, SIGKILL);
  ::close(pipefd[0]);
  int status = 0;
  rusage ru{};
  // The deadline bounds the wait for the exit too: a child may close stdout and run on.
  bool reaped = false;
  while (!out.timed_out && !out.output_overflow) {
    const pid_t w = ::wait4(pid, &status, WNOHANG, &ru);
    if (w == pid) {
      reaped = true;
      break;
    }
    if (w < 0 && errno != EINTR) break;
    if (Monotonic() >= deadline) {
      out.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!reaped) {
    ::kill(-pid, SIGKILL);
    while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
  }
  // What the child started and left behind in its group goes with it.
  ::kill(-pid, SIGKILL);
  {
    std::lock_guard<std::mutex> l(g_running_mu);
    Running().erase(pid);
  }
  out.wall_seconds = Monotonic() - t0;
  out.cpu_seconds = Seconds(ru.ru_utime) + Seconds(ru.ru_stime);
  out.input_blocks = ru.ru_inblock;
  if (WIFEXITED(status)) {
    out.exited = true;
    out.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    out.signal = WTERMSIG(status);
  }
  return out;
}

}  // namespace diskprobe
