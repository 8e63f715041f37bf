// http/auth: bcrypt verification through libxcrypt, base64, and the verified-credentials cache
// (wrong passwords never enter it, cannot be told apart by it, and never skip bcrypt).
#include "http/auth.h"

#include <crypt.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <chrono>
#include <thread>

namespace diskprobe::http {
namespace {

// htpasswd -nbBC 4 alice wonderland; htpasswd -nbBC 4 bob 'p:ss word'
constexpr const char* kAlice = "$2y$04$uFCOsQ3PVLvZSANeNiSjauNIPUvqnahDRo4YTCO8ES6pjD8VdB0dW";
constexpr const char* kBob = "$2y$04$iacCKd7WTnEH3IUiGdAf0ey84LCPbvdl51nb4BywGTUa02ErQ4FGi";

std::string Basic(const std::string& user_colon_password) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  const std::string& s = user_colon_password;
  for (std::size_t i = 0; i < s.size(); i += 3) {
    std::uint32_t n = static_cast<unsigned char>(s[i]) << 16;
    if (i + 1 < s.size()) n |= static_cast<unsigned char>(s[i + 1]) << 8;
    if (i + 2 < s.size()) n |= static_cast<unsigned char>(s[i + 2]);
    out += k[(n >> 18) & 63];
    out += k[(n >> 12) & 63];
    out += i + 1 < s.size() ? k[(n >> 6) & 63] : '=';
    out += i + 2 < s.size() ? k[n & 63] : '=';
  }
  return "Basic " + out;
}

TEST(Bcrypt, VerifiesHtpasswdHashes) {
  EXPECT_TRUE(BcryptVerify("wonderland", kAlice));
  EXPECT_FALSE(BcryptVerify("Wonderland", kAlice));
  EXPECT_FALSE(BcryptVerify("", kAlice));
  EXPECT_TRUE(BcryptVerify("p:ss word", kBob));
  EXPECT_FALSE(BcryptVerify(std::string("wonderland\0x", 12), kAlice)) << "NUL cannot be passed to crypt";
  EXPECT_FALSE(BcryptVerify("wonderland", "$2y$04$short")) << "malformed hash";
  EXPECT_FALSE(BcryptVerify("wonderland", "")) << "empty hash";
}

TEST(Base64, Decodes) {
  EXPECT_EQ(DecodeBase64("YWxpY2U6d29uZGVybGFuZA=="), "alice:wonderland");
  EXPECT_EQ(DecodeBase64("YWI6Yw=="), "ab:c");
  EXPECT_EQ(DecodeBase64("YWJjOmQ="), "abc:d");
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_FALSE(DecodeBase64("YWI6Yw"));    // no padding
  EXPECT_FALSE(DecodeBase64("YW=6Yw=="));  // padding inside
  EXPECT_FALSE(DecodeBase64("YWI6Y*=="));  // not base64
  EXPECT_FALSE(DecodeBase64("Y==="));
}

using Users = std::vector<std::pair<std::string, std::string>>;

// Counts verifier calls; correct passwords as in the hashes above.
struct Counting {
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  BasicAuth::Verifier verifier() {
    auto c = calls;
    return [c](std::string_view pw, const std::string& hash) {
      ++*c;
      return BcryptVerify(pw, hash);
    };
  }
};

TEST(BasicAuth, RejectsMalformedHeaders) {
  BasicAuth auth(Users{{"alice", kAlice}});
  EXPECT_EQ(auth.Check(std::nullopt), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check(""), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check("Bearer abc"), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check("Basic !!!!"), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check("Basic " + std::string("YWxpY2U=")), BasicAuth::Result::kDenied) << "no colon";
  EXPECT_EQ(auth.verifications(), 0u) << "malformed headers never reach bcrypt";
}

TEST(BasicAuth, CachesOnlyVerifiedCredentials) {
  Counting c;
  BasicAuth auth(Users{{"alice", kAlice}, {"bob", kBob}}, c.verifier());
  EXPECT_EQ(auth.Check(Basic("alice:wonderland")), BasicAuth::Result::kOk);
  EXPECT_EQ(*c.calls, 1);
  EXPECT_EQ(auth.cached(), 1u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(auth.Check(Basic("alice:wonderland")), BasicAuth::Result::kOk);
  EXPECT_EQ(*c.calls, 1) << "a cached credential needs no bcrypt";
  EXPECT_EQ(auth.Check("basic  " + Basic("alice:wonderland").substr(6) + " "), BasicAuth::Result::kOk)
      << "scheme is case-insensitive, spaces around the token ignored";

  // Wrong passwords: bcrypt every time (never a cached answer), never inserted.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(auth.Check(Basic("alice:wonderlanD")), BasicAuth::Result::kDenied);
  EXPECT_EQ(*c.calls, 4);
  EXPECT_EQ(auth.cached(), 1u);
  // Another user's valid password does not open alice, and the user/password split is unambiguous.
  EXPECT_EQ(auth.Check(Basic("alice:p:ss word")), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check(Basic("bob:p:ss word")), BasicAuth::Result::kOk);
  EXPECT_EQ(auth.cached(), 2u);
  EXPECT_EQ(auth.Check(Basic("bob:p:ss word")), BasicAuth::Result::kOk);
  EXPECT_EQ(*c.calls, 6);
}

TEST(BasicAuth, UnknownUserCostsABcryptLikeAKnownOne) {
  Counting c;
  BasicAuth auth(Users{{"alice", kAlice}}, c.verifier());
  EXPECT_EQ(auth.Check(Basic("mallory:wonderland")), BasicAuth::Result::kDenied);
  EXPECT_EQ(*c.calls, 1) << "compared against a dummy hash so that timing does not reveal user names";
  EXPECT_EQ(auth.cached(), 0u);
}

TEST(BasicAuth, BusyWhileAnotherBcryptRuns) {
  // The verifier blocks until released: a second uncached check must not queue behind it, and a
  // cached one must not wait for it.
  std::mutex m;
  std::condition_variable cv;
  bool entered = false, release = false;
  BasicAuth auth(Users{{"alice", kAlice}, {"bob", kBob}}, [&](std::string_view pw, const std::string& hash) {
    if (pw == "slow") {
      std::unique_lock<std::mutex> l(m);
      entered = true;
      cv.notify_all();
      cv.wait(l, [&] { return release; });
      return false;
    }
    return BcryptVerify(pw, hash);
  });
  ASSERT_EQ(auth.Check(Basic("bob:p:ss word")), BasicAuth::Result::kOk);  // cache bob
  std::thread slow([&] { EXPECT_EQ(auth.Check(Basic("alice:slow")), BasicAuth::Result::kDenied); });
  {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return entered; });
  }
  EXPECT_EQ(auth.Check(Basic("alice:wonderland")), BasicAuth::Result::kBusy);
  EXPECT_EQ(auth.Check(Basic("mallory:x")), BasicAuth::Result::kBusy);
  EXPECT_EQ(auth.Check(Basic("bob:p:ss word")), BasicAuth::Result::kOk) << "cached credentials never wait";
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  slow.join();
  EXPECT_EQ(auth.Check(Basic("alice:wonderland")), BasicAuth::Result::kOk);
}

