// http/web_config: the exporter-toolkit web configuration (--web.config.file), good input and each
// kind of bad input with the exact message an operator sees.
#include "http/web_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "in_child.h"

namespace diskprobe::http {
namespace {

// A directory with the files a web config may point at (contents do not matter to the parser).
class WebConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/diskprobe-webcfg.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    for (const char* f : {"server.crt", "server.key", "ca.crt"}) std::ofstream(dir_ + "/" + f) << "pem\n";
  }
  void TearDown() override {
    for (const char* f : {"server.crt", "server.key", "ca.crt", "web.yml"}) ::unlink((dir_ + "/" + f).c_str());
    ::rmdir(dir_.c_str());
  }
  WebConfigResult Parse(const std::string& yaml) { return ParseWebConfig(yaml, "web.yml", dir_); }
  std::vector<std::string> Errors(const std::string& yaml) {
    std::vector<std::string> out;
    WebConfigResult r = Parse(yaml);
    EXPECT_EQ(r.config == nullptr, !r.errors.empty());
    for (const auto& e : r.errors) out.push_back(e.ToString());
    return out;
  }
  std::string dir_;
};

constexpr const char* kAliceHash = "$2y$04$uFCOsQ3PVLvZSANeNiSjauNIPUvqnahDRo4YTCO8ES6pjD8VdB0dW";

TEST_F(WebConfigTest, EmptyMeansPlainHttpWithoutAuth) {
  for (const char* yaml : {"", "# nothing\n", "tls_server_config:\nbasic_auth_users:\n"}) {
    WebConfigResult r = Parse(yaml);
    ASSERT_TRUE(r.config) << yaml;
    EXPECT_FALSE(r.config->tls);
    EXPECT_TRUE(r.config->users.empty());
  }
}

// Found by tests/fuzz (web_config target): the same input as LoadString's
// AMarkPastTheEndOfTheTextIsAnErrorNotAnAbort, an uncaught std::out_of_range before the fix.
TEST_F(WebConfigTest, AMarkPastTheEndOfTheTextIsAnErrorNotAnAbort) {
  static const unsigned char kCrash[] = {0x27, 0x00, 0x00, 0x7d, 0x92, 0x0a, 0x2c, 0x0e, 0x68, 0x65, 0x61,
                                         0x40, 0x64, 0x65, 0x72, 0x73, 0x6b, 0x65, 0x79, 0x5f, 0x66, 0x49,
                                         0x27, 0x00, 0x00, 0x7d, 0x64};
  const auto r = ParseWebConfig(std::string_view(reinterpret_cast<const char*>(kCrash), sizeof kCrash), "web.yml", "");
  EXPECT_EQ(r.config, nullptr);
  EXPECT_FALSE(r.errors.empty());
}

TEST_F(WebConfigTest, EveryKeyWeSupport) {
  WebConfigResult r = Parse(std::string("tls_server_config:\n"
                                        "  cert_file: server.crt\n"
                                        "  key_file: ") +
                            dir_ +
                            "/server.key\n"
                            "  min_version: TLS13\n"
                            "  max_version: TLS13\n"
                            "  client_auth_type: RequireAndVerifyClientCert\n"
                            "  client_ca_file: ca.crt\n"
                            "http_server_config:\n"
                            "  http2: false\n"
                            "basic_auth_users:\n"
                            "  alice: " +
                            kAliceHash +
                            "\n"
                            "  bob: '$2b$12$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234'\n");
  ASSERT_TRUE(r.config) << (r.errors.empty() ? "" : r.errors[0].ToString());
  ASSERT_TRUE(r.config->tls);
  const TlsServerConfig& t = *r.config->tls;
  EXPECT_EQ(t.cert_file, dir_ + "/server.crt") << "relative to the web config's directory, as exporter-toolkit";
  EXPECT_EQ(t.key_file, dir_ + "/server.key");
  EXPECT_EQ(t.client_ca_file, dir_ + "/ca.crt");
  EXPECT_EQ(t.min_version, kTls13);
  EXPECT_EQ(t.max_version, kTls13);
  EXPECT_EQ(t.client_auth, ClientAuth::kRequireAndVerifyClientCert);
  ASSERT_EQ(r.config->users.size(), 2u);
  EXPECT_EQ(r.config->users[0].first, "alice");
  EXPECT_EQ(r.config->users[0].second, kAliceHash);
  EXPECT_EQ(r.config->users[1].first, "bob");
}

