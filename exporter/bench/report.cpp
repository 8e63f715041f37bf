#include "bench/report.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#include <prometheus/gateway.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "util/strings.h"

namespace diskprobe::bench {
namespace {

std::string Fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// Seconds with up to three decimals and no trailing zeros: 60, 0.5, 1.25 (a --duration of 500ms
// printed as "0" with %.0f).
std::string Seconds(double s) {
  std::string t = Fmt("%.3f", s);
  t.erase(t.find_last_not_of('0') + 1);
  if (t.back() == '.') t.pop_back();
  return t;
}

std::string Ms(const std::optional<double>& s) { return s ? Fmt("%.3f", *s * 1e3) : "-"; }

nlohmann::json Opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::string Tri(const std::optional<bool>& b) { return !b ? "unknown" : *b ? "pass" : "FAIL"; }

}  // namespace

std::string FormatTable(const Report& r) {
  std::string out;
  out += "device " + r.options.device + (r.device_name.empty() ? "" : " (" + r.device_name + ")") + ", directory " +
         r.options.directory + (r.directory_disk.empty() ? "" : " (on " + r.directory_disk + ")") + "\n";
  char head[160];
  std::snprintf(head, sizeof head, "%-16s%6s%11s%10s%11s%10s%10s  status\n", "test", "QD", "MB/s", "IOPS", "mean ms",
                "p50 ms", "p99 ms");
  out += head;
  for (const auto& t : r.tests) {
    char line[256];
    if (t.ok() || t.status == "error") {
      std::snprintf(line, sizeof line, "%-16s%6u%11.2f%10.0f%11s%10s%10s  %s", t.name.c_str(), t.queue_depth,
                    t.bytes_per_second / 1e6, t.iops, Ms(t.lat_mean).c_str(), Ms(t.lat_p50).c_str(),
                    Ms(t.lat_p99).c_str(), t.status.c_str());
    } else {
      std::snprintf(line, sizeof line, "%-16s%6u%11s%10s%11s%10s%10s  %s", t.name.c_str(), t.queue_depth, "-", "-", "-",
                    "-", "-", t.status.c_str());
    }
    out += line;
    if (!t.reason.empty()) out += ": " + t.reason;
    out += "\n";
  }
  out += "\napplication performance class (SD Association; 4 KiB random IOPS, 10 MB/s sequential write)\n";
  for (const auto& c : r.verdict.classes) {
    out += "  " + c.name + ": " + Tri(c.pass) + " (";
    bool first = true;
    for (const auto& k : c.checks) {
      out += first ? "" : ", ";
      first = false;
      if (k.metric == "seq_write_bytes_per_second")
        out += "seq write " + (k.measured ? Fmt("%.1f", *k.measured / 1e6) : "?") + "/" +
               Fmt("%.0f", k.required / 1e6) + " MB/s";
      else
        out += (k.metric == "read_iops" ? "read " : "write ") + (k.measured ? Fmt("%.0f", *k.measured) : "?") + "/" +
               Fmt("%.0f", k.required) + " IOPS";
    }
    out += ")\n";
  }
  out += "  measured: " + r.verdict.measured_class + ", claimed by the card (SSR): " + r.verdict.claimed_class + "\n";
  for (const auto& w : r.verdict.warnings) out += "WARNING: " + w + "\n";
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  out += Fmt("finished in %.1f s", r.elapsed_seconds) + " (bound " + Seconds(r.options.duration_seconds) + " s)" + "\n";
  return out;
}

nlohmann::json ToJson(const Report& r) {
  using nlohmann::json;
  json j;
  j["schema_version"] = 1;
  j["tool"] = "diskprobe_exporter bench";
  j["version"] = r.version;
  j["started_unix_seconds"] = r.started_unix;
  j["elapsed_seconds"] = r.elapsed_seconds;
  j["limits"] = {{"duration_seconds", r.options.duration_seconds},
                 {"max_bytes", r.options.max_bytes},
                 {"queue_depth", r.options.queue_depth}};
  j["device"] = {{"path", r.options.device},
                 {"name", r.device_name.empty() ? json(nullptr) : json(r.device_name)},
                 {"readable", r.device_error.empty()},
                 {"error", r.device_error.empty() ? json(nullptr) : json(r.device_error)}};
  j["directory"] = {{"path", r.options.directory},
                    {"disk", r.directory_disk.empty() ? json(nullptr) : json(r.directory_disk)},
                    {"probe_file", r.probe_file.empty() ? json(nullptr) : json(r.probe_file)},
                    {"direct_io", r.direct_io}};
  j["queue_engine"] = r.queue_engine;
  json tests = json::array();
  for (const auto& t : r.tests) {
    json o = {{"name", t.name},
              {"status", t.status},
              {"reason", t.reason.empty() ? json(nullptr) : json(t.reason)},
              {"method", t.method},
              {"block_size_bytes", t.block_size},
              {"queue_depth", t.queue_depth},
              {"ops", t.ops},
              {"bytes", t.bytes},
              {"seconds", t.seconds},
              {"bytes_per_second", t.bytes_per_second},
              {"mb_per_second", t.bytes_per_second / 1e6},
              {"iops", t.iops},
              {"latency_seconds",
               {{"mean", Opt(t.lat_mean)}, {"p50", Opt(t.lat_p50)}, {"p99", Opt(t.lat_p99)}, {"max", Opt(t.lat_max)}}}};
    tests.push_back(o);
  }
  j["tests"] = tests;
  json classes = json::array();
  for (const auto& c : r.verdict.classes) {
    json checks = json::array();
    for (const auto& k : c.checks)
      checks.push_back({{"metric", k.metric},
                        {"required", k.required},
                        {"measured", Opt(k.measured)},
                        {"pass", k.pass ? json(*k.pass) : json(nullptr)}});
    classes.push_back({{"name", c.name}, {"pass", c.pass ? json(*c.pass) : json(nullptr)}, {"checks", checks}});
  }
  j["verdict"] = {{"measured_class", r.verdict.measured_class},
                  {"claimed_class", r.verdict.claimed_class},
                  {"claimed_source", r.claimed_source},
                  {"classes", classes},
                  {"warnings", r.verdict.warnings}};
  j["notes"] = r.notes;
  return j;
}

std::optional<PushTarget> ParsePushUrl(const std::string& url, std::string* error) {
  auto bad = [&](const std::string& why) -> std::optional<PushTarget> {
    *error = "\"" + url + "\" is not a Pushgateway's base URL http://HOST:PORT: " + why;
    return std::nullopt;
  };
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return bad("no scheme");
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return bad("the scheme is not http or https");
  const auto host_start = scheme_end + 3;
  // An IPv6 address is bracketed and holds colons of its own.
  auto host_end = host_start;
  if (url.compare(host_start, 1, "[") == 0) {
    host_end = url.find(']', host_start);
    if (host_end == std::string::npos) return bad("no ']' after the IPv6 address");
    ++host_end;
  }
  const auto colon = url.find(':', host_end);
  const auto slash = url.find('/', host_start);
  if (colon == std::string::npos || (slash != std::string::npos && slash < colon)) return bad("no port");
  if (colon == host_start) return bad("no host");
  std::string port = url.substr(colon + 1, slash == std::string::npos ? std::string::npos : slash - colon - 1);
  const auto port_number = util::ParseNumber<unsigned>(port);
  if (!port_number || port.size() > 5 || *port_number == 0 || *port_number > 65535)
    return bad("bad port \"" + port + "\"");
  if (slash != std::string::npos && url.substr(slash) != "/")
    return bad("a path (the job's path is added by the bench)");
  return PushTarget{url.substr(0, colon), port};
}

bool Push(const Report& r, const std::string& url, std::string* error) {
  std::optional<PushTarget> target = ParsePushUrl(url, error);
  if (!target) {
    *error = "--push: " + *error;
    return false;
  }
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  prometheus::Labels grouping = prometheus::Gateway::GetInstanceLabel(hostname);
  grouping["device"] = r.device_name.empty() ? r.directory_disk : r.device_name;

  auto registry = std::make_shared<prometheus::Registry>();
  auto& bps = prometheus::BuildGauge()
                  .Name("diskprobe_bench_throughput_bytes_per_second")
                  .Help("Bench: bytes per second of each test (see the test's method in docs/metrics.md).")
                  .Register(*registry);
  auto& iops = prometheus::BuildGauge()
                   .Name("diskprobe_bench_iops")
                   .Help("Bench: operations per second of each test.")
                   .Register(*registry);
  auto& lat = prometheus::BuildGauge()
                  .Name("diskprobe_bench_latency_seconds")
                  .Help("Bench: per-operation latency of the QD1 tests and fdatasync, by quantile (0.5, 0.99).")
                  .Register(*registry);
  auto& success = prometheus::BuildGauge()
                      .Name("diskprobe_bench_test_success")
                      .Help("Bench: 1 when the test ran and completed, 0 when it failed or was unavailable.")
                      .Register(*registry);
  auto& pass = prometheus::BuildGauge()
                   .Name("diskprobe_bench_app_class_pass")
                   .Help(
                       "Bench: 1 when the measured figures meet the application performance class, 0 when not; "
                       "absent when undecided.")
                   .Register(*registry);
  auto& claimed = prometheus::BuildGauge()
                      .Name("diskprobe_bench_app_class_claimed")
                      .Help(
                          "Bench: application performance class the card claims in its SSR: 0 none, 1 A1, 2 A2; "
                          "absent when unknown.")
                      .Register(*registry);
  auto& ts = prometheus::BuildGauge()
                 .Name("diskprobe_bench_last_run_timestamp_seconds")
                 .Help("Bench: Unix time at which the run started.")
                 .Register(*registry);
  auto& dur = prometheus::BuildGauge()
                  .Name("diskprobe_bench_duration_seconds")
                  .Help("Bench: wall time of the whole run.")
                  .Register(*registry);
  for (const auto& t : r.tests) {
    success.Add({{"test", t.name}}).Set(t.ok() ? 1 : 0);
    if (!t.ok()) continue;
    bps.Add({{"test", t.name}}).Set(t.bytes_per_second);
    iops.Add({{"test", t.name}}).Set(t.iops);
    if (t.lat_p50) lat.Add({{"test", t.name}, {"quantile", "0.5"}}).Set(*t.lat_p50);
    if (t.lat_p99) lat.Add({{"test", t.name}, {"quantile", "0.99"}}).Set(*t.lat_p99);
  }
  for (const auto& c : r.verdict.classes)
    if (c.pass) pass.Add({{"class", c.name}}).Set(*c.pass ? 1 : 0);
  if (r.claimed_class) claimed.Add({}).Set(*r.claimed_class);
  ts.Add({}).Set(r.started_unix);
  dur.Add({}).Set(r.elapsed_seconds);

  prometheus::Gateway gw(target->host, target->port, "diskprobe-bench", grouping);
  gw.RegisterCollectable(registry);
  int code = gw.Push();
  if (code < 200 || code >= 300) {
    *error = "push to " + url + " failed: " + (code < 0 ? "no answer (curl error)" : "HTTP " + std::to_string(code));
    return false;
  }
  return true;
}

}  // namespace diskprobe::bench
