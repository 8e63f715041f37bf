// The server SSL_CTX of --web.config.file, built with OpenSSL 3 inside the "libssl.so" compat
// library so that the exporter itself never links OpenSSL (compat_api.h says why).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <string>

#include "compat_api.h"

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

// Accepts any client certificate (RequestClientCert, RequireAnyClientCert: no verification).
int AcceptAny(int, X509_STORE_CTX *) { return 1; }

SSL_CTX* Build(const diskprobe_tls_options& o, std::string* error) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    *error = "cannot create a TLS context: " + OpenSslError();
    return nullptr;
  }
  auto fail = [&](const std::string& what) -> SSL_CTX* {
    *error = what + ": " + OpenSslError();
    SSL_CTX_free(ctx);
    return nullptr;
  };
  const std::string cert = o.cert_file, key = o.key_file, ca = o.client_ca_file ? o.client_ca_file : "";
  if (SSL_CTX_set_min_proto_version(ctx, o.min_version) != 1) return fail("cannot set min_version");
  if (o.max_version != 0 && SSL_CTX_set_max_proto_version(ctx, o.max_version) != 1)
    return fail("cannot set max_version");
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1) return fail("cert_file \"" + cert + "\"");
  if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) return fail("key_file \"" + key + "\"");
  if (SSL_CTX_check_private_key(ctx) != 1)
    return fail("key_file \"" + key + "\" does not match cert_file \"" + cert + "\"");
  // Sessions resumed across a client-certificate check need a context id (OpenSSL refuses them otherwise).
  static const unsigned char kSessionContext[] = "diskprobe_exporter";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);

  switch (o.client_auth) {
    case DISKPROBE_NO_CLIENT_CERT:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
      break;
    case DISKPROBE_REQUEST_CLIENT_CERT:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, &AcceptAny);
      break;
    case DISKPROBE_REQUIRE_ANY_CLIENT_CERT:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, &AcceptAny);
      break;
    case DISKPROBE_VERIFY_CLIENT_CERT_IF_GIVEN:
    case DISKPROBE_REQUIRE_AND_VERIFY_CLIENT_CERT: {
      if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) return fail("client_ca_file \"" + ca + "\"");
      STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca.c_str());
      if (names == nullptr) return fail("client_ca_file \"" + ca + "\"");
      SSL_CTX_set_client_CA_list(ctx, names);
      int mode = SSL_VERIFY_PEER;
      if (o.client_auth == DISKPROBE_REQUIRE_AND_VERIFY_CLIENT_CERT) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
      SSL_CTX_set_verify(ctx, mode, nullptr);
      break;
    }
    default:
      return fail("unknown client_auth_type " + std::to_string(o.client_auth));
  }
  return ctx;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dp_compat_ssl_ctx_new(const diskprobe_tls_options* opts,
                                                                              char* err, size_t err_size) {
  std::string error;
  SSL_CTX* ctx = Build(*opts, &error);
  if (ctx == nullptr && err != nullptr && err_size > 0) std::snprintf(err, err_size, "%s", error.c_str());
  return ctx;
}

extern "C" __attribute__((visibility("default"))) void dp_compat_ssl_ctx_free(void* ctx) {
  SSL_CTX_free(static_cast<SSL_CTX *>(ctx));
}
