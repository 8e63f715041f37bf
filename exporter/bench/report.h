#pragma once
// A bench Report as a plain table, as JSON (docs/bench-schema.json) and as metric families pushed
// to a Prometheus Pushgateway (docs/metrics.md, "bench").
#include <string>

#include <nlohmann/json.hpp>

#include "bench/bench.h"

namespace diskprobe::bench {

// The table: one row per test with MB/s (10^6 bytes/s, as dd and the Pi SD card test print them),
// IOPS and latency percentiles, then the verdict, warnings and notes.
std::string FormatTable(const Report& r);

// The JSON document described by docs/bench-schema.json (schema_version 1).
nlohmann::json ToJson(const Report& r);

// Pushes the results to the Pushgateway at `url` ("http://host:port"), job "diskprobe-bench",
// grouped by instance (this host's name) and device. Returns false with *error set when the URL
// is malformed or the gateway does not answer 2xx.
bool Push(const Report& r, const std::string& url, std::string* error);

}  // namespace diskprobe::bench
