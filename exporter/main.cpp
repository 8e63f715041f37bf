// diskprobe_exporter: flags, configuration, wiring, signals. Nothing else lives here.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include "collectors/registry.h"
#include "config/config.h"
#include "sources/device_registry.h"
#include "http/auth.h"
#include "http/routes.h"
#include "http/server.h"
#include "http/tls.h"
#include "http/web_config.h"
#include "probes/probe_manager.h"
#include "scrape/scraper.h"
#include "sources/kmsg_follower.h"
#include "util/log.h"
#include "version.h"

namespace {

using namespace diskprobe;

// Self-pipe: the handler may run on any thread (civetweb changes the signal mask of its worker
// threads, so blocking signals before starting threads is not enough); it only writes the signal
// number to a pipe that main reads.
int g_signal_pipe[2] = {-1, -1};

extern "C" void OnSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

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
    return SIGTERM;  // the pipe broke: stop rather than spin
  }
}

// `diskprobe_exporter bench ...` runs the separate bench program (CMakeLists.txt says why) with
// the same arguments: installed, <exe dir>/../lib/diskprobe_exporter/diskprobe_exporter-bench (a
// helper, not a command in PATH, as the OpenSSL compat libraries); in the build tree, beside this
// binary. Returns only when it cannot be run.
int ExecBench(char** argv) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path dir = (ec ? std::filesystem::path(argv[0]) : self).parent_path();
  const std::filesystem::path candidates[] = {dir / "../lib/diskprobe_exporter/diskprobe_exporter-bench",
                                              dir / "diskprobe_exporter-bench"};
  int first_errno = 0;
  for (const auto& bench : candidates) {
    ::execv(bench.c_str(), argv);
    if (first_errno == 0 || first_errno == ENOENT) first_errno = errno;
  }
  std::fprintf(stderr, "diskprobe_exporter: cannot run %s or %s: %s\n", candidates[0].lexically_normal().c_str(),
               candidates[1].c_str(), std::strerror(first_errno));
  return 2;
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

config::LoadResult Load(const std::string& file) {
  return file.empty() ? config::LoadDefault() : config::LoadFile(file);
}

void PrintErrors(const std::vector<config::Error>& errors) {
  for (const auto& e : errors) std::fprintf(stderr, "%s\n", e.ToString().c_str());
}

// SIGHUP for --web.config.file: the certificate, key, CAs and TLS settings of new connections and
// the basic auth users change in place (certificate rotation without a restart, as exporter-toolkit
// re-reads its file). Whether TLS and basic auth are on is fixed at start-up: a file that turns
// either on or off is refused. False (logged with file:line:col) when the file is refused; the
// running settings stay.
bool ReloadWebConfig(const std::string& file, const http::WebConfig& running, http::Server* server,
                     http::BasicAuth* auth) {
  http::WebConfigResult w = http::LoadWebConfigFile(file);
  if (!w.config) {
    for (const auto& e : w.errors)
      log::Error("web configuration reload failed, keeping the running one", {{"err", e.ToString()}});
    return false;
  }
  if (w.config->tls.has_value() != running.tls.has_value() ||
      w.config->users.empty() != running.users.empty()) {
    log::Error("web configuration reload refused: turning TLS or basic auth on or off needs a restart",
               {{"file", file}});
    return false;
  }
  std::string err;
  if (w.config->tls && !server->ReloadTls(*w.config->tls, &err)) {
    log::Error("web configuration reload failed, keeping the running one", {{"file", file}, {"err", err}});
    return false;
  }
  if (auth != nullptr) auth->SetUsers(w.config->users);
  log::Info("web configuration reloaded", {{"file", file}, {"tls", w.config->tls ? "true" : "false"},
                                          {"users", std::to_string(w.config->users.size())}});
  return true;
}

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

