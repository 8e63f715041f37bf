#pragma once
// A bench Report as a plain table, as JSON (docs/bench-schema.json) and as metric families pushed
// to a Prometheus Pushgateway (docs/metrics.md, "bench").
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "bench/capacity.h"

namespace diskprobe::bench {

// The table: one row per test with MB/s (10^6 bytes/s, as dd and the Pi SD card test print them),
// IOPS and latency percentiles, then the verdict, warnings and notes.
std::string FormatTable(const Report& r);

// The JSON document described by docs/bench-schema.json (schema_version 1).
nlohmann::json ToJson(const Report& r);

// The fake-capacity check as text: what was filled and read back, intact and lost bytes by kind,
// the first bad offset, the alias distance, the result line.
std::string FormatCapacity(const CapacityResult& r);

// The fake-capacity check's JSON document (docs/bench-capacity-schema.json, schema_version 1).
nlohmann::json CapacityToJson(const CapacityResult& r);

// "ok" (everything written read back intact), "data_lost" (some did not) or "incomplete"
// (interrupted before a loss was seen, or nothing was written).
std::string CapacityOutcome(const CapacityResult& r);

// A Pushgateway's base URL split as prometheus::Gateway wants it.
struct PushTarget {
  std::string host;  // scheme and host: "http://pushgateway", "http://[::1]"
  std::string port;  // decimal, 1..65535
};

// Parses "http://HOST:PORT" or "https://HOST:PORT", an optional trailing "/" and nothing else
// (an IPv6 HOST in brackets). nullopt with *error set (the URL and what is wrong) otherwise. Checked while the
// command line is parsed, so a bad URL is a usage error before the benchmark runs.
std::optional<PushTarget> ParsePushUrl(const std::string& url, std::string* error);

// Pushes the results to the Pushgateway at `url` ("http://host:port"), job "diskprobe-bench",
// grouped by instance (this host's name) and device. Returns false with *error set when the URL
// is malformed or the gateway does not answer 2xx.
bool Push(const Report& r, const std::string& url, std::string* error);

}  // namespace diskprobe::bench
