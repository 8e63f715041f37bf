#include "app/app.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "app/signals.h"
#include "collectors/registry.h"
#include "config/config.h"
#include "http/auth.h"
#include "http/routes.h"
#include "http/server.h"
#include "http/tls.h"
#include "http/web_config.h"
#include "probes/probe_manager.h"
#include "scrape/scraper.h"
#include "sources/child_process.h"
#include "sources/device_registry.h"
#include "sources/kmsg_follower.h"
#include "sources/nvme_health.h"
#include "sources/sd_vendor_health.h"
#include "sources/smart_health.h"
#include "util/log.h"
#include "version.h"

namespace diskprobe::app {
namespace {

// How long a stop waits for the components (HTTP workers, probe threads, health readers), all
// together: what has not ended by then is left behind. Below the 2 s the exporter promises for
// SIGTERM, with room for the rest of the exit (the device watcher, the last log line).
constexpr std::chrono::milliseconds kStopBudget{1200};

double UnixNow() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

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
  if (w.config->tls.has_value() != running.tls.has_value() || w.config->users.empty() != running.users.empty()) {
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
  log::Info(
      "web configuration reloaded",
      {{"file", file}, {"tls", w.config->tls ? "true" : "false"}, {"users", std::to_string(w.config->users.size())}});
  return true;
}

// The listen addresses one by one, or nullopt with the problem printed. The same address twice
// (":29100" and "0.0.0.0:29100" too) is refused here, naming both, rather than failing to bind.
std::optional<std::vector<std::string>> ListenAddresses(const std::vector<std::string>& listen) {
  std::vector<std::string> addresses = http::SplitAddresses(listen);
  std::vector<std::pair<std::string, std::string>> ports;  // normalised form, as given
  for (const auto& a : addresses) {
    std::string err;
    std::optional<std::string> port = http::ToListeningPort(a, &err);
    if (!port) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return std::nullopt;
    }
    // Port 0 twice is two addresses: the kernel picks a free port for each.
    const bool any_port = port->ends_with(":0");
    for (const auto& [other_port, other] : ports)
      if (!any_port && *port == other_port) {
        std::fprintf(stderr, "--web.listen-address: %s and %s are the same address (%s)\n", other.c_str(), a.c_str(),
                     port->c_str());
        return std::nullopt;
      }
    ports.emplace_back(*port, a);
  }
  return addresses;
}

}  // namespace

int CheckConfig(const Flags& flags) {
  config::LoadResult loaded = Load(flags.config_file);
  bool valid = loaded.config != nullptr;
  if (valid) std::printf("%s: configuration is valid\n", loaded.config->source.c_str());
  else PrintErrors(loaded.errors);
  if (!flags.web_config_file.empty()) {
    const std::string& file = flags.web_config_file;
    http::WebConfigResult w = http::LoadWebConfigFile(file);
    std::string err;
    void* ctx = nullptr;
    if (!w.config) {
      PrintErrors(w.errors);
      valid = false;
    } else if (w.config->tls && (ctx = http::MakeSslContext(*w.config->tls, &err)) == nullptr) {
      // err starts with the key's file:line:col when the web config named the file.
      if (err.rfind(file + ":", 0) == 0) std::fprintf(stderr, "%s\n", err.c_str());
      else std::fprintf(stderr, "%s: %s\n", file.c_str(), err.c_str());
      valid = false;
    } else {
      http::FreeSslContext(ctx);
      std::printf("%s: web configuration is valid\n", file.c_str());
    }
  }
  return valid ? 0 : 1;
}

