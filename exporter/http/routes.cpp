#include "http/routes.h"

#include "http/gzip.h"
#include "util/log.h"
#include "version.h"

namespace diskprobe::http {

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string LandingPage(const std::string& telemetry_path, const DeviceList& devices) {
  std::string p = HtmlEscape(telemetry_path);
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>diskprobe_exporter</title></head>\n"
      "<body>\n<h1>diskprobe_exporter</h1>\n<p>Storage monitor for SD cards, eMMC and disks. Version ";
  html += HtmlEscape(kVersion);
  html += " (revision ";
  html += HtmlEscape(kRevision);
  html += ").</p>\n<p><a href=\"" + p +
          "\">Metrics</a> &middot; <a href=\"/-/healthy\">Health</a> &middot; "
          "<a href=\"/-/ready\">Readiness</a></p>\n<h2>Devices</h2>\n";
  if (devices.empty()) {
    html += "<p>No block devices selected (see devices.include / devices.exclude in the configuration).</p>\n";
  } else {
    html += "<table>\n<tr><th>device</th><th>major:minor</th></tr>\n";
    for (const auto& d : devices)
      html += "<tr><td>" + HtmlEscape(d.name) + "</td><td>" + std::to_string(d.major) + ":" + std::to_string(d.minor) +
              "</td></tr>\n";
    html += "</table>\n";
  }
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace

Handler MakeExporterHandler(Scraper* scraper, DeviceRegistry* devices, std::string telemetry_path,
                            const std::atomic<bool>* ready) {
  return [=](const Request& req) -> Response {
    if (req.method != "GET" && req.method != "HEAD") {
      Response r{405, "text/plain; charset=utf-8", "method not allowed\n", {}};
      r.headers.emplace_back("Allow", "GET, HEAD");
      return r;
    }
    if (req.path == telemetry_path) {
      Response r{200, "text/plain; version=0.0.4; charset=utf-8", scraper->Render(), {}};
      r.headers.emplace_back("Vary", "Accept-Encoding");
      if (auto ae = req.Header("Accept-Encoding"); ae && AcceptsGzip(*ae)) {
        std::string gz, err;
        if (GzipCompress(r.body, &gz, &err)) {
          r.body = std::move(gz);
          r.headers.emplace_back("Content-Encoding", "gzip");
        } else {
          log::Warn("gzip failed, serving the metrics uncompressed", {{"err", err}});
        }
      }
      return r;
    }
    if (req.path == "/") {
      return Response{200, "text/html; charset=utf-8", LandingPage(telemetry_path, *devices->Snapshot()), {}};
    }
    if (req.path == "/-/healthy") return Response{200, "text/plain; charset=utf-8", "Healthy.\n", {}};
    if (req.path == "/-/ready") {
      if (ready->load()) return Response{200, "text/plain; charset=utf-8", "Ready.\n", {}};
      return Response{503, "text/plain; charset=utf-8", "Not ready.\n", {}};
    }
    return Response{404, "text/plain; charset=utf-8", "404 page not found\n", {}};
  };
}

}  // namespace diskprobe::http
