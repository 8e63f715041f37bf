#include "http/server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netdb.h>
#include <strings.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include "http/tls.h"
#include "util/log.h"
#include "util/strings.h"

namespace diskprobe::http {

std::optional<std::string_view> Request::Header(std::string_view name) const {
  for (const auto& [k, v] : headers)
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), name.size()) == 0) return std::string_view(v);
  return std::nullopt;
}

std::optional<std::string> ToListeningPort(std::string_view address, std::string* error) {
  address = util::Trim(address);
  if (address.empty() || address.front() == '[') {
    *error = "listen address \"" + std::string(address) +
             "\": IPv6 is not supported by this civetweb build; use an IPv4 address or \":PORT\"";
    return std::nullopt;
  }
  auto colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    *error = "listen address \"" + std::string(address) + "\": want HOST:PORT or :PORT";
    return std::nullopt;
  }
  std::string_view host = address.substr(0, colon);
  auto port = util::ParseU64(address.substr(colon + 1));
  if (!port || *port > 65535 || address.substr(colon + 1).empty()) {
    *error = "listen address \"" + std::string(address) + "\": port must be a number from 0 to 65535";
    return std::nullopt;
  }
  if (host.find(':') != std::string_view::npos) {
    *error = "listen address \"" + std::string(address) + "\": IPv6 is not supported by this civetweb build";
    return std::nullopt;
  }
  std::string ip;
  if (host.empty()) {
    ip = "0.0.0.0";
  } else {
    in_addr a{};
    std::string h(host);
    if (inet_pton(AF_INET, h.c_str(), &a) == 1) {
      ip = h;
    } else {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      int rc = getaddrinfo(h.c_str(), nullptr, &hints, &res);
      if (rc != 0 || res == nullptr) {
        *error = "listen address \"" + std::string(address) + "\": cannot resolve \"" + h +
                 "\" to an IPv4 address: " + gai_strerror(rc);
        return std::nullopt;
      }
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
      ip = buf;
      freeaddrinfo(res);
    }
  }
  return ip + ":" + std::to_string(*port);
}

