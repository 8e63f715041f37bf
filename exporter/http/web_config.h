#pragma once
// --web.config.file: TLS and basic auth in the Prometheus exporter-toolkit web configuration format
// (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md), so the same
// file passes `promtool check web-config` and works for node_exporter. Problems are reported like
// the main configuration: "file:line:col: key.path: message", all at once.
//
//   tls_server_config:
//     cert_file: server.crt          # relative paths are relative to the web config file
//     key_file: server.key
//     min_version: TLS12             # TLS10, TLS11, TLS12 (default), TLS13
//     max_version: TLS13             # default: the highest OpenSSL offers
//     client_auth_type: NoClientCert # or RequestClientCert, RequireAnyClientCert,
//                                    #    VerifyClientCertIfGiven, RequireAndVerifyClientCert
//     client_ca_file: ca.crt         # required by the two Verify* types, refused with NoClientCert
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt hash (htpasswd -nBC 10 prometheus)
//
// Keys the toolkit knows but this exporter cannot honour (cipher_suites, curve_preferences,
// prefer_server_cipher_suites, client_allowed_sans, inline cert/key/client_ca, http_server_config
// headers) are rejected by name rather than silently ignored; any other key is "unknown".
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/yaml_reader.h"

namespace diskprobe::http {

// exporter-toolkit's client_auth_type values (Go's tls.ClientAuthType names).
enum class ClientAuth {
  kNoClientCert,
  kRequestClientCert,           // ask for a certificate, accept any or none, no verification
  kRequireAnyClientCert,        // require one, no verification
  kVerifyClientCertIfGiven,     // verify against client_ca_file when one is sent
  kRequireAndVerifyClientCert,  // require one and verify it against client_ca_file
};

// TLS protocol versions as OpenSSL numbers (TLS1_VERSION ... TLS1_3_VERSION).
inline constexpr int kTls10 = 0x0301, kTls11 = 0x0302, kTls12 = 0x0303, kTls13 = 0x0304;

struct TlsServerConfig {
  std::string cert_file;       // PEM certificate (chain); resolved against the config file's directory
  std::string key_file;        // PEM private key; resolved likewise
  std::string client_ca_file;  // PEM CA bundle for client certificates; empty when not set
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  int min_version = kTls12;  // the toolkit's default
  int max_version = 0;       // 0: no upper bound
  // "file:line:col: tls_server_config.<key>" of each file's key, so that an error found when
  // OpenSSL loads the file (a key that does not match the certificate) names its place too.
  std::string cert_file_at, key_file_at, client_ca_file_at;
};

struct WebConfig {
  std::string source;                  // file the configuration came from
  std::optional<TlsServerConfig> tls;  // nullopt: plain HTTP
  // User name -> bcrypt hash, in document order. Empty: no authentication.
  std::vector<std::pair<std::string, std::string>> users;
};

struct WebConfigResult {
  std::shared_ptr<const WebConfig> config;  // null when errors is not empty
  std::vector<config::Error> errors;        // every problem, in document order
};

// Parses `yaml` named `source_name` in errors; relative file paths are resolved against
// `base_dir` ("" keeps them as they are). Checks that every referenced file is readable (the
// files themselves are loaded by MakeSslContext). An empty document means no TLS and no auth.
// The text is held to the bounds of config::LoadDocument (one document, size, depth, nodes,
// aliases). Never throws.
WebConfigResult ParseWebConfig(std::string_view yaml, const std::string& source_name, const std::string& base_dir);

// Reads and parses `path` (base_dir = its directory) as util::ReadRegularFile reads a
// configuration: one error "path:0:0: <reason>" for an unreadable file ("cannot read:
// <strerror>"), one that is not a regular file ("not a regular file (fifo)") or one larger than
// config::kMaxDocumentBytes.
WebConfigResult LoadWebConfigFile(const std::string& path);

// True when `hash` has the shape of a bcrypt hash: $2a$, $2b$ or $2y$, a cost 04..31, '$' and 53
// characters of bcrypt's base64 alphabet (60 characters in all).
bool IsBcryptHash(std::string_view hash);

}  // namespace diskprobe::http
