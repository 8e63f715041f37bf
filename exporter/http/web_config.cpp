#include "http/web_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "util/file.h"

namespace diskprobe::http {
namespace {

using config::Error;
using config::YamlReader;

struct Named {
  std::string_view name;
  int value;
};

constexpr Named kVersions[] = {{"TLS10", kTls10}, {"TLS11", kTls11}, {"TLS12", kTls12}, {"TLS13", kTls13}};
constexpr Named kClientAuths[] = {
    {"NoClientCert", static_cast<int>(ClientAuth::kNoClientCert)},
    {"RequestClientCert", static_cast<int>(ClientAuth::kRequestClientCert)},
    {"RequireAnyClientCert", static_cast<int>(ClientAuth::kRequireAnyClientCert)},
    {"VerifyClientCertIfGiven", static_cast<int>(ClientAuth::kVerifyClientCertIfGiven)},
    {"RequireAndVerifyClientCert", static_cast<int>(ClientAuth::kRequireAndVerifyClientCert)}};

template <std::size_t N>
std::string NameList(const Named (&names)[N]) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + std::string(n.name);
  return s;
}

template <std::size_t N>
std::string_view NameOf(const Named (&names)[N], int value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

// Reads an enumerated scalar at map[key] into *out.
template <std::size_t N>
void ReadEnum(YamlReader& r, const YAML::Node& map, const std::string& path, const char* key, const Named (&names)[N],
              int* out) {
  YAML::Node v = map[key];
  if (!v.IsDefined()) return;
  const std::string p = YamlReader::Join(path, key);
  if (!v.IsScalar()) {
    r.Fail(v, p, "must be one of " + NameList(names));
    return;
  }
  for (const auto& n : names) {
    if (v.Scalar() == n.name) {
      *out = n.value;
      return;
    }
  }
  r.Fail(v, p, "must be one of " + NameList(names) + ", got \"" + v.Scalar() + "\"");
}

std::string Resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file[0] == '/' || base_dir.empty()) return file;
  return base_dir + "/" + file;
}

// Reads a file path at map[key], resolves it and checks that it can be read. Returns "" when
// absent or invalid.
std::string ReadFilePath(YamlReader& r, const YAML::Node& map, const std::string& path, const char* key,
                         const std::string& base_dir) {
  YAML::Node v = map[key];
  if (!v.IsDefined() || v.IsNull()) return "";
  const std::string p = YamlReader::Join(path, key);
  if (!v.IsScalar()) {
    r.Fail(v, p, "must be a file name");
    return "";
  }
  if (v.Scalar().empty()) return "";
  std::string file = Resolve(base_dir, v.Scalar());
  if (::access(file.c_str(), R_OK) != 0) {
    r.Fail(v, p, "cannot read \"" + file + "\": " + std::strerror(errno));
    return "";
  }
  // OpenSSL reads these with fopen(3): a FIFO would block start-up or SIGHUP until a writer came.
  struct stat st {};
  if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    r.Fail(v, p, "cannot read \"" + file + "\": not a regular file");
    return "";
  }
  // Regular to stat(2), but reading it is an operation (/proc/kmsg hands out syslog records once).
  if (const std::string pseudo = util::PseudoFilesystemOf(file); !pseudo.empty()) {
    r.Fail(v, p, "cannot read \"" + file + "\": not a regular file (a " + pseudo + " file; not read)");
    return "";
  }
  return file;
}

void RejectUnsupported(YamlReader& r, const YAML::Node& map, const std::string& path,
                       std::initializer_list<const char*> keys, const char* why) {
  for (const char* k : keys) {
    YAML::Node v = map[k];
    if (v.IsDefined()) r.Fail(v, YamlReader::Join(path, k), std::string("not supported by diskprobe_exporter: ") + why);
  }
}