// The wrong-password flood (source 10.0.0.1) keeps the bcrypt thread busy; a correct password
// from another client waits for its turn and is verified, instead of getting 429.
TEST(BasicAuth, ACorrectPasswordIsVerifiedDuringAFlood) {
  std::mutex m;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  BasicAuth auth(Users{{"alice", kAlice}}, [&](std::string_view pw, const std::string& hash) {
    if (pw == "slow") {
      std::unique_lock<std::mutex> l(m);
      ++entered;
      cv.notify_all();
      cv.wait(l, [&] { return release; });
      return false;
    }
    return BcryptVerify(pw, hash);
  });
  std::thread flood([&] { EXPECT_EQ(auth.Check(Basic("alice:slow"), "10.0.0.1"), BasicAuth::Result::kDenied); });
  {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return entered == 1; });
  }
  EXPECT_EQ(auth.Check(Basic("alice:guess"), "10.0.0.1"), BasicAuth::Result::kBusy)
      << "the flooding client already has a check running: 429 at once";
  BasicAuth::Result good = BasicAuth::Result::kBusy;
  std::thread prometheus([&] { good = auth.Check(Basic("alice:wonderland"), "10.0.0.2"); });
  while (auth.waiting() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(auth.Check(Basic("alice:guess2"), "10.0.0.1"), BasicAuth::Result::kBusy);
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  flood.join();
  prometheus.join();
  EXPECT_EQ(good, BasicAuth::Result::kOk) << "waited its turn behind the running check";
  EXPECT_EQ(auth.Check(Basic("alice:wonderland"), "10.0.0.2"), BasicAuth::Result::kOk);
}

