#include "http/tls.h"

#include <dlfcn.h>
#include <link.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <mutex>

namespace diskprobe::http {
namespace {

std::string OpenSslError() {
  std::string s;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    s += (s.empty() ? "" : "; ") + std::string(buf);
  }
  return s.empty() ? "unknown OpenSSL error" : s;
}

std::string ExeDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

// Accepts any client certificate (RequestClientCert, RequireAnyClientCert: no verification).
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

std::mutex g_compat_mu;
bool g_compat_loaded = false;

}  // namespace

bool LoadOpenSslCompat(std::string* error) {
  std::lock_guard<std::mutex> lock(g_compat_mu);
  if (g_compat_loaded) return true;
  const std::string exe = ExeDir();
  const std::string dirs[] = {exe + "/../lib/diskprobe_exporter", exe + "/lib/diskprobe_exporter"};
  std::string tried;
  for (const auto& d : dirs) {
    const std::string crypto = d + "/libcrypto.so", ssl = d + "/libssl.so";
    if (::access(crypto.c_str(), R_OK) != 0 || ::access(ssl.c_str(), R_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + d;
      continue;
    }
    // Never closed: civetweb holds pointers into them for the life of the process.
    if (dlopen(crypto.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr ||
        dlopen(ssl.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
      const char* e = dlerror();
      *error = std::string("cannot load the OpenSSL compat libraries: ") + (e ? e : "dlopen failed");
      return false;
    }
    // What civetweb will do: the unversioned name must give the compat object, and the symbol
    // OpenSSL 3 lacks must resolve through it.
    void* h = dlopen("libssl.so", RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr || dlsym(h, "SSL_get_peer_certificate") == nullptr || dlsym(h, "SSL_accept") == nullptr) {
      *error = "OpenSSL compat library loaded from " + d + " but dlopen(\"libssl.so\") does not resolve to it";
      return false;
    }
    void* c = dlopen("libcrypto.so", RTLD_NOW | RTLD_NOLOAD);
    if (c == nullptr || dlsym(c, "ERR_get_error") == nullptr) {
      *error = "OpenSSL compat library loaded from " + d + " but dlopen(\"libcrypto.so\") does not resolve to it";
      return false;
    }
    g_compat_loaded = true;
    return true;
  }
  *error = "OpenSSL compat libraries (libssl.so, libcrypto.so) not found in " + tried +
           "; TLS needs them (see docs/architecture.md)";
  return false;
}

void* MakeSslContext(const TlsServerConfig& tls, std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + OpenSslError();
    return nullptr;
  }
  auto fail = [&](const std::string& what) {
    *error = what + ": " + OpenSslError();
    SSL_CTX_free(ctx);
    return nullptr;
  };
  if (SSL_CTX_set_min_proto_version(ctx, tls.min_version) != 1) return fail("cannot set min_version");
  if (tls.max_version != 0 && SSL_CTX_set_max_proto_version(ctx, tls.max_version) != 1)
    return fail("cannot set max_version");
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1)
    return fail("cert_file \"" + tls.cert_file + "\"");
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    return fail("key_file \"" + tls.key_file + "\"");
  if (SSL_CTX_check_private_key(ctx) != 1)
    return fail("key_file \"" + tls.key_file + "\" does not match cert_file \"" + tls.cert_file + "\"");
  // Sessions resumed across a client-certificate check need a context id (OpenSSL refuses them otherwise).
  static const unsigned char kSessionContext[] = "diskprobe_exporter";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);

  switch (tls.client_auth) {
    case ClientAuth::kNoClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, &AcceptAny);
      break;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, &AcceptAny);
      break;
    case ClientAuth::kVerifyClientCertIfGiven:
    case ClientAuth::kRequireAndVerifyClientCert: {
      if (SSL_CTX_load_verify_locations(ctx, tls.client_ca_file.c_str(), nullptr) != 1)
        return fail("client_ca_file \"" + tls.client_ca_file + "\"");
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
      if (names == nullptr) return fail("client_ca_file \"" + tls.client_ca_file + "\"");
      SSL_CTX_set_client_CA_list(ctx, names);
      int mode = SSL_VERIFY_PEER;
      if (tls.client_auth == ClientAuth::kRequireAndVerifyClientCert) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      SSL_CTX_set_verify(ctx, mode, nullptr);
      break;
    }
  }
  return ctx;
}

void FreeSslContext(void* ctx) { SSL_CTX_free(static_cast<SSL_CTX*>(ctx)); }

}  // namespace diskprobe::http
