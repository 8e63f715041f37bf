#pragma once
// A small HTTP server on civetweb: every request goes to one Handler. civetweb's own document
// serving, CGI and directory listing are not used (no document_root), so nothing on disk is ever
// served.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/web_config.h"

struct mg_context;
struct mg_connection;

namespace diskprobe::http {

struct Request {
  std::string method;  // "GET", "HEAD", ...
  std::string path;    // URL-decoded path without the query, e.g. "/metrics"
  std::string query;   // after '?', without it; empty when none
  std::vector<std::pair<std::string, std::string>> headers;
  // Value of header `name` (case-insensitive), or nullopt.
  std::optional<std::string_view> Header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using Handler = std::function<Response(const Request&)>;

// Converts a Prometheus-style listen address to civetweb's listening_ports syntax.
//   ":29100"          -> "0.0.0.0:29100" (all IPv4 addresses; this civetweb build has no IPv6)
//   "127.0.0.1:0"     -> "127.0.0.1:0"   (port 0: the kernel picks one; see BoundAddresses)
//   "localhost:29100" -> the first IPv4 address the name resolves to, e.g. "127.0.0.1:29100"
// Returns nullopt with *error for IPv6 ("[::]:29100"), a missing or out-of-range port, or a host
// that does not resolve to IPv4.
std::optional<std::string> ToListeningPort(std::string_view address, std::string* error);

// Splits repeated and comma-separated --web.listen-address values into single addresses.
std::vector<std::string> SplitAddresses(const std::vector<std::string>& values);

class Server {
 public:
  Server();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts listening on every address (Prometheus syntax) with `threads` worker threads; with
  // `tls`, every port speaks HTTPS only (LoadOpenSslCompat() must have succeeded, see http/tls.h).
  // Returns false with *error (civetweb's reason, e.g. "cannot bind to 0.0.0.0:29100", or the TLS
  // file and OpenSSL's reason) on failure.
  bool Start(const std::vector<std::string>& addresses, int threads, Handler handler, std::string* error,
             const TlsServerConfig* tls = nullptr);
  // Stops accepting, waits for running requests and joins civetweb's threads, for at most
  // `timeout`. Returns false when civetweb had not finished by then (a client holding an idle
  // connection): the caller should then exit the process without running destructors. Idempotent.
  bool Stop(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // New TLS files and settings for connections accepted from now on (SIGHUP reload of the web
  // config; http/tls.h ReloadSslContext). False with *error when the server has no TLS or the
  // files don't load; the running settings stay.
  bool ReloadTls(const TlsServerConfig& tls, std::string* error);
  // "ip:port" per listening socket, with the port the kernel chose for port 0.
  std::vector<std::string> BoundAddresses() const;

 private:
  static int BeginRequest(mg_connection* conn);
  static int LogMessage(const mg_connection* conn, const char* message);
  static int ExternalSslCtx(void** ssl_ctx, void* user_data);

  mg_context* ctx_ = nullptr;
  Handler handler_;
  std::vector<std::string> hosts_;  // IPv4 host of each listening socket, in order
  void* ssl_ctx_ = nullptr;         // SSL_CTX handed to civetweb, which gives it back to be freed
};

}  // namespace diskprobe::http
