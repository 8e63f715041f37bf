#include "http/auth.h"

#include <crypt.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace diskprobe::http {
namespace {

// bcrypt of a random password at cost 10 (the cost htpasswd -B uses by default): an unknown user
// is checked against it so that it costs what a known one costs.
constexpr const char* kDummyHash = "$2y$10$NNeymRtOeGQ67eOvtOoeWe2do1w0lC2CtD1fAl8/wrbKuGMRvZB06";

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

BasicAuth::Result BasicAuth::Check(std::optional<std::string_view> authorization) {
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
  if (hash != nullptr) {
    const std::string key = CacheKey(user, password, *hash);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cache_.count(key) != 0) result = Result::kOk;
    }
    if (result != Result::kOk) {
      std::unique_lock<std::mutex> slot(bcrypt_slot_, std::try_to_lock);
      if (!slot.owns_lock()) {
        result = Result::kBusy;
      } else {
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++verifications_;
        }
        if (VerifyOnWorker(password, *hash)) {
          std::lock_guard<std::mutex> lock(mu_);
          if (cache_.size() >= kMaxCached) cache_.clear();
          cache_.insert(key);
          result = Result::kOk;
        }
      }
    }
  } else {
    std::unique_lock<std::mutex> slot(bcrypt_slot_, std::try_to_lock);
    if (!slot.owns_lock()) {
      result = Result::kBusy;
    } else {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++verifications_;
      }
      VerifyOnWorker(password, kDummyHash);
    }
  }
  explicit_bzero(decoded->data(), decoded->size());  // glibc >= 2.25: never optimised away
  return result;
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
    switch (auth->Check(req.Header("Authorization"))) {
      case BasicAuth::Result::kOk:
        return next(req);
      case BasicAuth::Result::kBusy: {
        Response r{429, "text/plain; charset=utf-8", "too many authentication attempts, retry later\n", {}};
        r.headers.emplace_back("Retry-After", "1");
        return r;
      }
      case BasicAuth::Result::kDenied:
        break;
    }
    Response r{401, "text/plain; charset=utf-8", "Unauthorized\n", {}};
    r.headers.emplace_back("WWW-Authenticate", "Basic");
    return r;
  };
}

}  // namespace diskprobe::http
