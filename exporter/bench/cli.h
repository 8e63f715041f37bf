#pragma once
// The `bench` subcommand's flags (CLI11) and its run: table or JSON on stdout, a progress bar on
// stdout's terminal, an optional push to a Pushgateway. Exit codes: 0 done, 1 cannot start or a
// failed push, 2 bad flags (CLI11).
#include <CLI/CLI.hpp>
#include <memory>

namespace diskprobe::bench {

struct Command;

// Adds `bench` to `app`. The returned object lives as long as the app needs it.
std::shared_ptr<Command> AddCommand(CLI::App& app);
// True when the command line chose `bench`.
bool Chosen(const Command& c);
// Runs it; returns the process exit code.
int RunCommand(const Command& c);

}  // namespace diskprobe::bench