std::vector<std::string> SplitAddresses(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) {
    std::string_view s = v;
    while (!s.empty()) {
      auto comma = s.find(',');
      std::string_view part = util::Trim(s.substr(0, comma));
      if (!part.empty()) out.emplace_back(part);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  return out;
}

Server::Server() = default;
Server::~Server() { Stop(); }

bool Server::Start(const std::vector<std::string>& addresses, int threads, Handler handler, std::string* error,
                   const TlsServerConfig* tls) {
  if (ctx_ != nullptr) {
    *error = "server already started";
    return false;
  }
  std::string ports;
  hosts_.clear();
  for (const auto& a : addresses) {
    auto p = ToListeningPort(a, error);
    if (!p) return false;
    hosts_.push_back(p->substr(0, p->rfind(':')));
    ports += (ports.empty() ? "" : ",") + *p + (tls ? "s" : "");
  }
  if (ports.empty()) {
    *error = "no listen address";
    return false;
  }
  if (tls != nullptr) {
    ssl_ctx_ = MakeSslContext(*tls, error);
    if (ssl_ctx_ == nullptr) return false;
  }
  handler_ = std::move(handler);
  const std::string nthreads = std::to_string(threads < 1 ? 1 : threads);
  const char* options[] = {"listening_ports", ports.c_str(),
                           "num_threads", nthreads.c_str(),
                           // A connection that sends no complete request holds a worker this
                           // long (civetweb gives each connection a worker): 5 s, not 30, bounds
                           // what idle or slowloris connections cost. Prometheus sends its
                           // request at once; the body is written well within it.
                           "request_timeout_ms", "5000",
                           "enable_keep_alive", "yes",
                           "tcp_nodelay", "1",
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.begin_request = &Server::BeginRequest;
  callbacks.log_message = &Server::LogMessage;
  if (ssl_ctx_ != nullptr) callbacks.external_ssl_ctx = &Server::ExternalSslCtx;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = this;
  init.configuration_options = options;
  char errbuf[256] = {0};
  unsigned code = 0;
  mg_error_data err{};
  err.code = &code;
  err.text = errbuf;
  err.text_buffer_size = sizeof errbuf;
  ctx_ = mg_start2(&init, &err);
  if (ctx_ == nullptr) {
    *error = errbuf[0] ? errbuf : "civetweb failed to start on " + ports;
    // civetweb says only "Failed to setup server ports": find which address and why.
    for (std::string_view rest = ports; !rest.empty();) {
      std::string one(rest.substr(0, rest.find(',')));
      rest.remove_prefix(std::min(rest.size(), one.size() + 1));
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      if (inet_pton(AF_INET, one.substr(0, one.rfind(':')).c_str(), &sa.sin_addr) != 1) continue;
      sa.sin_port = htons(static_cast<std::uint16_t>(std::stoi(one.substr(one.rfind(':') + 1))));
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      int yes = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        *error = "cannot listen on " + one + ": " + std::strerror(errno);
      ::close(fd);
    }
    if (ssl_ctx_ != nullptr) FreeSslContext(ssl_ctx_);
    ssl_ctx_ = nullptr;
    return false;
  }
  return true;
}

bool Server::Stop(std::chrono::milliseconds timeout) {
  if (ctx_ == nullptr) return true;
  // civetweb 1.15's master thread notices the stop flag only when its poll() on the listening
  // sockets returns, which takes up to ~1.5 s when idle. SIGTERM must stop within 2 s, so while
  // mg_stop() waits, connect to each listening socket to wake the poll at once.
  std::vector<sockaddr_in> wake;
  for (const auto& a : BoundAddresses()) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    std::string host = a.substr(0, a.rfind(':'));
    if (host == "0.0.0.0") host = "127.0.0.1";
    if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) continue;
    sa.sin_port = htons(static_cast<std::uint16_t>(std::stoi(a.substr(a.rfind(':') + 1))));
    wake.push_back(sa);
  }
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  mg_context* ctx = ctx_;
  ctx_ = nullptr;
  std::thread stopper([ctx, stopped] {
    mg_stop(ctx);
    stopped->store(true);
  });
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!stopped->load() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& sa : wake) {
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) continue;
      ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa);
      ::close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (stopped->load()) {
    stopper.join();
    return true;
  }
  // A worker is blocked reading from a client that sends nothing; civetweb checks its stop flag
  // only every ~2 s there. The caller is exiting: let it go rather than wait.
  stopper.detach();
  return false;
}

bool Server::ReloadTls(const TlsServerConfig& tls, std::string* error) {
  if (ctx_ == nullptr || ssl_ctx_ == nullptr) {
    *error = "the server was not started with TLS";
    return false;
  }
  return ReloadSslContext(ssl_ctx_, tls, error);
}

std::vector<std::string> Server::BoundAddresses() const {
  std::vector<std::string> out;
  if (ctx_ == nullptr) return out;
  mg_server_port ports[16];
  int n = mg_get_server_ports(ctx_, 16, ports);
  for (int i = 0; i < n; ++i) {
    std::string host = static_cast<std::size_t>(i) < hosts_.size() ? hosts_[static_cast<std::size_t>(i)] : "0.0.0.0";
    out.push_back(host + ":" + std::to_string(ports[i].port));
  }
  return out;
}

// civetweb asks for its SSL_CTX when it starts (*ssl_ctx == NULL: hand over ours, return 1 so it
// creates none) and offers it back when the context is freed (non-NULL: ours to free, return 1).
int Server::ExternalSslCtx(void** ssl_ctx, void* user_data) {
  auto* self = static_cast<Server*>(user_data);
  if (*ssl_ctx == nullptr) {
    *ssl_ctx = self->ssl_ctx_;
    return self->ssl_ctx_ != nullptr ? 1 : -1;
  }
  FreeSslContext(*ssl_ctx);
  if (*ssl_ctx == self->ssl_ctx_) self->ssl_ctx_ = nullptr;
  return 1;
}

