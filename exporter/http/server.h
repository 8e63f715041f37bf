#pragma once
// A small HTTP/1.1 server for the exporter's few endpoints: every request goes to one Handler.
// Nothing on disk is ever served.
//
// One event-loop thread owns every socket (epoll, non-blocking, TLS through the compat library's
// non-blocking sessions, http/tls.h); `threads` worker threads only run the Handler on complete
// requests and never touch a socket. So a client that connects and sends nothing, sends its
// request a byte at a time, stops half-way through a TLS handshake or pipelines requests without
// reading the answers holds a file descriptor and a few KiB, never a worker, and is dropped by a
// deadline (Limits). Requests wait for a worker in one queue per client address, served in turn,
// so no client's requests queue in front of another's. docs/architecture.md records the
// measurements behind this choice.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/request_head.h"
#include "http/web_config.h"

namespace diskprobe::http {

// Request: http/request_head.h.

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using Handler = std::function<Response(const Request&)>;

// Converts a Prometheus-style listen address to "IPv4:PORT" or "[IPv6]:PORT".
//   ":29100"          -> "0.0.0.0:29100" (all IPv4 addresses, as before IPv6 was supported)
//   "127.0.0.1:0"     -> "127.0.0.1:0"   (port 0: the kernel picks one; see BoundAddresses)
//   "localhost:29100" -> the first IPv4 address the name resolves to, e.g. "127.0.0.1:29100"
//   "[::]:29100"      -> "[::]:29100"    (dual-stack: every IPv6 and IPv4 address, IPV6_V6ONLY off)
//   "[::1]:29100"     -> "[::1]:29100"   (IPv6 literals only, in brackets, written as inet_ntop does)
// Returns nullopt with *error for a missing or out-of-range port, an IPv6 address without
// brackets or not valid, or a host name that does not resolve to IPv4 (names resolve to IPv4 only).
std::optional<std::string> ToListeningPort(std::string_view address, std::string* error);

// Splits repeated and comma-separated --web.listen-address values into single addresses.
std::vector<std::string> SplitAddresses(const std::vector<std::string>& values);

// What one client can cost the server, and how long each step of a connection may take. The
// defaults suit Prometheus (one request at a time, sent at once, answers read at once) on a LAN.
struct Limits {
  // From accept to the end of the first request head, TLS handshake included; and from the first
  // byte of a later request on a kept connection to the end of its head.
  std::chrono::milliseconds request_head{3000};
  // A kept-alive connection with no request in progress (Prometheus reuses its connection between
  // scrapes, 15-60 s apart; an idle connection costs a descriptor, not a worker).
  std::chrono::milliseconds keep_alive_idle{120000};
  // For one response to leave the process (bytes accepted by the kernel), from its first byte.
  std::chrono::milliseconds send{10000};
  std::size_t max_head_bytes = 8192;  // request line and headers; larger heads get 431
  // Responses in a row to requests that were already waiting (pipelined) when the previous one
  // was sent; the next such response says "Connection: close".
  int max_pipelined = 16;
  // Unsent bytes a connection may leave in the kernel (TCP_NOTSENT_LOWAT): a client that reads
  // nothing stalls its own response at this point instead of filling megabytes of socket buffers.
  int max_unsent_bytes = 64 * 1024;
  int max_connections = 512;  // in all; at the limit the oldest connection without a request in
                              // progress is closed for the new one
  int max_per_client = 32;    // per client address; at the limit that address's oldest connection
                              // without a request in progress is closed for the new one, which is
                              // closed at accept only when there is none
};

class Server {
 public:
  Server();
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts listening on every address (Prometheus syntax) with `threads` worker threads; with
  // `tls`, every port speaks HTTPS only (LoadOpenSslCompat() must have succeeded, see http/tls.h).
  // Returns false with *error ("cannot listen on 0.0.0.0:29100: Address already in use", or the
  // TLS file and OpenSSL's reason) on failure.
  bool Start(const std::vector<std::string>& addresses, int threads, Handler handler, std::string* error,
             const TlsServerConfig* tls = nullptr, Limits limits = {});
  // Stops accepting, closes every connection and joins the threads, for at most `timeout`.
  // Returns false when a Handler was still running by then (a scrape stuck in a collector, a
  // bcrypt check): the caller should then exit the process without running destructors.
  // Idempotent.
  bool Stop(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  // New TLS files and settings for connections accepted from now on (SIGHUP reload of the web
  // config; http/tls.h ReloadSslContext). False with *error when the server has no TLS or the
  // files don't load; the running settings stay.
  bool ReloadTls(const TlsServerConfig& tls, std::string* error);
  // "ip:port" or "[ipv6]:port" per listening socket, with the port the kernel chose for port 0.
  std::vector<std::string> BoundAddresses() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace diskprobe::http
