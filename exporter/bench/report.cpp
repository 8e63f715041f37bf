#include "bench/report.h"

#include <unistd.h>

#include <cstdio>
#include <memory>

#if DISKPROBE_BENCH_PUSH
#include <prometheus/gateway.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#endif

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

namespace {

// The fields both JSON reports start with (docs/bench-schema.json, docs/bench-capacity-schema.json).
// schema_version: each document's own (docs/bench-schema.json 2, docs/bench-capacity-schema.json 1).
nlohmann::json Envelope(int schema_version, const char* tool, const std::string& version, double started_unix,
                        double elapsed_seconds) {
  nlohmann::json j;
  j["schema_version"] = schema_version;
  j["tool"] = tool;
  j["version"] = version;
  j["started_unix_seconds"] = started_unix;
  j["elapsed_seconds"] = elapsed_seconds;
  return j;
}

}  // namespace

nlohmann::json ToJson(const Report& r) {
  using nlohmann::json;
  json j = Envelope(2, "diskprobe_exporter bench", r.version, r.started_unix, r.elapsed_seconds);
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
              {"started_unix_seconds", Opt(t.started_unix)},
              {"wall_seconds", Opt(t.wall_seconds)},
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

namespace {

std::string MiB(std::uint64_t b) { return Fmt("%.1f MiB", static_cast<double>(b) / (1 << 20)); }
// Bytes exactly and in MiB: "67108864 bytes (64.0 MiB)".
std::string Bytes(std::uint64_t b) { return std::to_string(b) + " bytes (" + MiB(b) + ")"; }
std::string Rate(std::uint64_t b, double s) { return s > 0 ? Fmt("%.1f MB/s", static_cast<double>(b) / s / 1e6) : "-"; }

constexpr BlockKind kBadKinds[] = {BlockKind::kWrapAround, BlockKind::kStale, BlockKind::kZeros, BlockKind::kGarbage,
                                   BlockKind::kReadError};

bool Aliases(BlockKind k) { return k == BlockKind::kWrapAround || k == BlockKind::kStale; }

}  // namespace

std::string CapacityOutcome(const CapacityResult& r) {
  if (r.intact_bytes < r.verified_bytes) return "data_lost";
  if (r.interrupted || r.written_bytes == 0 || r.verified_bytes < r.written_bytes) return "incomplete";
  return "ok";
}

std::string FormatCapacity(const CapacityResult& r) {
  std::string out;
  out += "capacity check of " + r.options.directory + (r.disk.empty() ? "" : " (disk " + r.disk + ")") +
         ": filesystem " + MiB(r.fs_total_bytes) + ", " + MiB(r.fs_available_bytes) + " available, floor " +
         MiB(r.options.free_floor) + ", bound " + MiB(r.options.max_bytes) + "\n";
  out += "written:  " + Bytes(r.written_bytes) + " in " + std::to_string(r.files) + " files (planned " +
         MiB(r.planned_bytes) + "), " + Rate(r.written_bytes, r.write_seconds) + " with fdatasync\n";
  out += "verified: " + Bytes(r.verified_bytes) + ", " + (r.direct_io ? "O_DIRECT" : "buffered") + " reads at " +
         Rate(r.verified_bytes, r.verify_seconds) +
         (r.device_read_bytes ? ", the disk counted " + MiB(*r.device_read_bytes) + " read" : "") + "\n";
  out += "intact:   " + Bytes(r.intact_bytes) + "\n";
  if (r.verified_bytes > r.intact_bytes) {
    out += "lost:     " + Bytes(r.verified_bytes - r.intact_bytes) + ":";
    for (BlockKind k : kBadKinds)
      if (r.blocks[static_cast<int>(k)] > 0)
        out += " " + KindName(k) + " " + MiB(r.blocks[static_cast<int>(k)] * kFillBlock);
    out += "\n";
  }
  if (!r.bad_ranges.empty()) {
    const BadRange& b = r.bad_ranges.front();
    out += "first bad offset: " + Bytes(b.offset) + ", " + KindName(b.kind) +
           (Aliases(b.kind) ? ": holds the block of offset " + Bytes(b.aliased_offset) : "") + "\n";
  }
  if (r.card_alias_distance)
    out += "alias distance on the device: " + Bytes(*r.card_alias_distance) +
           " (a block and the one it reads back as: the card's real size when it maps addresses modulo it)\n";
  else if (r.alias_distance)
    out += "alias distance in the fill: " + Bytes(*r.alias_distance) +
           " (device addresses unknown; the card's real size only where the fill lies in ascending order)\n";
  // KiB below a MiB: most ranges on a wrapped filesystem are a few blocks long.
  auto size = [](std::uint64_t b) { return b < (1 << 20) ? std::to_string(b >> 10) + " KiB" : MiB(b); };
  for (std::size_t i = 0; i < r.bad_ranges.size() && i < 8; ++i) {
    const BadRange& b = r.bad_ranges[i];
    out += "  bad at " + size(b.offset) + ", " + size(b.bytes) + " " + KindName(b.kind) +
           (Aliases(b.kind) ? " (holding the blocks from " + size(b.aliased_offset) + ")" : "") + "\n";
  }
  if (r.bad_ranges.size() > 8 || r.bad_ranges_truncated) out += "  ... (all of them in --format json)\n";
  if (!r.stop_reason.empty()) out += "stopped: " + r.stop_reason + "\n";
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  const std::string outcome = CapacityOutcome(r);
  out += r.removed ? "files removed\n" : "WARNING: " + r.remove_error + "\n";
  // A card that wraps overwrites the filesystem's own blocks with the fill: its metadata is gone.
  if (!r.removed && outcome == "data_lost")
    out += "WARNING: the card lost the filesystem's own blocks too: copy what matters off it and reformat it\n";
  // A fill bounded by --capacity-max checks part of the free space: a card faking its size shows
  // only where the fill reaches past its real size.
  const std::uint64_t room =
      r.fs_available_bytes > r.options.free_floor ? r.fs_available_bytes - r.options.free_floor : 0;
  if (r.verified_bytes > 0 && r.options.max_bytes < room)
    out += "checked:  " + MiB(r.verified_bytes) + " of the " + MiB(room) +
           " free above the floor (--capacity-max): a card faking its size shows only where the fill reaches past "
           "its real size\n";
  if (outcome == "ok") out += "RESULT: OK, every block written read back intact\n";
  else if (outcome == "data_lost")
    out += "RESULT: DATA LOST, " + MiB(r.verified_bytes - r.intact_bytes) + " of " + MiB(r.verified_bytes) +
           " did not read back: a counterfeit or failing card\n";
  else if (r.verified_bytes == 0)
    out += "RESULT: INCOMPLETE, nothing was read back: no verdict on the card\n";
  else out += "RESULT: INCOMPLETE, nothing lost in the " + MiB(r.verified_bytes) + " read back\n";
  out += Fmt("finished in %.1f s", r.elapsed_seconds) + "\n";
  return out;
}

nlohmann::json CapacityToJson(const CapacityResult& r) {
  using nlohmann::json;
  auto range = [](const BadRange& b) {
    return json{{"offset", b.offset},
                {"bytes", b.bytes},
                {"kind", KindName(b.kind)},
                {"aliased_offset", Aliases(b.kind) ? json(b.aliased_offset) : json(nullptr)}};
  };
  json j = Envelope(1, "diskprobe_exporter bench --capacity-check", r.version, r.started_unix, r.elapsed_seconds);
  j["limits"] = {{"max_bytes", r.options.max_bytes},
                 {"free_floor_bytes", r.options.free_floor},
                 {"file_bytes", r.options.file_max}};
  j["filesystem"] = {{"directory", r.options.directory},
                     {"check_directory", r.check_directory},
                     {"disk", r.disk.empty() ? json(nullptr) : json(r.disk)},
                     {"total_bytes", r.fs_total_bytes},
                     {"available_bytes", r.fs_available_bytes}};
  // Hexadecimal: a 64-bit id does not survive JSON readers that hold numbers as doubles.
  char run_id[24];
  std::snprintf(run_id, sizeof run_id, "%016llx", static_cast<unsigned long long>(r.run_id));
  j["run_id"] = run_id;
  j["block_bytes"] = kFillBlock;
  j["planned_bytes"] = r.planned_bytes;
  j["written_bytes"] = r.written_bytes;
  j["verified_bytes"] = r.verified_bytes;
  j["intact_bytes"] = r.intact_bytes;
  j["lost_bytes"] = r.verified_bytes - r.intact_bytes;
  j["files"] = r.files;
  j["direct_io"] = r.direct_io;
  j["device_read_bytes"] = r.device_read_bytes ? json(*r.device_read_bytes) : json(nullptr);
  j["write"] = {{"seconds", r.write_seconds},
                {"bytes_per_second", r.write_seconds > 0 ? static_cast<double>(r.written_bytes) / r.write_seconds : 0.0}};
  j["verify"] = {
      {"seconds", r.verify_seconds},
      {"bytes_per_second", r.verify_seconds > 0 ? static_cast<double>(r.verified_bytes) / r.verify_seconds : 0.0}};
  json blocks = json::object();
  blocks[KindName(BlockKind::kIntact)] = r.blocks[static_cast<int>(BlockKind::kIntact)];
  for (BlockKind k : kBadKinds) blocks[KindName(k)] = r.blocks[static_cast<int>(k)];
  j["blocks"] = blocks;
  j["first_bad"] = r.bad_ranges.empty() ? json(nullptr) : range(r.bad_ranges.front());
  json ranges = json::array();
  for (const auto& b : r.bad_ranges) ranges.push_back(range(b));
  j["bad_ranges"] = ranges;
  j["bad_ranges_truncated"] = r.bad_ranges_truncated;
  j["alias_distance_bytes"] = r.alias_distance ? json(*r.alias_distance) : json(nullptr);
  j["card_alias_distance_bytes"] = r.card_alias_distance ? json(*r.card_alias_distance) : json(nullptr);
  j["result"] = CapacityOutcome(r);
  j["stop_reason"] = r.stop_reason.empty() ? json(nullptr) : json(r.stop_reason);
  j["interrupted"] = r.interrupted;
  j["removed"] = r.removed;
  j["remove_error"] = r.remove_error.empty() ? json(nullptr) : json(r.remove_error);
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
#if !DISKPROBE_BENCH_PUSH
  // The static ARMv6 build has no Pushgateway client: prometheus-cpp's push library needs
  // libcurl, whose dependencies (Kerberos, LDAP, ...) Debian ships without static archives.
  (void)r;
  *error = "--push: this build has no Pushgateway client (static ARMv6 build); use --format=json";
  return false;
#else
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
#endif
}

}  // namespace diskprobe::bench
