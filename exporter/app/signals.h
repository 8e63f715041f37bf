#pragma once
// SIGINT, SIGTERM and SIGHUP delivered to the main thread as values, whichever thread the kernel
// interrupts: the handler writes the signal number to a pipe (self-pipe), which WaitForSignal
// reads. The handler works whichever thread is interrupted, so no thread has to keep a signal
// mask. SIGPIPE is ignored.
namespace diskprobe::app {

// Installs the handlers. false (errno set) when the pipe or a handler cannot be set up.
bool InstallSignalHandlers();

// Blocks until one of the three signals arrives; returns its number. SIGTERM when the pipe
// breaks (stop rather than spin).
int WaitForSignal();

}  // namespace diskprobe::app
