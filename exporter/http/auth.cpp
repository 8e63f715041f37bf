#include "http/auth.h"

#include <crypt.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>

namespace diskprobe::http {
namespace {

constexpr int kDefaultCost = 10;  // htpasswd -B's default, when no configured hash is bcrypt

// The cost of a bcrypt hash ("$2y$12$..." -> 12), or nullopt when it is not one.
std::optional<int> BcryptCost(std::string_view h) {
  if (h.size() < 7 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return std::nullopt;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return std::nullopt;
  if (!std::isdigit(static_cast<unsigned char>(h[4])) || !std::isdigit(static_cast<unsigned char>(h[5])))
    return std::nullopt;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return std::nullopt;
  return cost;
}

// A bcrypt hash of `cost` with a random salt that no password matches in practice: libxcrypt's
// setting ("$2b$12$" and 22 salt characters) padded to a hash's 60 characters. crypt reads only
// the setting part, so checking a password against it costs exactly what a real hash of that cost
// costs, without computing one at start-up (345 ms at cost 12 here).
std::string MakeDummyHash(int cost) {
  unsigned char rnd[16];
  std::size_t got = 0;
  while (got < sizeof rnd) {
    ssize_t n = ::getrandom(rnd + got, sizeof rnd - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  if (crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), reinterpret_cast<const char*>(rnd), sizeof rnd,
                       setting, sizeof setting) == nullptr)
    throw std::runtime_error("crypt_gensalt_rn failed for bcrypt cost " + std::to_string(cost));
  std::string h = setting;
  h.resize(60, '.');  // '.' is in bcrypt's base64 alphabet
  return h;
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

void AppendLengthPrefixed(std::string* out, std::string_view s) {
  std::uint64_t n = s.size();
  out->append(reinterpret_cast<const char*>(&n), sizeof n);
  out->append(s);
}

}  // namespace

bool BcryptVerify(std::string_view password, const std::string& hash) {
  // crypt_rn needs a NUL-terminated phrase: a password containing NUL cannot match anything.
  if (password.find('\0') != std::string_view::npos) return false;
  const std::string phrase(password);
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_rn(phrase.c_str(), hash.c_str(), data.get(), sizeof(crypt_data));
  if (out == nullptr || out[0] == '*') return false;
  const std::size_t n = std::strlen(out);
  if (n != hash.size()) return false;  // the length of a bcrypt hash is public (60)
  // Constant time over the hash bytes, as OpenSSL's CRYPTO_memcmp (the exporter does not link
  // OpenSSL, http/tls.h): no early exit that would tell by timing how many leading bytes matched.
  unsigned char diff = 0;
  for (std::size_t i = 0; i < n; ++i) diff = static_cast<unsigned char>(diff | (out[i] ^ hash[i]));
  asm volatile("" : "+r"(diff));  // keeps the compiler from turning the loop into an early exit
  return diff == 0;
}

std::optional<std::string> DecodeBase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int j = 0; j < 4; ++j) {
      char c = in[i + static_cast<std::size_t>(j)];
      if (c == '=' && i + 4 == in.size() && j >= 2) {
        v[j] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;  // data after padding
      v[j] = Base64Value(c);
      if (v[j] < 0) return std::nullopt;
    }
    std::uint32_t triple = (static_cast<std::uint32_t>(v[0]) << 18) | (static_cast<std::uint32_t>(v[1]) << 12) |
                           (static_cast<std::uint32_t>(v[2]) << 6) | static_cast<std::uint32_t>(v[3]);
    out += static_cast<char>((triple >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((triple >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(triple & 0xff);
  }
  return out;
}

BasicAuth::BasicAuth(std::vector<std::pair<std::string, std::string>> users, Verifier verify)
    : users_(std::make_shared<const Users>(std::move(users))), verify_(std::move(verify)) {
  std::string error;
  hmac_ = LoadHmacSha256(&error);
  if (hmac_ == nullptr) throw std::runtime_error(error);
  std::size_t got = 0;
  while (got < sizeof key_) {
    ssize_t n = ::getrandom(key_ + got, sizeof key_ - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(std::string("getrandom: ") + std::strerror(errno));
    }
    got += static_cast<std::size_t>(n);
  }
  std::lock_guard<std::mutex> lock(mu_);
  MakeDummies(*users_);
}

void BasicAuth::MakeDummies(const std::vector<std::pair<std::string, std::string>>& users) {
  user_costs_.clear();
  for (const auto& [u, h] : users) user_costs_.push_back(BcryptCost(h).value_or(kDefaultCost));
  if (user_costs_.empty()) user_costs_.push_back(kDefaultCost);
  for (int cost : user_costs_) {
    bool have = false;
    for (const auto& [c, h] : dummies_) have = have || c == cost;
    if (!have) dummies_.emplace_back(cost, MakeDummyHash(cost));
  }
}

std::string BasicAuth::DummyHashFor(std::string_view user) const {
  // The same keyed hash as the cache: an outsider cannot predict which cost a name gets.
  const std::string mac = CacheKey(user, "dummy cost", "");
  std::uint32_t pick = 0;
  std::memcpy(&pick, mac.data(), sizeof pick);
  std::lock_guard<std::mutex> lock(mu_);
  const int cost = user_costs_[pick % user_costs_.size()];
  for (const auto& [c, h] : dummies_)
    if (c == cost) return h;
  return dummies_.front().second;  // not reached: MakeDummies made one per cost
}

std::string BasicAuth::CacheKey(std::string_view user, std::string_view password, const std::string& hash) const {
  // Length-prefixed fields: ("a:b", "c") and ("a", "b:c") give different keys.
  std::string msg;
  AppendLengthPrefixed(&msg, user);
  AppendLengthPrefixed(&msg, password);
  AppendLengthPrefixed(&msg, hash);
  unsigned char mac[32];
  if (hmac_(key_, sizeof key_, msg.data(), msg.size(), mac) != 0)
    throw std::runtime_error("HMAC-SHA256 failed");  // OpenSSL out of memory; the request gets a 500
  return std::string(reinterpret_cast<const char*>(mac), sizeof mac);
}

BasicAuth::Result BasicAuth::Check(std::optional<std::string_view> authorization, std::string_view source) {
  if (!authorization) return Result::kDenied;
  std::string_view a = *authorization;
  if (a.size() < 6 || strncasecmp(a.data(), "Basic ", 6) != 0) return Result::kDenied;
  a.remove_prefix(6);
  while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
  while (!a.empty() && a.back() == ' ') a.remove_suffix(1);
  std::optional<std::string> decoded = DecodeBase64(a);
  if (!decoded) return Result::kDenied;
  const std::size_t colon = decoded->find(':');
  if (colon == std::string::npos) return Result::kDenied;
  const std::string_view user = std::string_view(*decoded).substr(0, colon);
  const std::string_view password = std::string_view(*decoded).substr(colon + 1);

  std::shared_ptr<const Users> users;
  {
    std::lock_guard<std::mutex> lock(mu_);
    users = users_;
  }
  const std::string* hash = nullptr;
  for (const auto& [u, h] : *users)
    if (u == user) hash = &h;

  Result result = Result::kDenied;
  std::string key;
  if (hash != nullptr) {
    key = CacheKey(user, password, *hash);
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.count(key) != 0) result = Result::kOk;
  }
  if (result != Result::kOk) {
    const std::string src(source);
    const std::string dummy = hash == nullptr ? DummyHashFor(user) : std::string();
    if (!AcquireSlot(src)) {
      result = Result::kBusy;
    } else {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++verifications_;
      }
      const bool ok = VerifyOnWorker(password, hash != nullptr ? *hash : dummy) && hash != nullptr;
      ReleaseSlot(src, ok);
      if (ok) {
        std::lock_guard<std::mutex> lock(mu_);
        if (cache_.size() >= kMaxCached) cache_.clear();
        cache_.insert(key);
        result = Result::kOk;
      }
    }
  }
  explicit_bzero(decoded->data(), decoded->size());  // glibc >= 2.25: never optimised away
  return result;
}

bool BasicAuth::AcquireSlot(const std::string& source) {
  std::unique_lock<std::mutex> lock(slot_mu_);
  if (slot_busy_ && slot_source_ == source) return false;  // one check per client at a time
  for (const Turn* t : waiting_)
    if (t->source == source) return false;
  if (!slot_busy_) {
    slot_busy_ = true;
    slot_source_ = source;
    return true;
  }
  Turn turn;
  turn.source = source;
  turn.suspect = failures_.count(source) != 0;
  if (waiting_.size() >= kMaxWaiting) {
    // Full: a client without failures takes the place of the last one with failures.
    if (turn.suspect || !waiting_.back()->suspect) return false;
    waiting_.back()->cancelled = true;
    waiting_.pop_back();
    slot_cv_.notify_all();
  }
  auto pos = waiting_.end();
  if (!turn.suspect) pos = std::find_if(waiting_.begin(), waiting_.end(), [](const Turn* t) { return t->suspect; });
  waiting_.insert(pos, &turn);
  // Bounded: a verifier that never returns must not keep request threads forever.
  const bool woke = slot_cv_.wait_for(lock, std::chrono::seconds(20), [&] { return turn.granted || turn.cancelled; });
  if (turn.granted) return true;
  if (!woke) waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &turn));
  return false;
}

void BasicAuth::ReleaseSlot(const std::string& source, bool ok) {
  std::lock_guard<std::mutex> lock(slot_mu_);
  if (ok) {
    failures_.erase(source);
  } else {
    if (failures_.size() >= 4096 && failures_.count(source) == 0) failures_.clear();  // bounded memory
    ++failures_[source];
  }
  if (waiting_.empty()) {
    slot_busy_ = false;
    return;
  }
  Turn* next = waiting_.front();
  waiting_.pop_front();
  next->granted = true;
  slot_source_ = next->source;
  slot_cv_.notify_all();
}

std::size_t BasicAuth::waiting() const {
  std::lock_guard<std::mutex> lock(slot_mu_);
  return waiting_.size();
}

BasicAuth::~BasicAuth() {
  {
    std::lock_guard<std::mutex> lock(job_mu_);
    stop_ = true;
  }
  job_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

bool BasicAuth::VerifyOnWorker(std::string_view password, const std::string& hash) {
  Job job{password, &hash};  // both outlive the wait below
  std::unique_lock<std::mutex> lock(job_mu_);
  if (!worker_.joinable()) worker_ = std::thread([this] { WorkerLoop(); });
  job_ = &job;
  job_cv_.notify_all();
  job_cv_.wait(lock, [&] { return job.done; });
  return job.ok;
}

void BasicAuth::WorkerLoop() {
  // nice 10 (per thread on Linux; best effort): against a nice-0 thread that wants the CPU this
  // one gets about a tenth of it, so request threads serving cached scrapes win, and so does the
  // node's own workload, yet a first check on a busy Pi still ends within seconds. (SCHED_IDLE,
  // tried first, starved it: a cost-4 check took 3.5 s on this 2-core machine at load 4.5.)
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10);
  std::unique_lock<std::mutex> lock(job_mu_);
  for (;;) {
    job_cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
    if (job_ == nullptr) return;  // stop_, nothing pending
    Job* job = job_;
    job_ = nullptr;
    lock.unlock();
    const bool ok = verify_(job->password, *job->hash);
    lock.lock();
    job->ok = ok;
    job->done = true;
    job_cv_.notify_all();
  }
}

void BasicAuth::SetUsers(std::vector<std::pair<std::string, std::string>> users) {
  auto next = std::make_shared<const Users>(std::move(users));
  std::lock_guard<std::mutex> lock(mu_);
  MakeDummies(*next);
  users_ = std::move(next);
  // The cache is kept: a key covers (user, password, hash), so entries of a changed or removed
  // user's hash can never match again, and unchanged users need no new bcrypt. Clearing it made
  // every reload (an Ansible run, a certificate rotation) cost each scraper a bcrypt, and an HA
  // Prometheus pair scraping at once got 429 for one of them.
}

std::uint64_t BasicAuth::verifications() const {
  std::lock_guard<std::mutex> lock(mu_);
  return verifications_;
}

std::size_t BasicAuth::cached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

Handler RequireBasicAuth(std::shared_ptr<BasicAuth> auth, Handler next) {
  return [auth = std::move(auth), next = std::move(next)](const Request& req) -> Response {
    switch (auth->Check(req.Header("Authorization"), req.remote_addr)) {
      case BasicAuth::Result::kOk: return next(req);
      case BasicAuth::Result::kBusy: {
        Response r{429, "text/plain; charset=utf-8", "too many authentication attempts, retry later\n", {}};
        r.headers.emplace_back("Retry-After", "1");
        return r;
      }
      case BasicAuth::Result::kDenied: break;
    }
    Response r{401, "text/plain; charset=utf-8", "Unauthorized\n", {}};
    r.headers.emplace_back("WWW-Authenticate", "Basic");
    return r;
  };
}

}  // namespace diskprobe::http
