#include "http/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "http/request_head.h"
#include "http/tls.h"
#include "util/log.h"
#include "util/strings.h"

namespace diskprobe::http {

std::optional<std::string> ToListeningPort(std::string_view address, std::string* error) {
  address = util::Trim(address);
  const std::string quoted = "listen address \"" + std::string(address) + "\": ";
  if (address.empty()) {
    *error = quoted + "want HOST:PORT, [IPV6]:PORT or :PORT";
    return std::nullopt;
  }
  std::string_view host, port_text;
  bool v6 = false;
  if (address.front() == '[') {
    const auto close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      *error = quoted + "want [IPV6]:PORT";
      return std::nullopt;
    }
    host = address.substr(1, close - 1);
    port_text = address.substr(close + 2);
    v6 = true;
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string_view::npos) {
      *error = quoted + "want HOST:PORT, [IPV6]:PORT or :PORT";
      return std::nullopt;
    }
    host = address.substr(0, colon);
    port_text = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      *error = quoted + "an IPv6 address needs brackets: [" + std::string(host) + "]:" + std::string(port_text);
      return std::nullopt;
    }
  }
  auto port = util::ParseU64(port_text);
  if (!port || *port > 65535 || port_text.empty()) {
    *error = quoted + "port must be a number from 0 to 65535";
    return std::nullopt;
  }
  std::string h(host);
  if (v6) {
    in6_addr a{};
    if (inet_pton(AF_INET6, h.c_str(), &a) != 1) {
      *error = quoted + "\"" + h + "\" is not an IPv6 address";
      return std::nullopt;
    }
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, &a, buf, sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(*port);
  }
  std::string ip;
  if (host.empty()) {
    ip = "0.0.0.0";
  } else {
    in_addr a{};
    if (inet_pton(AF_INET, h.c_str(), &a) == 1) {
      ip = h;
    } else {
      addrinfo hints{};
      hints.ai_family = AF_INET;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      int rc = getaddrinfo(h.c_str(), nullptr, &hints, &res);
      if (rc != 0 || res == nullptr) {
        *error = quoted + "cannot resolve \"" + h + "\" to an IPv4 address: " + gai_strerror(rc);
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

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kWakeTag = ~std::uint64_t{0};
constexpr std::uint64_t kListenTagBase = kWakeTag - 64;  // listener i has tag kListenTagBase + i

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

// Status line, headers, Date (RFC 9110 IMF-fixdate) and Connection in one buffer with the body,
// so that a response leaves in one write (with TCP_NODELAY, one write per header line became one
// packet each).
std::string Serialize(const Response& resp, bool http11, bool keep_alive, bool head_only) {
  std::string h;
  h.reserve(256 + (head_only ? 0 : resp.body.size()));
  h += http11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  h += std::to_string(resp.status);
  h += ' ';
  h += ReasonPhrase(resp.status);
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
  h += keep_alive ? "\r\nConnection: keep-alive\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
  if (!head_only) h += resp.body;
  return h;
}

// The client's address as text, the key of the per-client cap and queues. An IPv4 client of a
// dual-stack [::] listener arrives as ::ffff:a.b.c.d and is written a.b.c.d, so it is the same
// client as on an IPv4 listener.
std::string ClientAddress(const sockaddr_storage& sa) {
  char buf[INET6_ADDRSTRLEN];
  if (sa.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(sa).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      in_addr a4{};
      std::memcpy(&a4, &a6.s6_addr[12], sizeof a4);
      inet_ntop(AF_INET, &a4, buf, sizeof buf);
    } else {
      inet_ntop(AF_INET6, &a6, buf, sizeof buf);
    }
  } else {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(sa).sin_addr, buf, sizeof buf);
  }
  return buf;
}

}  // namespace

