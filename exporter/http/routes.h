#pragma once
// The exporter's HTTP endpoints:
//   /                 landing page: name, version, link to the metrics, devices found
//   <telemetry path>  the metrics (text exposition format 0.0.4), default /metrics; gzip when the
//                     request's Accept-Encoding allows it (http/gzip.h), "Vary: Accept-Encoding"
//   /-/healthy        200 while the process serves
//   /-/ready          200 once start-up finished, 503 before and while stopping
// Anything else is 404; methods other than GET and HEAD are 405.
#include <atomic>
#include <string>

#include "sources/device_registry.h"
#include "http/server.h"
#include "scrape/scraper.h"

namespace diskprobe::http {

// The returned handler keeps the pointers; they must outlive the server.
Handler MakeExporterHandler(Scraper* scraper, DeviceRegistry* devices, std::string telemetry_path,
                            const std::atomic<bool>* ready);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(std::string_view s);

}  // namespace diskprobe::http