// The telemetry path: an absolute path of URL-safe characters (RFC 3986 unreserved and "/")
// that does not take the place of another endpoint ("/", "/-/healthy", "/-/ready").
std::string CheckTelemetryPath(const std::string& p) {
  if (p.empty() || p[0] != '/') return "must start with /";
  for (char c : p)
    if (!std::isalnum(static_cast<unsigned char>(c)) && std::strchr("/-._~", c) == nullptr)
      return std::string("may contain only letters, digits and / - . _ ~, got '") + c + "'";
  if (p == "/" || p == "/-/healthy" || p == "/-/ready") return p + " is another endpoint";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // glibc gives every thread that allocates its own malloc arena (up to 8 per core), each holding
  // on to freed memory; a daemon with a handful of mostly idle threads needs two.
  mallopt(M_ARENA_MAX, 2);
  if (argc > 1 && std::string_view(argv[1]) == "bench") return ExecBench(argv);
  std::string config_file;
  bool config_check = false;
  std::vector<std::string> listen = {":29100"};
  std::string telemetry_path = "/metrics";
  std::string web_config_file;
  int max_requests = 8;
  collectors::Paths paths;
  std::string log_level = "info";
  std::string log_format = "logfmt";

  CLI::App app{"diskprobe_exporter: Prometheus exporter for SD cards, eMMC and disks of Raspberry Pi fleets.",
               "diskprobe_exporter"};
  app.set_version_flag("--version", std::string("diskprobe_exporter ") + kVersion + " (revision " + kRevision + ")");
  app.add_option("--config.file", config_file,
                 "YAML configuration file, applied on top of the embedded defaults (config/default.yml). "
                 "Without it the defaults alone are used. SIGHUP reloads it.");
  app.add_flag("--config.check", config_check,
               "Validate the configuration (and --web.config.file when given, certificate and key loaded), "
               "print every error as file:line:col, exit 0 when valid, 1 when not.");
  app.add_option("--web.listen-address", listen,
                 "Addresses to listen on: :PORT, HOST:PORT; repeat the flag or separate with commas.")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--web.config.file", web_config_file,
                 "Web configuration (Prometheus exporter-toolkit format) that enables TLS and/or basic "
                 "authentication. SIGHUP reloads it: new certificate, key, CAs, TLS settings and users apply "
                 "to new connections; turning TLS or basic auth on or off needs a restart.");
  app.add_option("--web.telemetry-path", telemetry_path,
                 "Path under which metrics are exposed (letters, digits and / - . _ ~; not /, /-/healthy, /-/ready).")
      ->capture_default_str()
      ->check(CheckTelemetryPath);
  app.add_option("--web.max-requests", max_requests,
                 "Maximum number of requests served at once (HTTP worker threads).")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--path.sysfs", paths.sysfs, "sysfs mount point.")->capture_default_str();
  app.add_option("--path.procfs", paths.procfs, "procfs mount point.")->capture_default_str();
  app.add_option("--path.rootfs", paths.rootfs, "Root filesystem of the host (when run in a container).")
      ->capture_default_str();
  app.add_option("--path.debugfs", paths.debugfs, "debugfs mount point (mmc_ios; readable by root only).")
      ->capture_default_str();
  app.add_option("--path.bootconfig", paths.bootconfig,
                 "The firmware's config.txt (boot_config). Default: <rootfs>/boot/firmware/config.txt, "
                 "then <rootfs>/boot/config.txt.");
  app.add_option("--path.kmsg", paths.kmsg, "The kernel log (kmsg collector; a file or a pipe of records also works).")
      ->capture_default_str();
  app.add_option("--log.level", log_level, "Only log messages at or above this level: debug, info, warn, error.")
      ->capture_default_str()
      ->check(CLI::IsMember({"debug", "info", "warn", "warning", "error"}));
  app.add_option("--log.format", log_format, "Log line format: logfmt or json.")
      ->capture_default_str()
      ->check(CLI::IsMember({"logfmt", "json"}));

  const auto& all = collectors::AllCollectors();
  std::deque<bool> enabled;
  for (const auto& c : all) {
    enabled.push_back(c.enabled_by_default);
    app.add_flag("--collector." + c.name + ",!--no-collector." + c.name, enabled.back(),
                 "Enable the " + c.name + " collector (" + c.help + ")" +
                     (c.enabled_by_default ? "; default on" : "; default off"));
  }

  app.formatter(std::make_shared<HelpFormatter>());
  app.footer("Subcommand: diskprobe_exporter bench ... runs a one-shot card benchmark "
             "(diskprobe_exporter bench --help).");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2 (as getopt programs do), not
    // CLI11's 105-109, so scripts and systemd see one code for "wrong command line".
    return app.exit(e) == 0 ? 0 : 2;
  }

  log::Level level;
  log::Format format;
  log::ParseLevel(log_level, &level);
  log::ParseFormat(log_format, &format);
  log::Configure(level, format);

  config::LoadResult loaded = Load(config_file);
  if (config_check) {
    bool valid = loaded.config != nullptr;
    if (valid) std::printf("%s: configuration is valid\n", loaded.config->source.c_str());
    else PrintErrors(loaded.errors);
    // With --web.config.file, that file too, down to loading the certificate and key as the
    // server would (a deployment tool can validate both before installing them).
    if (!web_config_file.empty()) {
      http::WebConfigResult w = http::LoadWebConfigFile(web_config_file);
      std::string err;
      void* ctx = nullptr;
      if (!w.config) {
        PrintErrors(w.errors);
        valid = false;
      } else if (w.config->tls && (ctx = http::MakeSslContext(*w.config->tls, &err)) == nullptr) {
        // err starts with the key's file:line:col when the web config named the file.
        if (err.rfind(web_config_file + ":", 0) == 0) std::fprintf(stderr, "%s\n", err.c_str());
        else std::fprintf(stderr, "%s: %s\n", web_config_file.c_str(), err.c_str());
        valid = false;
      } else {
        http::FreeSslContext(ctx);
        std::printf("%s: web configuration is valid\n", web_config_file.c_str());
      }
    }
    return valid ? 0 : 1;
  }
  if (!loaded.config) {
    PrintErrors(loaded.errors);
    log::Error("invalid configuration, not starting",
               {{"file", config_file}, {"errors", std::to_string(loaded.errors.size())}});
    return 1;
  }
  std::shared_ptr<const config::Config> cfg = loaded.config;

  std::vector<std::string> addresses = http::SplitAddresses(listen);
  std::vector<std::pair<std::string, std::string>> ports;  // civetweb form, as given
  for (const auto& a : addresses) {
    std::string err;
    std::optional<std::string> port = http::ToListeningPort(a, &err);
    if (!port) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    // The same address twice (":29100" and "0.0.0.0:29100" too) made civetweb fail with "Failed
    // to setup server ports", naming neither.
    for (const auto& [other_port, other] : ports)
      if (*port == other_port) {
        std::fprintf(stderr, "--web.listen-address: %s and %s are the same address (%s)\n", other.c_str(), a.c_str(),
                     port->c_str());
        return 1;
      }
    ports.emplace_back(*port, a);
  }

  std::shared_ptr<const http::WebConfig> web;
  if (!web_config_file.empty()) {
    http::WebConfigResult w = http::LoadWebConfigFile(web_config_file);
    if (!w.config) {
      PrintErrors(w.errors);
      log::Error("invalid web configuration, not starting", {{"file", web_config_file}});
      return 1;
    }
    web = w.config;
    std::string err;
    // OpenSSL (TLS, and the HMAC of basic auth's credential cache) is loaded only here.
    if ((web->tls || !web->users.empty()) && !http::LoadOpenSslCompat(&err)) {
      log::Error(web->tls ? "cannot enable TLS" : "cannot enable basic auth", {{"err", err}});
      return 1;
    }
  }

  if (!InstallSignalHandlers()) {
    log::Error("cannot install signal handlers", {{"err", std::strerror(errno)}});
    return 1;
  }

  log::Info("starting diskprobe_exporter", {{"version", kVersion}, {"revision", kRevision}, {"config", cfg->source}});

  DeviceRegistry devices(paths.sysfs, cfg->devices);
  devices.Refresh();
  devices.Start();

  std::vector<const collectors::CollectorInfo*> chosen;
  std::string active_names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!enabled[i]) continue;
    chosen.push_back(&all[i]);
    active_names += (active_names.empty() ? "" : ",") + all[i].name;
  }
  log::Info("collectors enabled", {{"collectors", active_names}});
  // A background source runs only when an enabled collector exports it: --no-collector.probes
  // stops the probes' I/O too, not only their series (nobody would see the results).
  const bool probes_enabled = collectors::Needs(chosen, collectors::Source::kProbes);
  auto probe_config = [&](std::shared_ptr<const config::Config> c) -> std::shared_ptr<const config::Config> {
    if (probes_enabled || !c->probes.enabled) return c;
    auto copy = std::make_shared<config::Config>(*c);
    copy->probes.enabled = false;
    return copy;
  };
  if (!probes_enabled && cfg->probes.enabled) log::Info("probes not run: the probes collector is disabled");
  ProbeManager probes(paths.sysfs, "/dev", &devices);
  probes.Start(probe_config(cfg));
  std::unique_ptr<KmsgFollower> kmsg;
  if (collectors::Needs(chosen, collectors::Source::kKmsg)) {
    kmsg = std::make_unique<KmsgFollower>(paths.kmsg, paths.sysfs);
    kmsg->Start();  // a failure shows at the first scrape (the kmsg collector fails with the reason)
  }
  Scraper scraper(paths, &devices, collectors::Build(chosen, {&probes, kmsg.get()}));
  scraper.SetReloadResult(true, UnixNow());

  std::atomic<bool> ready{false};
  http::Server server;
  std::string err;
  http::Handler handler = http::MakeExporterHandler(&scraper, &devices, telemetry_path, &ready);
  std::shared_ptr<http::BasicAuth> auth;
  if (web && !web->users.empty()) {
    auth = std::make_shared<http::BasicAuth>(web->users);
    handler = http::RequireBasicAuth(auth, std::move(handler));
  }
  if (!server.Start(addresses, max_requests, std::move(handler), &err, web && web->tls ? &*web->tls : nullptr)) {
    log::Error("cannot start HTTP server", {{"err", err}});
    devices.Stop();
    return 1;
  }
  std::string bound;
  for (const auto& b : server.BoundAddresses()) bound += (bound.empty() ? "" : ",") + b;
  log::Info("listening", {{"address", bound}, {"telemetry_path", telemetry_path},
                          {"tls", web && web->tls ? "true" : "false"},
                          {"basic_auth", web && !web->users.empty() ? "true" : "false"}});
  ready.store(true);

  for (;;) {
    int sig = WaitForSignal();
    if (sig == SIGHUP) {
      // The web config first: a bad one is reported like a bad config file (reload metric 0).
      bool web_ok = true;
      if (!web_config_file.empty()) web_ok = ReloadWebConfig(web_config_file, *web, &server, auth.get());
      // The two files are independent: a good config file applies even when the web config is
      // refused, but the reload metric says 0 until both load.
      config::LoadResult r = Load(config_file);
      if (r.config) {
        cfg = r.config;
        devices.Reconfigure(cfg->devices);
        probes.Reconfigure(probe_config(cfg));
        log::Info("configuration reloaded", {{"config", cfg->source}});
      }
      for (const auto& e : r.errors)
        log::Error("configuration reload failed, keeping the running one", {{"err", e.ToString()}});
      scraper.SetReloadResult(r.config && web_ok, r.config && web_ok ? UnixNow() : 0);
      continue;
    }
    log::Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    break;
  }
  ready.store(false);
  // Neither a client holding a connection nor a card stuck in an operation may delay the exit
  // beyond 2 s: each gets a bounded wait, then the process leaves without joining them.
  bool clean = server.Stop(std::chrono::milliseconds(800));
  clean = probes.Stop(std::chrono::milliseconds(500)) && clean;
  devices.Stop();
  if (!clean) {
    log::Warn("stopped; abandoned a stuck probe operation or an idle HTTP connection");
    std::_Exit(0);  // civetweb threads still run: skip static destructors
  }
  log::Info("stopped");
  return 0;
}