struct Server::Impl {
  enum class State { kHandshake, kHead, kHandling, kWriting, kLinger };
  struct Conn {
    std::uint64_t id = 0;
    int fd = -1;
    std::string ip;  // client address, ClientAddress()
    void* tls = nullptr;
    State state = State::kHead;
    std::string in;   // received, not yet parsed
    std::string out;  // response being sent
    std::size_t out_off = 0;
    bool keep_after = false;
    bool head_started = false;  // a byte of the current request arrived
    int pipelined = 0;
    bool served = false;  // has answered a request
    Clock::time_point deadline;
    Clock::time_point since;  // last change of state: the oldest idle one is closed first at the cap
    std::uint32_t events = 0;
  };
  struct Job {
    std::uint64_t conn = 0;
    Request req;
    bool http11 = false, keep_alive = false, head_only = false;
    int error = 0;  // nonzero: answer this status without calling the handler
  };
  struct Done {
    std::uint64_t conn = 0;
    std::string bytes;
    bool keep_alive = false;
  };

  Limits limits;
  Handler handler;
  void* ssl_ctx = nullptr;  // SSL_CTX of MakeSslContext; null for plain HTTP
  const TlsIo* tls_io = nullptr;
  std::vector<int> listeners;
  std::vector<std::string> hosts;  // host of each listener, as normalised: "0.0.0.0", "[::1]"
  int epfd = -1, wakefd = -1;
  std::thread loop;
  std::vector<std::thread> workers;
  std::atomic<bool> stopping{false};

  // Loop thread only.
  std::unordered_map<std::uint64_t, std::unique_ptr<Conn>> conns;
  std::unordered_map<std::string, int> per_ip;
  std::uint64_t next_id = 1;

  // Work queue: one FIFO per client address, addresses served in turn.
  std::mutex q_mu;
  std::condition_variable q_cv;
  std::map<std::string, std::deque<Job>> queues;
  std::deque<std::string> turn;  // addresses with queued jobs, in serving order
  int running = 0;                 // handlers running now, under q_mu

  std::mutex done_mu;
  std::vector<Done> done;

  ~Impl() {
    for (auto& [id, c] : conns) CloseFd(*c);
    for (int fd : listeners) ::close(fd);
    if (epfd >= 0) ::close(epfd);
    if (wakefd >= 0) ::close(wakefd);
    if (ssl_ctx != nullptr) FreeSslContext(ssl_ctx);
  }

