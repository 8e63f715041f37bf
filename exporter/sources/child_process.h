#pragma once
// Runs a program as a child process with bounded time and output: for smartctl
// (sources/smart_health.h), whose reads of a device behind a flaky USB bridge can hang for as
// long as the kernel's SCSI timeouts allow.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace diskprobe {

struct ChildResult {
  int spawn_error = 0;        // errno of posix_spawn (ENOENT: no such program); nothing ran when set
  bool exited = false;        // exited normally: exit_status is valid
  int exit_status = 0;
  int signal = 0;             // the signal that ended it (SIGKILL after a timeout or overflow)
  bool timed_out = false;     // killed because it ran past the timeout
  bool output_overflow = false;  // killed because stdout exceeded the limit (output holds the limit)
  std::string output;         // what it wrote to stdout (stderr goes to /dev/null)
  double wall_seconds = 0;    // from spawn to reaped
  double cpu_seconds = 0;     // the child's user + system CPU time (wait4's rusage)
  long input_blocks = 0;      // the child's file system input (rusage ru_inblock, 512-byte units)
};

// Spawns argv[0] (an absolute path: no PATH search) with argv in a process group of its own, an
// environment of only PATH=/usr/sbin:/usr/bin:/sbin:/bin and LC_ALL=C, stdin and stderr on
// /dev/null and stdout on a pipe; reads stdout until EOF, then waits for the exit; kills the
// child's whole group (SIGKILL) when `timeout` passes (reading or waiting: a child that closes
// stdout and runs on is timed out too) or more than `max_output` bytes arrive; always reaps it,
// and kills what it left running in its group. Blocks the calling thread for at most about
// `timeout` (plus the kernel's time to deliver SIGKILL: a process in uninterruptible sleep in
// the driver dies only when the command returns, and the wait for it is not bounded).
ChildResult RunChild(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::size_t max_output);

// SIGKILL to the process group of every child RunChild is running now: for the exporter's exit,
// which leaves a reader thread waiting on a child behind (app.cpp), so no smartctl outlives it.
// Async-signal-safe it is not (it takes a mutex); call it from a normal thread.
void KillRunningChildren();

}  // namespace diskprobe