TEST_F(WebConfigTest, Defaults) {
  WebConfigResult r = Parse("tls_server_config: {cert_file: server.crt, key_file: server.key}\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->tls->min_version, kTls12) << "exporter-toolkit's default";
  EXPECT_EQ(r.config->tls->max_version, 0);
  EXPECT_EQ(r.config->tls->client_auth, ClientAuth::kNoClientCert);
  EXPECT_EQ(r.config->tls->client_ca_file, "");
}

TEST_F(WebConfigTest, UnknownKeys) {
  EXPECT_EQ(Errors("tls_config:\n  cert_file: x\n"),
            (std::vector<std::string>{"web.yml:1:1: tls_config: unknown key (known keys: tls_server_config, "
                                      "http_server_config, basic_auth_users)"}));
  EXPECT_EQ(Errors("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  certfile: x\n"),
            (std::vector<std::string>{
                "web.yml:4:3: tls_server_config.certfile: unknown key (known keys: cert_file, key_file, "
                "client_auth_type, client_ca_file, min_version, max_version, cipher_suites, curve_preferences, "
                "prefer_server_cipher_suites, client_allowed_sans, cert, key, client_ca)"}));
  EXPECT_EQ(
      Errors("http_server_config:\n  http3: true\n"),
      (std::vector<std::string>{"web.yml:2:3: http_server_config.http3: unknown key (known keys: http2, headers)"}));
  EXPECT_EQ(Errors("- tls_server_config\n"), (std::vector<std::string>{"web.yml:1:1: must be a mapping, got a list"}));
}

TEST_F(WebConfigTest, ToolkitKeysWeCannotHonourAreRefusedByName) {
  EXPECT_EQ(Errors("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                   "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n  client_allowed_sans: [a]\n"
                   "http_server_config:\n  headers: {X-Frame-Options: deny}\n"),
            (std::vector<std::string>{
                "web.yml:4:18: tls_server_config.cipher_suites: not supported by diskprobe_exporter: OpenSSL's "
                "defaults (Debian's system-wide policy) apply; remove the key",
                "web.yml:5:24: tls_server_config.client_allowed_sans: not supported by diskprobe_exporter: restrict "
                "clients with client_ca_file instead",
                "web.yml:7:12: http_server_config.headers: not supported by diskprobe_exporter: extra response "
                "headers are not configurable"}));
  EXPECT_EQ(Errors("tls_server_config:\n  cert: '-----BEGIN CERTIFICATE-----'\n  key_file: server.key\n"),
            (std::vector<std::string>{
                "web.yml:2:3: tls_server_config: cert_file is required",
                "web.yml:2:9: tls_server_config.cert: not supported by diskprobe_exporter: give the PEM in a file "
                "(cert_file, key_file, client_ca_file)"}));
}

TEST_F(WebConfigTest, CertificateAndKeyFiles) {
  EXPECT_EQ(Errors("tls_server_config:\n  min_version: TLS12\n"),
            (std::vector<std::string>{"web.yml:2:3: tls_server_config: cert_file is required",
                                      "web.yml:2:3: tls_server_config: key_file is required"}));
  EXPECT_EQ(Errors("tls_server_config:\n  cert_file: missing.crt\n  key_file: /nonexistent/server.key\n"),
            (std::vector<std::string>{
                "web.yml:2:14: tls_server_config.cert_file: cannot read \"" + dir_ +
                    "/missing.crt\": No such file or directory",
                "web.yml:3:13: tls_server_config.key_file: cannot read \"/nonexistent/server.key\": No such file "
                "or directory"}));
  EXPECT_EQ(Errors("tls_server_config:\n  cert_file: [a]\n  key_file: server.key\n"),
            (std::vector<std::string>{"web.yml:2:14: tls_server_config.cert_file: must be a file name"}));
}

TEST_F(WebConfigTest, Versions) {
  EXPECT_EQ(Errors("tls_server_config: {cert_file: server.crt, key_file: server.key, min_version: TLS1.2}\n"),
            (std::vector<std::string>{"web.yml:1:79: tls_server_config.min_version: must be one of TLS10, TLS11, "
                                      "TLS12, TLS13, got \"TLS1.2\""}));
  EXPECT_EQ(
      Errors("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS13\n"
             "  max_version: TLS12\n"),
      (std::vector<std::string>{"web.yml:5:16: tls_server_config.max_version: TLS12 is below min_version TLS13"}));
}

TEST_F(WebConfigTest, ClientAuthentication) {
  const std::string base = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  EXPECT_EQ(Errors(base + "  client_auth_type: RequireClientCert\n"),
            (std::vector<std::string>{
                "web.yml:4:21: tls_server_config.client_auth_type: must be one of NoClientCert, RequestClientCert, "
                "RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert, got "
                "\"RequireClientCert\""}));
  EXPECT_EQ(Errors(base + "  client_ca_file: ca.crt\n"),
            (std::vector<std::string>{
                "web.yml:4:19: tls_server_config.client_ca_file: set but client_auth_type is NoClientCert, which "
                "verifies nothing; use VerifyClientCertIfGiven or RequireAndVerifyClientCert"}));
  EXPECT_EQ(Errors(base + "  client_auth_type: VerifyClientCertIfGiven\n"),
            (std::vector<std::string>{
                "web.yml:4:21: tls_server_config.client_auth_type: VerifyClientCertIfGiven needs client_ca_file (the "
                "CAs client certificates must chain to)"}));
  WebConfigResult r = Parse(base + "  client_auth_type: RequireAnyClientCert\n");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->tls->client_auth, ClientAuth::kRequireAnyClientCert);
}