  void Wake() const {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wakefd, &one, sizeof one);
  }

  void CloseFd(Conn& c) const {
    if (c.tls != nullptr) tls_io->free_session(c.tls);
    c.tls = nullptr;
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
  }

  // `reset`: close with RST (SO_LINGER 0). A connection dropped by a deadline may have a response
  // queued that its client never reads; a plain close would leave the kernel holding it (and the
  // client's connection open) until it gives up retransmitting into a zero window.
  void Close(std::uint64_t id, bool reset = false) {
    auto it = conns.find(id);
    if (it == conns.end()) return;
    Conn& c = *it->second;
    if (reset && c.fd >= 0) {
      const linger l{1, 0};
      ::setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    if (--per_ip[c.ip] <= 0) per_ip.erase(c.ip);
    CloseFd(c);  // also leaves epoll
    conns.erase(it);
  }

  void Want(Conn& c, std::uint32_t events) {
    if (events == c.events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    ::epoll_ctl(epfd, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = events;
  }

  void SetState(Conn& c, State s, Clock::time_point now, std::chrono::milliseconds budget) {
    c.state = s;
    c.since = now;
    c.deadline = now + budget;
  }

  void Accept(int lfd, Clock::time_point now) {
    for (int k = 0; k < 64; ++k) {
      sockaddr_storage sa{};
      socklen_t len = sizeof sa;
      const int fd = ::accept4(lfd, reinterpret_cast<sockaddr*>(&sa), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) EvictOldestIdle();  // make room; level-triggered: retried
        return;
      }
      std::string ip = ClientAddress(sa);
      // At the per-address cap, as at the global one, an idle connection of that address makes
      // room: otherwise a local process holding idle connections from 127.0.0.1 would lock out
      // every new scrape from 127.0.0.1.
      if (auto it = per_ip.find(ip);
          it != per_ip.end() && it->second >= limits.max_per_client && !EvictOldestIdle(&ip)) {
        ::close(fd);
        continue;
      }
      if (static_cast<int>(conns.size()) >= limits.max_connections && !EvictOldestIdle()) {
        ::close(fd);
        continue;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &limits.max_unsent_bytes, sizeof limits.max_unsent_bytes);
      auto c = std::make_unique<Conn>();
      c->id = next_id++;
      c->fd = fd;
      c->ip = ip;
      // The TLS session (tens of KiB once the handshake starts) is made when the first byte
      // arrives: a connection that sends nothing costs a descriptor only.
      SetState(*c, ssl_ctx != nullptr ? State::kHandshake : State::kHead, now, limits.request_head);
      c->head_started = true;  // the first request's budget runs from accept
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = c->id;
      if (::epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        CloseFd(*c);
        continue;
      }
      c->events = EPOLLIN;
      ++per_ip[ip];
      conns.emplace(c->id, std::move(c));
    }
  }

  // Closes the connection that has waited longest without a request being handled or answered,
  // preferring one that never completed a request (a kept-alive Prometheus connection between
  // scrapes is older than any attacker's, which the head deadline keeps recycling). Idle: in the
  // TLS handshake, waiting for (the rest of) a request head, or lingering after its last answer;
  // a connection whose request is being handled or whose response is being written is never
  // closed here. `ip`: only among that client address's connections. False: none is idle.
  bool EvictOldestIdle(const std::string* ip = nullptr) {
    Conn* oldest = nullptr;
    auto rank = [](const Conn& c) { return std::make_pair(c.served, c.since); };
    for (auto& [id, c] : conns)
      if ((c->state == State::kHead || c->state == State::kHandshake || c->state == State::kLinger) &&
          (ip == nullptr || c->ip == *ip) && (oldest == nullptr || rank(*c) < rank(*oldest)))
        oldest = c.get();
    if (oldest == nullptr) return false;
    Close(oldest->id);
    return true;
  }

  // Reads what the socket has (up to twice the head limit buffered). False: the connection is gone.
  bool ReadSome(Conn& c) {
    char buf[17 * 1024];  // > one TLS record, so OpenSSL never keeps decrypted bytes we did not take
    while (c.in.size() < 2 * limits.max_head_bytes) {
      long n;
      if (c.tls != nullptr) {
        n = tls_io->read(c.tls, buf, sizeof buf);
        if (n == kTlsWantRead) return true;
        if (n == kTlsWantWrite) {
          Want(c, EPOLLIN | EPOLLOUT);
          return true;
        }
        if (n <= 0) return false;
      } else {
        n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
        if (n <= 0) return false;
      }
      c.in.append(buf, static_cast<std::size_t>(n));
      if (c.state == State::kLinger) c.in.clear();
    }
    return true;
  }

  void OnEvent(Conn& c, std::uint32_t ev, Clock::time_point now) {
    const std::uint64_t id = c.id;
    if (ev & EPOLLERR) return Close(id);
    switch (c.state) {
      case State::kHandshake: {
        if (c.tls == nullptr && (c.tls = tls_io->new_session(ssl_ctx, c.fd)) == nullptr) return Close(id);
        const int rc = tls_io->handshake(c.tls);
        if (rc == 0) {
          c.state = State::kHead;
          Want(c, EPOLLIN);
          return OnEvent(c, EPOLLIN, now);  // the request may have come with the handshake
        }
        if (rc == kTlsWantRead) return Want(c, EPOLLIN);
        if (rc == kTlsWantWrite) return Want(c, EPOLLOUT);
        return Close(id);  // a failed handshake: plain HTTP on the TLS port, a refused certificate
      }
      case State::kHead:
        if (c.events & EPOLLOUT) Want(c, EPOLLIN);
        if (!ReadSome(c)) return Close(id);
        return Parse(c, now);
      case State::kWriting: return Flush(c, now);
      case State::kLinger:
        if (!ReadSome(c)) return Close(id);
        return;
      case State::kHandling:
        if (ev & EPOLLHUP) return Close(id);  // the answer has nowhere to go
        return;
    }
  }

  void Parse(Conn& c, Clock::time_point now) {
    if (c.in.empty()) return;
    if (!c.head_started) {  // a kept connection's next request: its head gets the head budget
      c.head_started = true;
      c.deadline = std::min(c.deadline, now + limits.request_head);
    }
    const auto [end, skip] = FindHeadEnd(c.in, limits.max_head_bytes);
    Job job;
    job.conn = c.id;
    if (end == std::string::npos || end > limits.max_head_bytes) {
      if (c.in.size() <= limits.max_head_bytes) return;  // wait for the rest, within the deadline
      job.error = 431;
    } else {
      ParsedHead p = ParseRequestHead(std::string_view(c.in).substr(0, end));
      c.in.erase(0, end + skip);
      job.req = std::move(p.req);
      job.req.remote_addr = c.ip;
      job.http11 = p.http11;
      job.error = p.error;
      job.head_only = job.req.method == "HEAD";
      // A request body is never read: answer, then close rather than parse it as a request.
      job.keep_alive = p.keep_alive && !p.has_body && c.pipelined < limits.max_pipelined;
    }
    if (job.error != 0) job.keep_alive = false;
    c.state = State::kHandling;
    c.since = now;
    Want(c, 0);
    Enqueue(c.ip, std::move(job));
  }

  void Enqueue(const std::string& ip, Job job) {
    {
      std::lock_guard<std::mutex> lock(q_mu);
      auto& q = queues[ip];
      if (q.empty()) turn.push_back(ip);
      q.push_back(std::move(job));
    }
    q_cv.notify_one();
  }

  void Flush(Conn& c, Clock::time_point now) {
    const std::uint64_t id = c.id;
    while (c.out_off < c.out.size()) {
      const char* p = c.out.data() + c.out_off;
      const std::size_t left = c.out.size() - c.out_off;
      long n;
      if (c.tls != nullptr) {
        n = tls_io->write(c.tls, p, left);
        if (n == kTlsWantWrite) return Want(c, EPOLLOUT);
        if (n == kTlsWantRead) return Want(c, EPOLLIN);
        if (n <= 0) return Close(id);
      } else {
        n = ::send(c.fd, p, left, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return Want(c, EPOLLOUT);
        if (n <= 0) return Close(id);
      }
      c.out_off += static_cast<std::size_t>(n);
    }
    std::string().swap(c.out);
    c.out_off = 0;
    if (!c.keep_after || stopping.load()) {
      if (c.tls != nullptr) return Close(id);  // close_notify goes out with the close
      // Lingering close: stop sending, read and drop what the client still sends, so that closing
      // with unread bytes does not reset the connection before the client has read the answer.
      ::shutdown(c.fd, SHUT_WR);
      c.in.clear();
      SetState(c, State::kLinger, now, std::chrono::milliseconds(1000));
      return Want(c, EPOLLIN);
    }
    c.served = true;
    c.pipelined = c.in.empty() ? 0 : c.pipelined + 1;
    c.head_started = false;
    SetState(c, State::kHead, now, limits.keep_alive_idle);
    Want(c, EPOLLIN);
    Parse(c, now);  // a pipelined request may already be here
  }

  void TakeDone(Clock::time_point now) {
    std::vector<Done> batch;
    {
      std::lock_guard<std::mutex> lock(done_mu);
      batch.swap(done);
    }
    for (auto& d : batch) {
      auto it = conns.find(d.conn);
      if (it == conns.end()) continue;  // closed while its request was handled
      Conn& c = *it->second;
      c.out = std::move(d.bytes);
      c.out_off = 0;
      c.keep_after = d.keep_alive;
      SetState(c, State::kWriting, now, limits.send);
      Flush(c, now);
    }
  }

  void ExpireDeadlines(Clock::time_point now) {
    std::vector<std::uint64_t> late;
    for (auto& [id, c] : conns)
      if (c->state != State::kHandling && c->deadline <= now) late.push_back(id);
    for (auto id : late) Close(id, /*reset=*/true);
  }

  int NextTimeoutMs(Clock::time_point now) const {
    Clock::time_point next = Clock::time_point::max();
    for (const auto& [id, c] : conns)
      if (c->state != State::kHandling) next = std::min(next, c->deadline);
    if (next == Clock::time_point::max()) return -1;
    if (next <= now) return 0;
    return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()) + 1;
  }

  void Loop() {
    epoll_event evs[64];
    while (!stopping.load()) {
      const int n = ::epoll_wait(epfd, evs, 64, NextTimeoutMs(Clock::now()));
      const Clock::time_point now = Clock::now();
      for (int i = 0; i < n; ++i) {
        const std::uint64_t tag = evs[i].data.u64;
        if (tag == kWakeTag) {
          std::uint64_t v;
          [[maybe_unused]] ssize_t r = ::read(wakefd, &v, sizeof v);
          TakeDone(now);
        } else if (tag >= kListenTagBase) {
          Accept(listeners[tag - kListenTagBase], now);
        } else if (auto it = conns.find(tag); it != conns.end()) {
          OnEvent(*it->second, evs[i].events, now);
        }
      }
      ExpireDeadlines(now);
    }
  }

  void Work() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(q_mu);
        q_cv.wait(lock, [&] { return stopping.load() || !turn.empty(); });
        if (stopping.load()) return;
        const std::string ip = turn.front();
        turn.pop_front();
        auto& q = queues[ip];
        job = std::move(q.front());
        q.pop_front();
        if (q.empty()) {
          queues.erase(ip);
        } else {
          turn.push_back(ip);
        }
        ++running;
      }
      Response resp;
      if (job.error != 0) {
        resp = Response{job.error, "text/plain; charset=utf-8", std::string(ReasonPhrase(job.error)) + "\n", {}};
      } else {
        try {
          resp = handler(job.req);
        } catch (const std::exception& e) {
          log::Error("http handler failed", {{"path", job.req.path}, {"err", e.what()}});
          resp = Response{500, "text/plain; charset=utf-8", "internal error\n", {}};
        } catch (...) {
          resp = Response{500, "text/plain; charset=utf-8", "internal error\n", {}};
        }
      }
      Done d{job.conn, Serialize(resp, job.http11, job.keep_alive, job.head_only), job.keep_alive};
      {
        std::lock_guard<std::mutex> lock(done_mu);
        done.push_back(std::move(d));
      }
      Wake();
      std::lock_guard<std::mutex> lock(q_mu);
      --running;
    }
  }
};

