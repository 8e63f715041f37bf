#pragma once
// HTTP basic authentication against bcrypt hashes (basic_auth_users of --web.config.file), checked
// in our own handler before any route.
//
// bcrypt is deliberately slow (about 70 ms per check at cost 10 on an x86 core, several times that
// on a Pi), so:
//  - verified credentials are cached. The cache key is HMAC-SHA256 under a random key made at
//    start-up of (user, password, hash): the process never keeps a password, the key cannot be
//    guessed from outside, and only a *successful* bcrypt check inserts a key, so wrong passwords
//    can neither poison the cache nor tell, by timing, which users are cached.
//  - at most one bcrypt computation runs at a time, on a thread at nice 10, so a flood of wrong
//    passwords costs one core at most. A request needing bcrypt while one runs waits its turn in a
//    short queue (2 places), one place per client address: a client with a check running or
//    waiting gets 429 for its next uncached request at once, and a client whose last check failed
//    yields its place to one without failures. So a password guesser gets 429, and the first
//    scrape of a Prometheus with the right password (after a restart, the cache is empty) is
//    verified within a few bcrypt times instead of retrying into the same flood.
//  - an unknown user costs a bcrypt check against a dummy hash of a configured user's cost (which
//    user's is a keyed hash of the name: the same name always costs the same, and the costs of
//    unknown names are spread like those of the configured users), so response times do not tell
//    which user names exist, whatever cost their hashes have.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "http/server.h"
#include "http/tls.h"

namespace diskprobe::http {

// Checks `password` against a bcrypt `hash` ($2a$/$2b$/$2y$) with libxcrypt's crypt_rn; compares in
// constant time. False for a malformed hash.
bool BcryptVerify(std::string_view password, const std::string& hash);

// Decodes standard base64 (RFC 4648 section 4, padding required). nullopt on any invalid input.
std::optional<std::string> DecodeBase64(std::string_view in);

class BasicAuth {
 public:
  using Verifier = std::function<bool(std::string_view password, const std::string& hash)>;
  enum class Result { kOk, kDenied, kBusy };

  // users: user name -> bcrypt hash. `verify` is BcryptVerify except in tests. Loads the OpenSSL
  // compat libraries for the cache's HMAC (http/tls.h); throws std::runtime_error when they cannot be.
  explicit BasicAuth(std::vector<std::pair<std::string, std::string>> users, Verifier verify = BcryptVerify);
  ~BasicAuth();
  BasicAuth(const BasicAuth&) = delete;
  BasicAuth& operator=(const BasicAuth&) = delete;

  // Replaces the users (SIGHUP reload of --web.config.file). Cached credentials of users whose
  // hash is unchanged stay valid; those of changed or removed users can no longer match.
  // Requests already past the user lookup finish against the old hashes.
  void SetUsers(std::vector<std::pair<std::string, std::string>> users);

  // Checks an Authorization header value ("Basic <base64 user:password>"); nullopt: no header.
  // `source` names the client (its address) for the bcrypt queue; all "" share one place.
  Result Check(std::optional<std::string_view> authorization, std::string_view source = {});

  // How many times the verifier ran (bcrypt computations), and the cache size: for tests.
  std::uint64_t verifications() const;
  std::size_t cached() const;
  std::size_t waiting() const;  // checks queued for the bcrypt thread now

  // The dummy hash an unknown `user` is checked against: bcrypt ($2b$) with the cost of one of the
  // configured hashes (cost 10 when none is bcrypt), chosen by a keyed hash of the name.
  std::string DummyHashFor(std::string_view user) const;

  static constexpr std::size_t kMaxCached = 256;  // distinct verified credentials kept; cleared when full
  static constexpr std::size_t kMaxWaiting = 2;   // checks waiting for the bcrypt thread

 private:
  std::string CacheKey(std::string_view user, std::string_view password, const std::string& hash) const;
  void MakeDummies(const std::vector<std::pair<std::string, std::string>>& users);  // under mu_
  // The bcrypt queue: true when this check may run now (after waiting its turn); false for 429.
  bool AcquireSlot(const std::string& source);
  void ReleaseSlot(const std::string& source, bool ok);

  using Users = std::vector<std::pair<std::string, std::string>>;
  std::shared_ptr<const Users> users_;  // replaced whole by SetUsers; read under mu_
  Verifier verify_;
  unsigned char key_[32];
  HmacSha256Fn hmac_ = nullptr;
  mutable std::mutex mu_;  // guards users_, cache_ and verifications_
  std::unordered_set<std::string> cache_;
  std::uint64_t verifications_ = 0;
  std::vector<int> user_costs_;                       // bcrypt cost per configured user, under mu_
  std::vector<std::pair<int, std::string>> dummies_;  // cost -> dummy hash, under mu_

  struct Turn {
    std::string source;
    bool suspect = false;  // its source's last check failed
    bool granted = false, cancelled = false;
  };
  mutable std::mutex slot_mu_;  // guards the fields below
  std::condition_variable slot_cv_;
  bool slot_busy_ = false;
  std::string slot_source_;                             // whose check runs
  std::deque<Turn*> waiting_;                           // clean sources first, then suspects; each FIFO
  std::unordered_map<std::string, unsigned> failures_;  // consecutive failed checks per source

  // bcrypt runs on a thread of its own at nice 10, so a flood of wrong passwords yields the CPU to
  // cached, correct scrapes (and to the node's workload): the request thread holding
  // bcrypt_slot_ hands the check over and waits for it.
  bool VerifyOnWorker(std::string_view password, const std::string& hash);
  void WorkerLoop();
  struct Job {
    std::string_view password;
    const std::string* hash;
    bool done = false;
    bool ok = false;
  };
  std::mutex job_mu_;
  std::condition_variable job_cv_;
  Job* job_ = nullptr;  // under job_mu_
  bool stop_ = false;   // under job_mu_
  std::thread worker_;
};

// Wraps `next`: a request without valid credentials gets 401 with `WWW-Authenticate: Basic`, one
// refused a place in the bcrypt queue gets 429 with `Retry-After: 1`; `next` sees only authorised
// ones. The queue's source is the request's remote_addr.
Handler RequireBasicAuth(std::shared_ptr<BasicAuth> auth, Handler next);

}  // namespace diskprobe::http