TEST_F(WebConfigTest, Users) {
  EXPECT_EQ(
      Errors("basic_auth_users: [alice]\n"),
      (std::vector<std::string>{"web.yml:1:19: basic_auth_users: must be a mapping of user names to bcrypt hashes"}));
  EXPECT_EQ(Errors("basic_auth_users:\n  alice: wonderland\n"),
            (std::vector<std::string>{
                "web.yml:2:10: basic_auth_users.alice: must be a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 "
                "characters), e.g. from htpasswd -nBC 10 alice"}));
  EXPECT_EQ(Errors(std::string("basic_auth_users:\n  alice: ") + kAliceHash + "\n  alice: " + kAliceHash +
                   "\n  'a:b': " + kAliceHash + "\n"),
            (std::vector<std::string>{
                "web.yml:3:3: basic_auth_users.alice: duplicate user",
                "web.yml:4:3: basic_auth_users.a:b: a user name must be non-empty and contain no ':' (HTTP basic "
                "auth cannot carry it)"}));
}

TEST_F(WebConfigTest, SyntaxErrorAndMissingFile) {
  EXPECT_EQ(Errors("tls_server_config: [\n"),
            (std::vector<std::string>{"web.yml:2:1: YAML syntax error: end of sequence flow not found"}));
  WebConfigResult r = LoadWebConfigFile(dir_ + "/nope.yml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(), dir_ + "/nope.yml:0:0: cannot read: No such file or directory");
}

TEST_F(WebConfigTest, FileResolvesAgainstItsDirectory) {
  std::ofstream(dir_ + "/web.yml") << "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";
  WebConfigResult r = LoadWebConfigFile(dir_ + "/web.yml");
  ASSERT_TRUE(r.config);
  EXPECT_EQ(r.config->tls->cert_file, dir_ + "/server.crt");
  EXPECT_EQ(r.config->source, dir_ + "/web.yml");
}

// The outcome of `load` ("loaded" or one line per error), computed in a child with bounded memory
// and time (tests/unit/in_child.h): the hostile inputs of the main configuration, through the
// web configuration's own entry points.
std::string Bounded(const std::function<WebConfigResult()>& load) {
  return diskprobe::testing::InBoundedChild([&] {
    WebConfigResult r = load();
    std::string out = r.config ? "loaded\n" : "";
    for (const auto& e : r.errors) out += e.ToString() + "\n";
    return out;
  });
}

TEST_F(WebConfigTest, HostileTextIsOneErrorInBoundedTime) {
  auto parse = [&](const std::string& yaml) { return Bounded([&] { return Parse(yaml); }); };
  EXPECT_EQ(parse(",\n"), "web.yml:1:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(parse("---\n,\n"), "web.yml:2:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(parse("# c\n,\n"), "web.yml:2:1: YAML syntax error: unexpected ','\n");
  EXPECT_EQ(parse("basic_auth_users: {}\n---\ntls_server_config: {}\n"),
            "web.yml:2:1: more than one YAML document; a configuration is a single document\n");
  EXPECT_EQ(parse(std::string(60000, '[')), "web.yml:1:33: lists and mappings nested more than 32 deep\n");
  EXPECT_EQ(parse(std::string(100000, '{')),
            "web.yml:0:0: document is larger than 65536 bytes; a configuration is a few KiB\n");
  std::string users = "basic_auth_users:\n";
  for (int i = 0; i < 6000; ++i) users += "  u" + std::to_string(i) + ": x\n";  // 12,001 nodes, < 64 KiB
  const std::string many = parse(users);
  EXPECT_EQ(many.rfind("web.yml:5000:", 0), 0u) << many;  // u4998's value, the 10001st node
  EXPECT_NE(many.find(": more than 10000 YAML nodes"), std::string::npos) << many;
}

TEST_F(WebConfigTest, OnlyRegularFiles) {
  const std::string fifo = dir_ + "/web.yml";  // removed by TearDown
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(Bounded([&] { return LoadWebConfigFile(fifo); }), fifo + ":0:0: not a regular file (fifo)\n");
  EXPECT_EQ(Bounded([&] { return LoadWebConfigFile(dir_); }), dir_ + ":0:0: not a regular file (directory)\n");
  EXPECT_EQ(Bounded([] { return LoadWebConfigFile("/dev/zero"); }),
            "/dev/zero:0:0: not a regular file (character device)\n");
  EXPECT_EQ(Bounded([] { return LoadWebConfigFile("/proc/self/status"); }),
            "/proc/self/status:0:0: not a regular file (a procfs file; not read)\n");
  // The files it names too: OpenSSL would block reading a FIFO certificate.
  EXPECT_EQ(Bounded([&] { return Parse("tls_server_config:\n  cert_file: web.yml\n  key_file: server.key\n"); }),
            "web.yml:2:14: tls_server_config.cert_file: cannot read \"" + fifo + "\": not a regular file\n");
  EXPECT_EQ(Bounded([&] {
              return Parse("tls_server_config:\n  cert_file: /proc/self/status\n  key_file: /proc/self/status\n");
            }),
            "web.yml:2:14: tls_server_config.cert_file: cannot read \"/proc/self/status\": not a regular file (a procfs "
            "file; not read)\n"
            "web.yml:3:13: tls_server_config.key_file: cannot read \"/proc/self/status\": not a regular file (a procfs "
            "file; not read)\n");
}

TEST(IsBcryptHash, Shapes) {
  EXPECT_TRUE(IsBcryptHash(kAliceHash));
  EXPECT_TRUE(IsBcryptHash("$2a$31$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234"));
  EXPECT_FALSE(IsBcryptHash("$2x$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234"));
  EXPECT_FALSE(IsBcryptHash("$2y$03$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234")) << "cost below 4";
  EXPECT_FALSE(IsBcryptHash("$2y$32$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234")) << "cost above 31";
  EXPECT_FALSE(IsBcryptHash("$2y$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ0123")) << "59 characters";
  EXPECT_FALSE(IsBcryptHash("$2y$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ0123+")) << "not bcrypt base64";
  EXPECT_FALSE(IsBcryptHash("$6$rounds=5000$salt$hash"));
}

}  // namespace
}  // namespace diskprobe::http