Server::Server() = default;
Server::~Server() { Stop(); }

bool Server::Start(const std::vector<std::string>& addresses, int threads, Handler handler, std::string* error,
                   const TlsServerConfig* tls, Limits limits) {
  if (impl_ != nullptr) {
    *error = "server already started";
    return false;
  }
  auto impl = std::make_unique<Impl>();
  impl->limits = limits;
  for (const auto& a : addresses) {
    auto p = ToListeningPort(a, error);
    if (!p) return false;
    const std::string host = p->substr(0, p->rfind(':'));
    const auto port = htons(static_cast<std::uint16_t>(std::stoi(p->substr(p->rfind(':') + 1))));
    sockaddr_storage ss{};
    socklen_t sa_len = 0;
    const bool v6 = host.front() == '[';
    if (v6) {
      auto& sa = reinterpret_cast<sockaddr_in6&>(ss);
      sa.sin6_family = AF_INET6;
      inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &sa.sin6_addr);
      sa.sin6_port = port;
      sa_len = sizeof sa;
    } else {
      auto& sa = reinterpret_cast<sockaddr_in&>(ss);
      sa.sin_family = AF_INET;
      inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
      sa.sin_port = port;
      sa_len = sizeof sa;
    }
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    const int yes = 1;
    // [::] is dual-stack whatever net.ipv6.bindv6only says: IPv6 and IPv4 clients on one socket,
    // as Go's net.Listen on "[::]:PORT" (so [::]:PORT and 0.0.0.0:PORT together are the same
    // port twice: EADDRINUSE). Any other IPv6 address serves IPv6 only.
    const int v6only = 0;
    // The longest backlog the kernel allows (net.core.somaxconn): when a connect flood fills a
    // short one, the kernel drops a scraper's SYN and its connect waits for the 1 s retransmit.
    if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes) != 0 ||
        (v6 && ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only) != 0) ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&ss), sa_len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      *error = "cannot listen on " + *p + ": " + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return false;
    }
    impl->listeners.push_back(fd);
    impl->hosts.push_back(host);
  }
  if (impl->listeners.empty()) {
    *error = "no listen address";
    return false;
  }
  if (impl->listeners.size() > 64) {
    *error = "at most 64 listen addresses";
    return false;
  }
  if (tls != nullptr) {
    impl->tls_io = LoadTlsIo(error);
    if (impl->tls_io == nullptr) return false;
    impl->ssl_ctx = MakeSslContext(*tls, error);
    if (impl->ssl_ctx == nullptr) return false;
  }
  impl->handler = std::move(handler);
  impl->epfd = ::epoll_create1(EPOLL_CLOEXEC);
  impl->wakefd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl->epfd < 0 || impl->wakefd < 0) {
    *error = std::string("cannot create the event loop: ") + std::strerror(errno);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(impl->epfd, EPOLL_CTL_ADD, impl->wakefd, &ev);
  for (std::size_t i = 0; i < impl->listeners.size(); ++i) {
    ev.data.u64 = kListenTagBase + i;
    ::epoll_ctl(impl->epfd, EPOLL_CTL_ADD, impl->listeners[i], &ev);
  }
  Impl* p = impl.get();
  p->loop = std::thread([p] { p->Loop(); });
  for (int i = 0; i < std::max(1, threads); ++i) p->workers.emplace_back([p] { p->Work(); });
  impl_ = std::move(impl);
  return true;
}