// With the queue full of clients whose last check failed, a client without failures takes the
// place of the last of them (that one gets 429); a client with failures does not.
TEST(BasicAuth, CleanClientsTakeThePlaceOfFailingOnes) {
  std::mutex m;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  BasicAuth auth(Users{{"alice", kAlice}}, [&](std::string_view pw, const std::string& hash) {
    if (pw.substr(0, 4) == "slow") {
      std::unique_lock<std::mutex> l(m);
      ++entered;
      cv.notify_all();
      cv.wait(l, [&] { return release; });
      return false;
    }
    return BcryptVerify(pw, hash);
  });
  // Clients a, b and e fail once (no blocking yet: the verifier blocks only on "slow...").
  EXPECT_EQ(auth.Check(Basic("alice:x"), "a"), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check(Basic("alice:y"), "b"), BasicAuth::Result::kDenied);
  EXPECT_EQ(auth.Check(Basic("alice:w"), "e"), BasicAuth::Result::kDenied);
  std::thread running([&] { auth.Check(Basic("alice:slow"), "c"); });
  {
    std::unique_lock<std::mutex> l(m);
    cv.wait(l, [&] { return entered == 1; });
  }
  BasicAuth::Result ra = BasicAuth::Result::kOk, rb = BasicAuth::Result::kOk, rd = BasicAuth::Result::kBusy;
  std::thread wa([&] { ra = auth.Check(Basic("alice:slow-a"), "a"); });
  while (auth.waiting() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread wb([&] { rb = auth.Check(Basic("alice:slow-b"), "b"); });
  while (auth.waiting() != 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(auth.Check(Basic("alice:z"), "e"), BasicAuth::Result::kBusy) << "a failing client takes no place";
  std::thread wd([&] { rd = auth.Check(Basic("alice:wonderland"), "d"); });
  wb.join();  // b, the last suspect, lost its place
  EXPECT_EQ(rb, BasicAuth::Result::kBusy);
  EXPECT_EQ(auth.waiting(), 2u);
  {
    std::lock_guard<std::mutex> l(m);
    release = true;
  }
  cv.notify_all();
  running.join();
  wa.join();
  wd.join();
  EXPECT_EQ(rd, BasicAuth::Result::kOk);
  EXPECT_EQ(ra, BasicAuth::Result::kDenied) << "a kept its place and was checked (and failed)";
}

// Unknown users cost a bcrypt of a configured user's cost: the dummy hash has that cost, is a
// real bcrypt setting, the same name always gets the same cost, and over many names every
// configured cost appears.
TEST(BasicAuth, UnknownUsersCostWhatConfiguredUsersCost) {
  // A cost-12 hash's shape (the verifier below never computes it).
  const std::string cost12 = "$2y$12$" + std::string(53, 'a');
  std::vector<std::string> seen;
  BasicAuth auth(Users{{"alice", kAlice}, {"carol", cost12}}, [&](std::string_view, const std::string& hash) {
    seen.push_back(hash);
    return false;
  });
  int cost4 = 0, cost12n = 0;
  for (int i = 0; i < 64; ++i) {
    const std::string name = "nobody" + std::to_string(i);
    const std::string d = auth.DummyHashFor(name);
    ASSERT_EQ(d.size(), 60u);
    EXPECT_EQ(d, auth.DummyHashFor(name)) << "stable per name";
    if (d.substr(0, 7) == "$2b$04$") ++cost4;
    else if (d.substr(0, 7) == "$2b$12$") ++cost12n;
    else ADD_FAILURE() << d;
  }
  EXPECT_GT(cost4, 8);
  EXPECT_GT(cost12n, 8);
  EXPECT_EQ(auth.Check(Basic("nobody7:pw"), "x"), BasicAuth::Result::kDenied);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], auth.DummyHashFor("nobody7")) << "the unknown user was checked against its dummy";
  // A dummy is a real bcrypt setting: crypt computes with it (and nothing matches).
  BasicAuth real(Users{{"alice", kAlice}});
  const std::string d = real.DummyHashFor("mallory");
  EXPECT_EQ(d.substr(0, 7), "$2b$04$");
  EXPECT_FALSE(BcryptVerify("wonderland", d));
  crypt_data data{};
  const char* out = crypt_rn("wonderland", d.c_str(), &data, sizeof data);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(std::string(out).substr(0, 29), d.substr(0, 29)) << "bcrypt ran with the dummy's cost and salt";
  // SetUsers: the dummies follow the new costs.
  real.SetUsers(Users{{"carol", cost12}});
  EXPECT_EQ(real.DummyHashFor("mallory").substr(0, 7), "$2b$12$");
}

