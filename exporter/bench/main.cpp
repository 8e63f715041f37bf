// diskprobe_exporter-bench: the `diskprobe_exporter bench` subcommand as a program of its own,
// executed by diskprobe_exporter with the same arguments (argv[1] == "bench").
#include <CLI/CLI.hpp>

#include "bench/cli.h"

int main(int argc, char** argv) {
  CLI::App app{"diskprobe_exporter bench: a one-shot card benchmark.", "diskprobe_exporter"};
  auto command = diskprobe::bench::AddCommand(app);
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 (as getopt programs do), not
    // CLI11's 105-109, so scripts and systemd see one code for "wrong command line".
    return app.exit(e) == 0 ? 0 : 2;
  }
  return diskprobe::bench::RunCommand(*command);
}
