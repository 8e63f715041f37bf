#include "app/flags.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string_view>

#include "version.h"

namespace diskprobe::app {
namespace {

// CLI11 prints a negatable flag as "--collector.x,--no-collector.x{false}", which reads as "off by
// default"; the {false} only says what the --no- form sets. The help text says the default.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (std::size_t at; (at = name.find("{false}")) != std::string::npos;) name.erase(at, 7);
    return name;
  }
};

}  // namespace

std::string CheckTelemetryPath(const std::string& p) {
  if (p.empty() || p[0] != '/') return "must start with /";
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (std::isalnum(c) || (c != 0 && std::strchr("/-._~", p[i]) != nullptr)) continue;
    // Quote the whole character: the bytes of a UTF-8 sequence (lead byte and its continuation
    // bytes), not its first byte alone (half a character in a terminal); a control byte or a
    // stray continuation byte as \xNN.
    std::size_t n = 1;
    if (c >= 0xc0)
      while (i + n < p.size() && n < 4 && (static_cast<unsigned char>(p[i + n]) & 0xc0) == 0x80) ++n;
    std::string shown;
    if (c >= 0x20 && c != 0x7f && (c < 0x80 || (c >= 0xc0 && n > 1))) {
      shown = p.substr(i, n);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      shown = buf;
    }
    return "may contain only letters, digits and / - . _ ~, got '" + shown + "'";
  }
  if (p == "/" || p == "/-/healthy" || p == "/-/ready") return p + " is another endpoint";
  // The path is compared with the request's path as sent (RFC 9110 section 4.2.3 leaves
  // normalisation to the server; this one does none), so a path with an empty or dot segment
  // would only match a client that sends it that way, and the landing page's link would resolve
  // elsewhere: "//metrics" is a network-path reference (RFC 3986 section 4.2), "/a/../metrics"
  // resolves to "/metrics" (section 5.2.4).
  if (p.find("//") != std::string::npos) return "may not contain an empty segment (//)";
  for (std::size_t at = 0; at < p.size();) {
    std::size_t end = p.find('/', at + 1);
    if (end == std::string::npos) end = p.size();
    std::string_view seg = std::string_view(p).substr(at + 1, end - at - 1);
    if (seg == "." || seg == "..") return "may not contain a . or .. segment";
    at = end;
  }
  return "";
}

std::optional<int> ParseFlags(int argc, char** argv, Flags* f) {
  CLI::App app{"diskprobe_exporter: Prometheus exporter for SD cards, eMMC and disks of Raspberry Pi fleets.",
               "diskprobe_exporter"};
  app.set_version_flag("--version", std::string("diskprobe_exporter ") + kVersion + " (revision " + kRevision + ")");
  app.add_option("--config.file", f->config_file,
                 "YAML configuration file, applied on top of the embedded defaults (config/default.yml). "
                 "Without it the defaults alone are used. SIGHUP reloads it.");
  app.add_flag("--config.check", f->config_check,
               "Validate the configuration (and --web.config.file when given, certificate and key loaded), "
               "print every error as file:line:col, exit 0 when valid, 1 when not.");
  app.add_option("--web.listen-address", f->listen,
                 "Addresses to listen on: :PORT, HOST:PORT, [IPV6]:PORT ([::]:PORT: IPv6 and IPv4); repeat the "
                 "flag or separate with commas.")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--web.config.file", f->web_config_file,
                 "Web configuration (Prometheus exporter-toolkit format) that enables TLS and/or basic "
                 "authentication. SIGHUP reloads it: new certificate, key, CAs, TLS settings and users apply "
                 "to new connections; turning TLS or basic auth on or off needs a restart.");
  app.add_option("--web.telemetry-path", f->telemetry_path,
                 "Path under which metrics are exposed (letters, digits and / - . _ ~; not /, /-/healthy, /-/ready).")
      ->capture_default_str()
      ->check(CheckTelemetryPath);
  app.add_option("--web.max-requests", f->max_requests,
                 "Maximum number of requests served at once (HTTP worker threads).")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  collectors::Paths& paths = f->paths;
  app.add_option("--path.sysfs", paths.sysfs, "sysfs mount point.")->capture_default_str();
  app.add_option("--path.procfs", paths.procfs, "procfs mount point.")->capture_default_str();
  app.add_option("--path.rootfs", paths.rootfs, "Root filesystem of the host (when run in a container).")
      ->capture_default_str();
  app.add_option("--path.debugfs", paths.debugfs, "debugfs mount point (mmc_ios; readable by root only).")
      ->capture_default_str();
  app.add_option("--path.devfs", f->devfs, "Directory of the block device nodes the read probes open (<devfs>/<disk>).")
      ->capture_default_str();
  app.add_option("--path.bootconfig", paths.bootconfig,
                 "The firmware's config.txt (boot_config). Default: <rootfs>/boot/firmware/config.txt, "
                 "then <rootfs>/boot/config.txt.");
  app.add_option("--path.kmsg", paths.kmsg, "The kernel log (kmsg collector; a file or a pipe of records also works).")
      ->capture_default_str();
  app.add_option("--log.level", f->log_level, "Only log messages at or above this level: debug, info, warn, error.")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error"}));
  app.add_option("--log.format", f->log_format, "Log line format: logfmt or json.")
      ->capture_default_str()
      ->check(CLI::IsMember({"logfmt", "json"}));

  const auto& all = collectors::AllCollectors();
  std::deque<bool> enabled;  // CLI11 binds to bool&: a deque keeps the references valid
  for (const auto& c : all) {
    enabled.push_back(c.enabled_by_default);
    app.add_flag("--collector." + c.name + ",!--no-collector." + c.name, enabled.back(),
                 "Enable the " + c.name + " collector (" + c.help + ")" +
                     (c.enabled_by_default ? "; default on" : "; default off"));
  }

  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(
      "Subcommand: diskprobe_exporter bench ... runs a one-shot card benchmark "
      "(diskprobe_exporter bench --help).");

  // An empty value ("--web.listen-address ''") is not a value to CLI11: it takes the next argument
  // instead, so the next flag disappears into the option. Refuse it before parsing, naming both.
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (!a.starts_with("--") || a.find('=') != std::string_view::npos || argv[i + 1][0] != '\0') continue;
    const CLI::Option* opt = app.get_option_no_throw(std::string(a));
    if (opt != nullptr && opt->get_type_size() != 0) {
      std::fprintf(stderr, "%s: empty value (give one, or leave the flag out for its default)\n", argv[i]);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  f->collectors.assign(enabled.begin(), enabled.end());
  return std::nullopt;
}

}  // namespace diskprobe::app