TEST(BasicAuth, CacheIsBounded) {
  BasicAuth auth(Users{{"alice", kAlice}}, [](std::string_view, const std::string&) { return true; });
  for (std::size_t i = 0; i < BasicAuth::kMaxCached + 3; ++i)
    EXPECT_EQ(auth.Check(Basic("alice:pw" + std::to_string(i))), BasicAuth::Result::kOk);
  EXPECT_LE(auth.cached(), BasicAuth::kMaxCached);
}

TEST(BasicAuth, SetUsersReplacesUsersAndKeepsWhatStillHolds) {
  int verified = 0;
  BasicAuth auth(Users{{"alice", "hash-a"}, {"carol", "hash-c"}}, [&](std::string_view pw, const std::string& hash) {
    ++verified;
    return (hash == "hash-a" && pw == "old") || (hash == "hash-b" && pw == "new") || (hash == "hash-c" && pw == "c");
  });
  EXPECT_EQ(auth.Check(Basic("alice:old")), BasicAuth::Result::kOk);
  EXPECT_EQ(auth.Check(Basic("carol:c")), BasicAuth::Result::kOk);
  EXPECT_EQ(verified, 2);
  auth.SetUsers(Users{{"alice", "hash-b"}, {"bob", "hash-b"}, {"carol", "hash-c"}});
  EXPECT_EQ(auth.Check(Basic("alice:old")), BasicAuth::Result::kDenied);  // the old password is gone
  EXPECT_EQ(verified, 3);  // ... after a bcrypt against the new hash, not from the cache
  EXPECT_EQ(auth.Check(Basic("carol:c")), BasicAuth::Result::kOk);  // unchanged user: still cached
  EXPECT_EQ(verified, 3);
  EXPECT_EQ(auth.Check(Basic("alice:new")), BasicAuth::Result::kOk);
  EXPECT_EQ(auth.Check(Basic("bob:new")), BasicAuth::Result::kOk);
  EXPECT_EQ(verified, 5);
  auth.SetUsers(Users{{"bob", "hash-b"}});
  EXPECT_EQ(auth.Check(Basic("alice:new")), BasicAuth::Result::kDenied);  // removed user
  EXPECT_EQ(auth.Check(Basic("carol:c")), BasicAuth::Result::kDenied);    // removed, though cached
}

// bcrypt yields the CPU to request threads: it runs on another thread, at nice 10.
TEST(BasicAuth, VerifiesOnAThreadAtNice10) {
  pid_t verifier_tid = 0;
  int verifier_nice = -100;
  BasicAuth auth(Users{{"alice", "h"}}, [&](std::string_view, const std::string&) {
    verifier_tid = static_cast<pid_t>(::gettid());
    errno = 0;
    verifier_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(verifier_tid));
    return true;
  });
  EXPECT_EQ(auth.Check(Basic("alice:pw")), BasicAuth::Result::kOk);
  EXPECT_NE(verifier_tid, static_cast<pid_t>(::gettid()));
  EXPECT_EQ(verifier_nice, 10);
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), 0);  // the caller's is untouched
}

TEST(RequireBasicAuth, AnswersBeforeAnyRoute) {
  int reached = 0;
  Handler h =
      RequireBasicAuth(std::make_shared<BasicAuth>(std::vector<std::pair<std::string, std::string>>{{"alice", kAlice}}),
                       [&](const Request&) {
                         ++reached;
                         return Response{200, "text/plain", "ok", {}};
                       });
  Request req;
  req.method = "GET";
  req.path = "/-/healthy";
  Response r = h(req);
  EXPECT_EQ(r.status, 401);
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "WWW-Authenticate");
  EXPECT_EQ(r.headers[0].second, "Basic");
  EXPECT_EQ(reached, 0);
  req.headers.emplace_back("authorization", Basic("alice:wonderland"));
  EXPECT_EQ(h(req).status, 200);
  EXPECT_EQ(reached, 1);
}

}  // namespace
}  // namespace diskprobe::http
