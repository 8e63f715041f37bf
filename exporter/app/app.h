#pragma once
// The exporter's life: configuration, wiring of the device registry, probes, collectors and the
// HTTP server, SIGHUP reloads, and a bounded stop.
#include "app/flags.h"

namespace diskprobe::app {

// --config.check: validates the configuration and, when given, the web configuration down to
// loading its certificate and key as the server would. Prints every error (file:line:col) to
// stderr, "<file>: ... is valid" to stdout. Returns the exit code: 0 valid, 1 not.
int CheckConfig(const Flags& flags);

// Runs the exporter until SIGTERM or SIGINT. Returns the exit code: 0 after a stop, 1 when it
// cannot start (bad configuration, address in use, ...; the reason logged). May end the process
// itself (_Exit(0)) when a stuck probe operation or HTTP connection outlives the stop's bound.
int Run(const Flags& flags);

// `diskprobe_exporter bench ...`: executes the separate bench program with the same arguments:
// installed, <exe dir>/../lib/diskprobe_exporter/diskprobe_exporter-bench (a helper, not a command
// in PATH, as the OpenSSL compat libraries); in the build tree, beside this binary. Returns (2)
// only when it cannot be run, with the reason printed.
int ExecBench(char** argv);

}  // namespace diskprobe::app