void ApplyTls(const YAML::Node& t, YamlReader& r, const std::string& base_dir, WebConfig* wc) {
  const std::string path = "tls_server_config";
  if (!r.CheckMap(
          t, path,
          {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version", "cipher_suites",
           "curve_preferences", "prefer_server_cipher_suites", "client_allowed_sans", "cert", "key", "client_ca"}))
    return;
  if (!t.IsDefined() || t.IsNull()) return;  // "tls_server_config:" with nothing: plain HTTP, as the toolkit
  RejectUnsupported(r, t, path, {"cert", "key", "client_ca"},
                    "give the PEM in a file (cert_file, key_file, client_ca_file)");
  RejectUnsupported(r, t, path, {"cipher_suites", "curve_preferences", "prefer_server_cipher_suites"},
                    "OpenSSL's defaults (Debian's system-wide policy) apply; remove the key");
  RejectUnsupported(r, t, path, {"client_allowed_sans"}, "restrict clients with client_ca_file instead");

  TlsServerConfig tls;
  const bool has_cert = t["cert_file"].IsDefined(), has_key = t["key_file"].IsDefined();
  tls.cert_file = ReadFilePath(r, t, path, "cert_file", base_dir);
  tls.key_file = ReadFilePath(r, t, path, "key_file", base_dir);
  tls.client_ca_file = ReadFilePath(r, t, path, "client_ca_file", base_dir);
  if (has_cert) tls.cert_file_at = r.Where(t["cert_file"], path + ".cert_file");
  if (has_key) tls.key_file_at = r.Where(t["key_file"], path + ".key_file");
  if (t["client_ca_file"].IsDefined()) tls.client_ca_file_at = r.Where(t["client_ca_file"], path + ".client_ca_file");
  if (!has_cert) r.Fail(t, path, "cert_file is required");
  if (!has_key) r.Fail(t, path, "key_file is required");

  int auth = static_cast<int>(ClientAuth::kNoClientCert);
  ReadEnum(r, t, path, "client_auth_type", kClientAuths, &auth);
  tls.client_auth = static_cast<ClientAuth>(auth);
  const bool verifies = tls.client_auth == ClientAuth::kVerifyClientCertIfGiven ||
                        tls.client_auth == ClientAuth::kRequireAndVerifyClientCert;
  if (t["client_ca_file"].IsDefined() && !t["client_ca_file"].IsNull() && !verifies) {
    r.Fail(t["client_ca_file"], YamlReader::Join(path, "client_ca_file"),
           "set but client_auth_type is " + std::string(NameOf(kClientAuths, auth)) +
               ", which verifies nothing; use VerifyClientCertIfGiven or RequireAndVerifyClientCert");
  }
  if (verifies && !t["client_ca_file"].IsDefined()) {
    r.Fail(
        t["client_auth_type"], YamlReader::Join(path, "client_auth_type"),
        std::string(NameOf(kClientAuths, auth)) + " needs client_ca_file (the CAs client certificates must chain to)");
  }

  ReadEnum(r, t, path, "min_version", kVersions, &tls.min_version);
  ReadEnum(r, t, path, "max_version", kVersions, &tls.max_version);
  if (tls.max_version != 0 && tls.max_version < tls.min_version) {
    r.Fail(t["max_version"], YamlReader::Join(path, "max_version"),
           std::string(NameOf(kVersions, tls.max_version)) + " is below min_version " +
               std::string(NameOf(kVersions, tls.min_version)));
  }
  wc->tls = std::move(tls);
}

void ApplyHttp(const YAML::Node& h, YamlReader& r) {
  const std::string path = "http_server_config";
  if (!r.CheckMap(h, path, {"http2", "headers"})) return;
  if (!h.IsDefined() || h.IsNull()) return;
  bool http2 = false;
  r.ReadBool(h, path, "http2", &http2);  // accepted for compatibility: civetweb serves HTTP/1.1 only
  RejectUnsupported(r, h, path, {"headers"}, "extra response headers are not configurable");
}

void ApplyUsers(const YAML::Node& u, YamlReader& r, WebConfig* wc) {
  const std::string path = "basic_auth_users";
  if (!u.IsDefined() || u.IsNull()) return;
  if (!u.IsMap()) {
    r.Fail(u, path, "must be a mapping of user names to bcrypt hashes");
    return;
  }
  std::set<std::string> seen;
  for (auto it = u.begin(); it != u.end(); ++it) {
    // By value: *it is a temporary pair; references to its members dangle (ASan:
    // stack-use-after-scope).
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    if (!k.IsScalar()) {
      r.Fail(k, path, "user names must be plain strings");
      continue;
    }
    const std::string user = k.Scalar();
    const std::string p = YamlReader::Join(path, user);
    if (!seen.insert(user).second) {
      r.Fail(k, p, "duplicate user");
      continue;
    }
    if (user.empty() || user.find(':') != std::string::npos) {
      r.Fail(k, p, "a user name must be non-empty and contain no ':' (HTTP basic auth cannot carry it)");
      continue;
    }
    if (!v.IsScalar() || !IsBcryptHash(v.Scalar())) {
      r.Fail(v, p,
             "must be a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 characters), e.g. from "
             "htpasswd -nBC 10 " +
                 user);
      continue;
    }
    wc->users.emplace_back(user, v.Scalar());
  }
}

}  // namespace

bool IsBcryptHash(std::string_view h) {
  if (h.size() != 60 || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$') return false;
  if (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') return false;
  if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9') return false;
  int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (char c : h.substr(7)) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

WebConfigResult ParseWebConfig(std::string_view yaml, const std::string& source_name, const std::string& base_dir) {
  WebConfigResult out;
  auto wc = std::make_shared<WebConfig>();
  wc->source = source_name;
  YAML::Node root;
  if (!config::LoadDocument(yaml, source_name, &root, &out.errors)) return out;
  YamlReader r(source_name, &out.errors);
  try {
    if (r.CheckMap(root, "", {"tls_server_config", "http_server_config", "basic_auth_users"}) && root.IsMap()) {
      ApplyTls(root["tls_server_config"], r, base_dir, wc.get());
      ApplyHttp(root["http_server_config"], r);
      ApplyUsers(root["basic_auth_users"], r, wc.get());
    }
  } catch (const YAML::Exception& e) {
    r.Fail(root, "", std::string("unexpected YAML structure: ") + e.what());
  }
  std::stable_sort(out.errors.begin(), out.errors.end(), [](const Error& a, const Error& b) {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  });
  if (out.errors.empty()) out.config = std::move(wc);
  return out;
}

WebConfigResult LoadWebConfigFile(const std::string& path) {
  util::RegularFileContent f = util::ReadRegularFile(path, config::kMaxDocumentBytes);
  if (!f.ok()) {
    WebConfigResult out;
    out.errors.push_back(Error{path, 0, 0, "", f.error});
    return out;
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  return ParseWebConfig(f.text, path, dir);
}

}  // namespace diskprobe::http