int Server::LogMessage(const mg_connection*, const char* message) {
  log::Debug("http server", {{"msg", message ? message : ""}});
  return 1;
}

namespace {

// What civetweb 1.15's should_keep_alive() decides from the request (the server runs with
// enable_keep_alive yes): a Connection header has the last word (keep-alive when one of its
// comma-separated options is a case-insensitive prefix of "keep-alive", as civetweb's
// header_has_option matches), else HTTP/1.1 keeps the connection and 1.0 closes it. civetweb
// makes the same decision after the response, so the header tells the client what happens.
bool KeepAlive(const mg_request_info* ri) {
  for (int i = 0; i < ri->num_headers; ++i) {
    if (strcasecmp(ri->http_headers[i].name, "Connection") != 0) continue;
    std::string_view rest = ri->http_headers[i].value ? ri->http_headers[i].value : "";
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string_view opt = util::Trim(rest.substr(0, comma));
      if (!opt.empty() && opt.size() <= 10 && strncasecmp("keep-alive", opt.data(), opt.size()) == 0) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    return false;
  }
  return ri->http_version != nullptr && std::strcmp(ri->http_version, "1.1") == 0;
}

// The response head as mg_response_header_send would write it: status line with the request's
// HTTP version and civetweb's reason phrase, our headers, Date (RFC 7231 IMF-fixdate) and
// Connection.
std::string ResponseHead(mg_connection* conn, const mg_request_info* ri, const Response& resp) {
  std::string h;
  h.reserve(256);
  h += "HTTP/";
  h += ri->http_version ? ri->http_version : "1.1";
  h += ' ';
  h += std::to_string(resp.status);
  h += ' ';
  h += mg_get_response_code_text(conn, resp.status);
  h += "\r\nContent-Type: ";
  h += resp.content_type;
  h += "\r\nContent-Length: ";
  h += std::to_string(resp.body.size());
  h += "\r\n";
  for (const auto& [k, v] : resp.headers) {
    h += k;
    h += ": ";
    h += v;
    h += "\r\n";
  }
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char date[64];
  std::size_t n = std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  h += "Date: ";
  h.append(date, n);
  h += KeepAlive(ri) ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
  return h;
}

}  // namespace

int Server::BeginRequest(mg_connection* conn) {
  const mg_request_info* ri = mg_get_request_info(conn);
  auto* self = static_cast<Server*>(ri->user_data);
  Request req;
  req.method = ri->request_method ? ri->request_method : "";
  req.path = ri->local_uri ? ri->local_uri : (ri->request_uri ? ri->request_uri : "");
  req.query = ri->query_string ? ri->query_string : "";
  for (int i = 0; i < ri->num_headers; ++i)
    req.headers.emplace_back(ri->http_headers[i].name, ri->http_headers[i].value);

  Response resp;
  try {
    resp = self->handler_(req);
  } catch (const std::exception& e) {
    // No exception may cross into civetweb's C code.
    log::Error("http handler failed", {{"path", req.path}, {"err", e.what()}});
    resp = Response{500, "text/plain; charset=utf-8", "internal error\n", {}};
  } catch (...) {
    resp = Response{500, "text/plain; charset=utf-8", "internal error\n", {}};
  }

  // The status line, headers and body leave in one mg_write: civetweb's mg_response_header_send
  // writes every header line with its own send(), and with TCP_NODELAY each became a packet
  // (seven per scrape, most of the exporter's system time in tests/bench/scrape_cost).
  std::string head = ResponseHead(conn, ri, resp);
  if (req.method == "HEAD" || resp.body.empty()) {
    mg_write(conn, head.data(), head.size());
  } else {
    head.reserve(head.size() + resp.body.size());
    head += resp.body;
    mg_write(conn, head.data(), head.size());
  }
  return resp.status;
}

}  // namespace diskprobe::http
