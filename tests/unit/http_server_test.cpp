// http/server: the event-loop server on real loopback sockets. Clients that send nothing, send
// half a request, pipeline without reading or open too many connections must cost no worker
// thread, be dropped by their deadline or cap, and never keep another client from an answer.
// Deadlines here are short; each check waits several times longer than the deadline it checks.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <string>
#include <thread>

#include "http/server.h"

namespace diskprobe::http {
namespace {

using namespace std::chrono_literals;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A connection to [ip6]:port; fd -1 when connect fails.
Fd Connect6(const char* ip6, int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET6, ip6, &sa.sin6_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ::close(fd);
    return Fd(-1);
  }
  return Fd(fd);
}

// Whether an IPv6 socket can be bound to ::1 here (a kernel booted with ipv6.disable=1, or a
// container without IPv6, cannot).
bool HaveIpv6Loopback() {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
  ::close(fd);
  return ok;
}

Fd Connect(int port, int rcvbuf = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  return Fd(fd);
}

void SendAll(const Fd& fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd.get(), s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

// Reads until `want` bytes have arrived, the peer closes, or `timeout`. Sets *closed on EOF/reset.
std::string Receive(const Fd& fd, std::chrono::milliseconds timeout, std::size_t want = SIZE_MAX,
                    bool* closed = nullptr) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + timeout;
  if (closed) *closed = false;
  while (out.size() < want) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[65536];
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// One response: head and a Content-Length body.
std::string ReadResponse(const Fd& fd, std::chrono::milliseconds timeout = 10000ms) {
  std::string got;
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    auto h = got.find("\r\n\r\n");
    if (h != std::string::npos) {
      auto cl = got.find("Content-Length: ");
      std::size_t len = cl == std::string::npos ? 0 : std::stoul(got.substr(cl + 16));
      if (got.size() >= h + 4 + len) return got.substr(0, h + 4 + len);
    }
    std::string more = Receive(fd, 50ms, 1);
    got += more;
  }
  return got;
}

class ServerTest : public ::testing::Test {
 protected:
  void Start(Limits limits, int threads = 1) {
    std::string err;
    ASSERT_TRUE(server_.Start(
        {"127.0.0.1:0"}, threads, [this](const Request& r) { return Handle(r); }, &err, nullptr, limits))
        << err;
    const std::string a = server_.BoundAddresses().at(0);
    port_ = std::stoi(a.substr(a.rfind(':') + 1));
  }
  Response Handle(const Request& r) {
    ++calls_;
    // Holds its worker until the test releases it (at most 10 s, so a failing test still ends).
    if (r.path == "/block")
      for (int i = 0; i < 1000 && !release_.load(); ++i) std::this_thread::sleep_for(10ms);
    if (r.path == "/big") return Response{200, "text/plain", std::string(64 * 1024, 'x'), {}};
    return Response{200, "text/plain", r.method + " " + r.path + " ?" + r.query + " from " + r.remote_addr, {}};
  }
  Server server_;
  int port_ = 0;
  std::atomic<int> calls_{0};
  std::atomic<bool> release_{false};
};

TEST_F(ServerTest, ServesKeepAliveAndPipelinedRequests) {
  Start(Limits{});
  Fd c = Connect(port_);
  SendAll(c, "GET /a%20b?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  std::string r = ReadResponse(c);
  EXPECT_EQ(r.substr(0, 17), "HTTP/1.1 200 OK\r\n") << r;
  EXPECT_NE(r.find("Connection: keep-alive\r\n"), std::string::npos);
  EXPECT_NE(r.find("\r\n\r\nGET /a b ?x=1 from 127.0.0.1"), std::string::npos) << r;
  // Two requests in one write: two answers, in order; HEAD has the length but no body.
  SendAll(c, "GET /one HTTP/1.1\r\n\r\nHEAD /two HTTP/1.1\r\n\r\n");
  // Both answers may come in one read: read until the second one's head has ended (however long
  // a busy machine takes), then briefly for a HEAD body that must not be there.
  std::string both;
  std::size_t second = std::string::npos;
  for (auto end = std::chrono::steady_clock::now() + 10000ms; std::chrono::steady_clock::now() < end;) {
    both += Receive(c, 50ms, 1);
    second = both.find("HTTP/1.1 ", 1);
    if (second != std::string::npos && both.find("\r\n\r\n", second) != std::string::npos) break;
  }
  both += Receive(c, 200ms);
  ASSERT_NE(second, std::string::npos) << both;
  const std::string one = both.substr(0, second), two = both.substr(second);
  EXPECT_NE(one.find("GET /one"), std::string::npos) << one;
  EXPECT_EQ(two.find("HEAD /two"), std::string::npos) << two;
  EXPECT_NE(two.find("Content-Length: 26\r\n"), std::string::npos) << two;
  // Connection: close is honoured.
  SendAll(c, "GET /last HTTP/1.1\r\nConnection: close\r\n\r\n");
  bool closed = false;
  std::string last = Receive(c, 10000ms, SIZE_MAX, &closed);
  EXPECT_NE(last.find("Connection: close\r\n"), std::string::npos);
  EXPECT_TRUE(closed);
}

TEST_F(ServerTest, BadRequestsGetAStatusAndAClose) {
  Start(Limits{});
  const std::pair<std::string, std::string> cases[] = {
      {"garbage\r\n\r\n", "HTTP/1.0 400 "},
      {"GET /x HTTP/2.0\r\n\r\n", "HTTP/1.0 505 "},
      {"GET /x HTTP/1.1\r\nX: " + std::string(9000, 'a') + "\r\n\r\n", "HTTP/1.0 431 "},
      {"GET /%zz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
      {"GET /x HTTP/1.1\r\n folded\r\n\r\n", "HTTP/1.1 400 "},
  };
  for (const auto& [req, want] : cases) {
    Fd c = Connect(port_);
    SendAll(c, req);
    bool closed = false;
    std::string r = Receive(c, 10000ms, SIZE_MAX, &closed);
    EXPECT_EQ(r.substr(0, want.size()), want) << req.substr(0, 40);
    EXPECT_TRUE(closed) << req.substr(0, 40);
  }
  // A request with a body is answered, then the connection closes (the body is never parsed).
  Fd c = Connect(port_);
  SendAll(c, "POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nGET /");
  bool closed = false;
  std::string r = Receive(c, 10000ms, SIZE_MAX, &closed);
  EXPECT_NE(r.find("POST /x"), std::string::npos);
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(closed);
  EXPECT_EQ(calls_, 1) << "only the POST reached the handler";
}

// One worker thread; 20 idle and 20 half-sent connections: a scrape is still answered at once,
// long before any of them times out (no connection holds the worker).
TEST_F(ServerTest, IdleAndSlowClientsHoldNoWorker) {
  Limits l;
  l.request_head = 5000ms;
  l.max_per_client = 100;  // every client here is 127.0.0.1
  Start(l, 1);
  std::vector<Fd> hostile;
  for (int i = 0; i < 20; ++i) hostile.push_back(Connect(port_));
  for (int i = 0; i < 20; ++i) {
    hostile.push_back(Connect(port_));
    SendAll(hostile.back(), "GET /metrics HTTP/1.1\r\nHost: x");
  }
  std::this_thread::sleep_for(100ms);
  for (int i = 0; i < 3; ++i) {
    Fd c = Connect(port_);
    SendAll(c, "GET /metrics HTTP/1.1\r\n\r\n");
    std::string r = ReadResponse(c, 1000ms);
    EXPECT_EQ(r.substr(0, 15), "HTTP/1.1 200 OK") << "answered within 1 s (head deadline 5 s)";
  }
}

TEST_F(ServerTest, HeadDeadlineClosesIdleAndSlowConnections) {
  Limits l;
  l.request_head = 300ms;
  Start(l);
  Fd idle = Connect(port_);
  Fd slow = Connect(port_);
  bool idle_closed = false, slow_closed = false;
  std::thread dripper([&] {  // one byte every 100 ms: never a complete head
    const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    for (char ch : head) {
      if (::send(slow.get(), &ch, 1, MSG_NOSIGNAL) <= 0) return;
      std::this_thread::sleep_for(100ms);
    }
  });
  Receive(idle, 3000ms, SIZE_MAX, &idle_closed);
  EXPECT_TRUE(idle_closed) << "closed by the 300 ms head deadline";
  std::string s = Receive(slow, 3000ms, SIZE_MAX, &slow_closed);
  dripper.join();
  EXPECT_TRUE(slow_closed) << "a slow head has the same budget from accept";
  EXPECT_EQ(s, "") << "closed without an answer";
  EXPECT_EQ(calls_, 0);
}

// A client pipelining requests for a 64 KiB body and reading nothing: its responses stall at the
// unsent-bytes bound, the send deadline closes it, the handler ran a bounded number of times, and
// another client is answered meanwhile.
TEST_F(ServerTest, PipeliningWithoutReadingIsBounded) {
  Limits l;
  l.send = 500ms;
  Start(l, 2);
  Fd hog = Connect(port_, 4096);
  std::string reqs;
  for (int i = 0; i < 500; ++i) reqs += "GET /big HTTP/1.1\r\n\r\n";
  ::send(hog.get(), reqs.data(), reqs.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  std::this_thread::sleep_for(100ms);
  Fd c = Connect(port_);
  SendAll(c, "GET /small HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ReadResponse(c, 1000ms).substr(0, 15), "HTTP/1.1 200 OK");
  std::this_thread::sleep_for(1500ms);  // three times the send deadline
  tcp_info ti{};
  socklen_t len = sizeof ti;
  ASSERT_EQ(::getsockopt(hog.get(), IPPROTO_TCP, TCP_INFO, &ti, &len), 0);
  EXPECT_NE(ti.tcpi_state, TCP_ESTABLISHED) << "the server closed the non-reading client";
  EXPECT_LE(calls_.load(), 1 + l.max_pipelined + 1) << "pipelined work is bounded, not 500 responses";
}

// At the per-address cap, the address's oldest idle connection makes room for the new one: a
// local process holding idle connections from 127.0.0.1 does not lock out Prometheus there.
TEST_F(ServerTest, PerClientCapClosesTheOldestIdleConnectionOfThatAddress) {
  Limits l;  // the defaults: 32 per address, 512 in all
  ASSERT_EQ(l.max_per_client, 32);
  Start(l);
  std::vector<Fd> held;
  for (int i = 0; i < 32; ++i) {
    held.push_back(Connect(port_));
    std::this_thread::sleep_for(20ms);  // accepted one by one: each has its own age
  }
  Fd fresh = Connect(port_);
  SendAll(fresh, "GET /fresh HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ReadResponse(fresh).substr(0, 15), "HTTP/1.1 200 OK") << "the 33rd connection is served";
  bool closed = false;
  Receive(held[0], 2000ms, SIZE_MAX, &closed);
  EXPECT_TRUE(closed) << "the oldest idle connection of the address made room";
  closed = false;
  Receive(held[1], 100ms, SIZE_MAX, &closed);
  EXPECT_FALSE(closed) << "only one was closed";
  SendAll(held[31], "GET /ok HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ReadResponse(held[31]).substr(0, 15), "HTTP/1.1 200 OK") << "the others are still served";
}

// Connections with a request being handled are never closed for a new one: when none of the
// address's connections is idle, the new one is closed at accept.
TEST_F(ServerTest, PerClientCapRefusesWhenNoConnectionIsIdle) {
  Limits l;
  l.max_per_client = 3;
  Start(l);  // one worker: the first request blocks it, the other two wait in the queue
  std::vector<Fd> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(Connect(port_));
    SendAll(held.back(), "GET /block HTTP/1.1\r\n\r\n");
  }
  std::this_thread::sleep_for(200ms);
  Fd extra = Connect(port_);  // the kernel completes the handshake; the server closes it at accept
  bool closed = false;
  Receive(extra, 2000ms, SIZE_MAX, &closed);
  EXPECT_TRUE(closed) << "the 4th connection from one address is closed";
  release_ = true;
  for (auto& fd : held)
    EXPECT_EQ(ReadResponse(fd).substr(0, 15), "HTTP/1.1 200 OK") << "the three requests in progress are answered";
}

TEST_F(ServerTest, TotalCapClosesTheOldestConnectionWithoutARequest) {
  Limits l;
  l.max_connections = 4;
  l.max_per_client = 100;
  Start(l);
  std::vector<Fd> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(Connect(port_));
    std::this_thread::sleep_for(20ms);
  }
  Fd fresh = Connect(port_);
  SendAll(fresh, "GET /fresh HTTP/1.1\r\n\r\n");
  EXPECT_EQ(ReadResponse(fresh).substr(0, 15), "HTTP/1.1 200 OK") << "a new client always gets in";
  bool closed = false;
  Receive(held[0], 1000ms, SIZE_MAX, &closed);
  EXPECT_TRUE(closed) << "the oldest idle connection made room";
}

TEST_F(ServerTest, StopsAtOnceWithIdleConnections) {
  Start(Limits{});
  std::vector<Fd> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(Connect(port_));
  std::this_thread::sleep_for(50ms);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_.Stop(2000ms));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  bool closed = false;
  Receive(idle[0], 1000ms, SIZE_MAX, &closed);
  EXPECT_TRUE(closed);
}

// [::]:PORT is dual-stack (IPv6 and IPv4 clients on one socket, IPv4 ones named by their IPv4
// address, so the per-client cap and queues count them as on an IPv4 listener); [::1]:PORT
// serves IPv6 only.
TEST(ServerIpv6, DualStackAnyAndIpv6OnlyLoopback) {
  if (!HaveIpv6Loopback()) {
    if (std::getenv("CI") != nullptr && std::string(std::getenv("CI")) == "true") FAIL() << "no IPv6 loopback under CI";
    GTEST_SKIP() << "no IPv6 loopback on this machine";
  }
  auto handle = [](const Request& r) { return Response{200, "text/plain", "from " + r.remote_addr, {}}; };
  Server any, loop6;
  std::string err;
  ASSERT_TRUE(any.Start({"[::]:0"}, 1, handle, &err)) << err;
  ASSERT_TRUE(loop6.Start({"[::1]:0"}, 1, handle, &err)) << err;
  const std::string a = any.BoundAddresses().at(0), b = loop6.BoundAddresses().at(0);
  EXPECT_EQ(a.rfind("[::]:", 0), 0u) << a;
  EXPECT_EQ(b.rfind("[::1]:", 0), 0u) << b;
  const int any_port = std::stoi(a.substr(a.rfind(':') + 1)), loop6_port = std::stoi(b.substr(b.rfind(':') + 1));

  Fd v6 = Connect6("::1", any_port);
  ASSERT_GE(v6.get(), 0);
  SendAll(v6, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r6 = ReadResponse(v6);
  EXPECT_NE(r6.find("HTTP/1.1 200"), std::string::npos) << r6;
  EXPECT_NE(r6.find("\r\n\r\nfrom ::1"), std::string::npos) << r6;

  Fd v4 = Connect(any_port);
  SendAll(v4, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r4 = ReadResponse(v4);
  EXPECT_NE(r4.find("\r\n\r\nfrom 127.0.0.1"), std::string::npos) << r4;

  Fd only6 = Connect6("::1", loop6_port);
  ASSERT_GE(only6.get(), 0);
  SendAll(only6, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_NE(ReadResponse(only6).find("\r\n\r\nfrom ::1"), std::string::npos);
  // No IPv4 on the [::1] listener's port.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<std::uint16_t>(loop6_port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  EXPECT_NE(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  ::close(fd);
  EXPECT_TRUE(any.Stop());
  EXPECT_TRUE(loop6.Stop());
}

}  // namespace
}  // namespace diskprobe::http