bool Server::Stop(std::chrono::milliseconds timeout) {
  if (impl_ == nullptr) return true;
  Impl* p = impl_.get();
  {
    std::lock_guard<std::mutex> lock(p->q_mu);
    p->stopping.store(true);
  }
  p->q_cv.notify_all();
  p->Wake();
  p->loop.join();  // the loop never blocks but in epoll_wait, which the wake ends
  for (int fd : p->listeners) ::close(fd);
  p->listeners.clear();
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(p->q_mu);
      if (p->running == 0) break;
    }
    if (Clock::now() >= deadline) {
      // A handler is still running (a stuck collector, a bcrypt check): leave the threads and the
      // state they use behind; the caller exits the process.
      for (auto& t : p->workers) t.detach();
      impl_.release();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& t : p->workers) t.join();
  impl_.reset();
  return true;
}

bool Server::ReloadTls(const TlsServerConfig& tls, std::string* error) {
  if (impl_ == nullptr || impl_->ssl_ctx == nullptr) {
    *error = "the server was not started with TLS";
    return false;
  }
  return ReloadSslContext(impl_->ssl_ctx, tls, error);
}

std::vector<std::string> Server::BoundAddresses() const {
  std::vector<std::string> out;
  if (impl_ == nullptr) return out;
  for (std::size_t i = 0; i < impl_->listeners.size(); ++i) {
    sockaddr_storage sa{};
    socklen_t len = sizeof sa;
    if (::getsockname(impl_->listeners[i], reinterpret_cast<sockaddr*>(&sa), &len) != 0) continue;
    const auto port = sa.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(sa).sin6_port
                                               : reinterpret_cast<const sockaddr_in&>(sa).sin_port;
    out.push_back(impl_->hosts[i] + ":" + std::to_string(ntohs(port)));
  }
  return out;
}

}  // namespace diskprobe::http
