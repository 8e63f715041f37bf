// The server SSL_CTX of --web.config.file, built with OpenSSL 3 inside the "libssl.so" compat
// library so that the exporter itself never links OpenSSL (compat_api.h says why).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cstdio>
#include <mutex>
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
int AcceptAny(int, X509_STORE_CTX*) { return 1; }

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
    case DISKPROBE_NO_CLIENT_CERT: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); break;
    case DISKPROBE_REQUEST_CLIENT_CERT: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, &AcceptAny); break;
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
    default: return fail("unknown client_auth_type " + std::to_string(o.client_auth));
  }
  return ctx;
}

// Certificate rotation (SIGHUP reload of --web.config.file). civetweb keeps the SSL_CTX it was
// given at start (the "front" context) for its whole life. The front context carries a holder of
// the *current* context; a ClientHello callback moves each new connection onto it before the
// version and certificate are chosen (SSL_set_SSL_CTX: certificate, key, session id context; the
// verify mode, client CA list and version bounds are per-SSL settings and copied over too).
struct Holder {
  std::mutex mu;
  SSL_CTX* current;  // the front context itself until the first reload; then a reference we own
};

int HolderIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

int OnClientHello(SSL* s, int*, void* arg) {
  auto* h = static_cast<Holder*>(arg);
  SSL_CTX* cur;
  {
    std::lock_guard<std::mutex> lock(h->mu);
    cur = h->current;
    SSL_CTX_up_ref(cur);
  }
  if (cur != SSL_get_SSL_CTX(s)) {
    SSL_set_SSL_CTX(s, cur);
    SSL_set_verify(s, SSL_CTX_get_verify_mode(cur), SSL_CTX_get_verify_callback(cur));
    STACK_OF(X509_NAME)* cas = SSL_CTX_get_client_CA_list(cur);
    SSL_set_client_CA_list(s, cas != nullptr ? SSL_dup_CA_list(cas) : nullptr);
    SSL_set_min_proto_version(s, SSL_CTX_get_min_proto_version(cur));
    SSL_set_max_proto_version(s, SSL_CTX_get_max_proto_version(cur));
  }
  SSL_CTX_free(cur);
  return SSL_CLIENT_HELLO_SUCCESS;
}

void CopyError(const std::string& error, char* err, size_t err_size) {
  if (err != nullptr && err_size > 0) std::snprintf(err, err_size, "%s", error.c_str());
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* dp_compat_ssl_ctx_new(const diskprobe_tls_options* opts,
                                                                              char* err, size_t err_size) {
  std::string error;
  SSL_CTX* ctx = Build(*opts, &error);
  if (ctx == nullptr) {
    CopyError(error, err, err_size);
    return nullptr;
  }
  auto* h = new Holder{{}, ctx};
  if (HolderIndex() < 0 || SSL_CTX_set_ex_data(ctx, HolderIndex(), h) != 1) {
    delete h;
    SSL_CTX_free(ctx);
    CopyError("cannot attach the certificate holder: " + OpenSslError(), err, err_size);
    return nullptr;
  }
  SSL_CTX_set_client_hello_cb(ctx, &OnClientHello, h);
  return ctx;
}

extern "C" __attribute__((visibility("default"))) int dp_compat_ssl_ctx_reload(void* front,
                                                                               const diskprobe_tls_options* opts,
                                                                               char* err, size_t err_size) {
  auto* h = static_cast<Holder*>(SSL_CTX_get_ex_data(static_cast<SSL_CTX*>(front), HolderIndex()));
  if (h == nullptr) {
    CopyError("not a context made by dp_compat_ssl_ctx_new", err, err_size);
    return -1;
  }
  std::string error;
  SSL_CTX* next = Build(*opts, &error);
  if (next == nullptr) {
    CopyError(error, err, err_size);
    return -1;
  }
  SSL_CTX* old;
  {
    std::lock_guard<std::mutex> lock(h->mu);
    old = h->current;
    h->current = next;
  }
  if (old != front) SSL_CTX_free(old);  // connections moved onto it hold their own references
  return 0;
}

extern "C" __attribute__((visibility("default"))) void dp_compat_ssl_ctx_free(void* ctx) {
  auto* front = static_cast<SSL_CTX*>(ctx);
  if (auto* h = static_cast<Holder*>(SSL_CTX_get_ex_data(front, HolderIndex()))) {
    SSL_CTX_set_ex_data(front, HolderIndex(), nullptr);
    if (h->current != front) SSL_CTX_free(h->current);
    delete h;
  }
  SSL_CTX_free(front);
}