int Run(const Flags& flags) {
  const collectors::Paths& paths = flags.paths;
  config::LoadResult loaded = Load(flags.config_file);
  if (!loaded.config) {
    PrintErrors(loaded.errors);
    log::Error("invalid configuration, not starting",
               {{"file", flags.config_file}, {"errors", std::to_string(loaded.errors.size())}});
    return 1;
  }
  std::shared_ptr<const config::Config> cfg = loaded.config;

  std::optional<std::vector<std::string>> addresses = ListenAddresses(flags.listen);
  if (!addresses) return 1;

  std::shared_ptr<const http::WebConfig> web;
  if (!flags.web_config_file.empty()) {
    http::WebConfigResult w = http::LoadWebConfigFile(flags.web_config_file);
    if (!w.config) {
      PrintErrors(w.errors);
      log::Error("invalid web configuration, not starting", {{"file", flags.web_config_file}});
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

  const auto& all = collectors::AllCollectors();
  std::vector<const collectors::CollectorInfo*> chosen;
  std::string active_names;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (!flags.collectors[i]) continue;
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
  ProbeManager probes(paths.sysfs, flags.devfs, &devices);
  probes.Start(probe_config(cfg));
  std::unique_ptr<KmsgFollower> kmsg;
  if (collectors::Needs(chosen, collectors::Source::kKmsg)) {
    kmsg = std::make_unique<KmsgFollower>(paths.kmsg, paths.sysfs);
    kmsg->SetDeviceFilter(cfg->devices);  // before Start: the ring's old records are held to it too
    kmsg->Start();  // a failure shows at the first scrape (the kmsg collector fails with the reason)
  }
  std::unique_ptr<NvmeHealthReader> nvme;
  if (collectors::Needs(chosen, collectors::Source::kNvme)) {
    nvme = std::make_unique<NvmeHealthReader>(paths.sysfs, flags.devfs, &devices, cfg->health.nvme_interval);
    nvme->Start();
  }
  // Sends nothing until cards are listed in health.sd_vendor.devices (Start is a no-op then); a
  // reload can list some.
  std::unique_ptr<SdVendorHealthReader> sd_vendor;
  if (collectors::Needs(chosen, collectors::Source::kSdVendor)) {
    sd_vendor = std::make_unique<SdVendorHealthReader>(flags.devfs, cfg->health.sd_vendor);
    sd_vendor->Start();
  }
  auto smart_options = [](const config::Config& c) {
    return SmartHealthReader::Options{c.health.smart_interval, c.health.smartctl_timeout, c.health.smartctl_path,
                                      c.health.smart_device_types};
  };
  std::unique_ptr<SmartHealthReader> smart;
  if (collectors::Needs(chosen, collectors::Source::kSmart)) {
    smart = std::make_unique<SmartHealthReader>(paths.sysfs, flags.devfs, &devices, smart_options(*cfg));
    smart->Start();
  }
  Scraper scraper(paths, &devices, collectors::Build(chosen, {&probes, kmsg.get(), nvme.get(), sd_vendor.get(), smart.get()}));
  scraper.SetReloadResult(true, UnixNow());

  std::atomic<bool> ready{false};
  http::Server server;
  std::string err;
  http::Handler handler = http::MakeExporterHandler(&scraper, &devices, flags.telemetry_path, &ready);
  std::shared_ptr<http::BasicAuth> auth;
  if (web && !web->users.empty()) {
    auth = std::make_shared<http::BasicAuth>(web->users);
    handler = http::RequireBasicAuth(auth, std::move(handler));
  }
  if (!server.Start(*addresses, flags.max_requests, std::move(handler), &err, web && web->tls ? &*web->tls : nullptr)) {
    log::Error("cannot start HTTP server", {{"err", err}});
    devices.Stop();
    return 1;
  }
  std::string bound;
  for (const auto& b : server.BoundAddresses()) bound += (bound.empty() ? "" : ",") + b;
  log::Info("listening", {{"address", bound},
                          {"telemetry_path", flags.telemetry_path},
                          {"tls", web && web->tls ? "true" : "false"},
                          {"basic_auth", web && !web->users.empty() ? "true" : "false"}});
  ready.store(true);

  for (;;) {
    int sig = WaitForSignal();
    if (sig == SIGHUP) {
      // The web config first: a bad one is reported like a bad config file (reload metric 0).
      bool web_ok = true;
      if (!flags.web_config_file.empty()) web_ok = ReloadWebConfig(flags.web_config_file, *web, &server, auth.get());
      // The two files are independent: a good config file applies even when the web config is
      // refused, but the reload metric says 0 until both load.
      config::LoadResult r = Load(flags.config_file);
      if (r.config) {
        cfg = r.config;
        devices.Reconfigure(cfg->devices);
        if (kmsg) kmsg->SetDeviceFilter(cfg->devices);
        if (nvme) nvme->SetInterval(cfg->health.nvme_interval);
        if (sd_vendor) sd_vendor->Reconfigure(cfg->health.sd_vendor);
        if (smart) smart->SetOptions(smart_options(*cfg));
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
  // beyond 2 s. Every component is asked to stop at once, then all are waited for against one
  // deadline (they wind down side by side); what has not ended by then is left, and the process
  // exits without joining it.
  const auto deadline = std::chrono::steady_clock::now() + kStopBudget;
  probes.RequestStop();
  if (nvme) nvme->RequestStop();
  if (sd_vendor) sd_vendor->RequestStop();
  if (smart) smart->RequestStop();
  const auto left = [&deadline] {
    return std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
  };
  bool clean = server.Stop(left());
  clean = probes.StopBy(deadline) && clean;
  if (nvme) clean = nvme->StopBy(deadline) && clean;
  if (sd_vendor) clean = sd_vendor->StopBy(deadline) && clean;
  if (smart) clean = smart->StopBy(deadline) && clean;
  devices.Stop();
  if (!clean) {
    KillRunningChildren();  // a smartctl run the SMART reader was left waiting on
    log::Warn("stopped; abandoned a stuck probe operation, health read or HTTP connection");
    std::_Exit(0);  // abandoned threads still run: skip static destructors
  }
  log::Info("stopped");
  return 0;
}

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

}  // namespace diskprobe::app
