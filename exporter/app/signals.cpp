#include "app/signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <initializer_list>

namespace diskprobe::app {
namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

}  // namespace

bool InstallSignalHandlers() {
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) return false;
  struct sigaction sa {};
  sa.sa_handler = &OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP})
    if (sigaction(sig, &sa, nullptr) != 0) return false;
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}

int WaitForSignal() {
  unsigned char b = 0;
  for (;;) {
    ssize_t n = ::read(g_signal_pipe[0], &b, 1);
    if (n == 1) return b;
    if (n < 0 && errno == EINTR) continue;
    return SIGTERM;
  }
}

}  // namespace diskprobe::app
