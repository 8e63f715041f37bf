#pragma once
// The command line: every flag of the exporter (CLI11), parsed into Flags. The names follow
// node_exporter's (--web.*, --path.*, --collector.NAME / --no-collector.NAME, --log.*).
#include <optional>
#include <string>
#include <vector>

#include "collectors/registry.h"

namespace diskprobe::app {

struct Flags {
  std::string config_file;  // "" = the embedded defaults alone
  bool config_check = false;
  std::vector<std::string> listen = {":29100"};  // as given: ":PORT", "HOST:PORT", comma lists
  std::string telemetry_path = "/metrics";
  std::string web_config_file;
  int max_requests = 8;
  collectors::Paths paths;
  std::string devfs = "/dev";  // block device nodes the read probes open (<devfs>/<kernel name>)
  std::string log_level = "info";
  std::string log_format = "logfmt";
  // Per collector of collectors::AllCollectors(), in that order: enabled or not.
  std::vector<bool> collectors;
};

// Parses argv into *flags. Returns nullopt to go on, or the exit code when the program is done:
// 0 after --help or --version (printed), 2 after a usage error (printed to stderr, as getopt
// programs do, instead of CLI11's own codes 105-109).
std::optional<int> ParseFlags(int argc, char** argv, Flags* flags);

// Why a telemetry path is refused ("" when it is fine): it must be an absolute path of URL-safe
// characters (RFC 3986 unreserved and "/") and not take the place of "/", "/-/healthy" or
// "/-/ready", nor contain an empty ("//") or dot ("." or "..") segment: requests are matched as
// sent, without normalisation, and the landing page links to it.
std::string CheckTelemetryPath(const std::string& path);

}  // namespace diskprobe::app
