#pragma once
// Runs code that must neither hang nor exhaust memory in a child process with a bound on both, so
// that a regression fails the test (with how the child died) instead of taking the test binary or
// the machine down.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

namespace diskprobe::testing {

// The bounds: 256 MiB of address space above what the process already has (the test binary's
// own mappings differ between builds), and 60 s of wall time, far above the well under a second
// each hostile input takes here and far below a test's timeout. Under AddressSanitizer, which
// reserves terabytes of address space up front, only the time bound applies.
inline constexpr long kChildExtraAddressSpace = 256L << 20;
inline constexpr unsigned kChildSeconds = 60;

// Runs `body` in a forked child under those bounds and returns what it returned, or
// "child killed by signal N (...)" / "child exited with status N" when it did not finish.
inline std::string InBoundedChild(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                         static_cast<rlim_t>(kChildExtraAddressSpace);
    struct rlimit rl {
      limit, limit
    };
    ::setrlimit(RLIMIT_AS, &rl);
#endif
    ::alarm(kChildSeconds);  // SIGALRM's default action ends a child that hangs
    std::string out = body();
    for (std::size_t done = 0; done < out.size();) {
      ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) ::_exit(3);
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return "child killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  return got;
}

}  // namespace diskprobe::testing
