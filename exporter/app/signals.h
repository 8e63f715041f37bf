#pragma once
// SIGINT, SIGTERM and SIGHUP delivered to the main thread as values, whichever thread the kernel
// interrupts: the handler writes the signal number to a pipe (self-pipe), which WaitForSignal
// reads. civetweb changes the signal mask of its worker threads, so blocking the signals before
// starting threads (sigwait) would not catch them all. SIGPIPE is ignored.
namespace diskprobe::app {

// Installs the handlers. false (errno set) when the pipe or a handler cannot be set up.
bool InstallSignalHandlers();

// Blocks until one of the three signals arrives; returns its number. SIGTERM when the pipe
// breaks (stop rather than spin).
int WaitForSignal();

}  // namespace diskprobe::app
