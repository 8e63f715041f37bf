// Non-blocking TLS on one accepted socket, for the server's event loop (http/server.cpp), inside
// the "libssl.so" compat library so that the exporter itself never links OpenSSL (compat_api.h).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "compat_api.h"

namespace {

// One result code for every call, so the event loop needs no OpenSSL header.
int Classify(SSL* ssl, int rc) {
  switch (SSL_get_error(ssl, rc)) {
    case SSL_ERROR_WANT_READ: return DISKPROBE_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE: return DISKPROBE_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: return DISKPROBE_TLS_CLOSED;
    default: return DISKPROBE_TLS_ERROR;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) void* dp_compat_tls_new(void* ctx, int fd) {
  ERR_clear_error();
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx));
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return nullptr;
  }
  // A write that returns WANT_WRITE is retried later from the same (not moved) buffer, possibly
  // with more bytes after it; partial writes let the loop keep its own offset.
  // RELEASE_BUFFERS: a connection waiting for its next request keeps no 16 KiB record buffers
  // (hundreds of idle or half-open connections cost a few MiB less).
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_set_accept_state(ssl);
  return ssl;
}

__attribute__((visibility("default"))) int dp_compat_tls_handshake(void* s) {
  auto* ssl = static_cast<SSL*>(s);
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl);
  return rc == 1 ? 0 : Classify(ssl, rc);
}

__attribute__((visibility("default"))) long dp_compat_tls_read(void* s, void* buf, size_t len) {
  auto* ssl = static_cast<SSL*>(s);
  ERR_clear_error();
  size_t n = 0;
  const int rc = SSL_read_ex(ssl, buf, len, &n);
  return rc == 1 ? static_cast<long>(n) : Classify(ssl, rc);
}

__attribute__((visibility("default"))) long dp_compat_tls_write(void* s, const void* buf, size_t len) {
  auto* ssl = static_cast<SSL*>(s);
  ERR_clear_error();
  size_t n = 0;
  const int rc = SSL_write_ex(ssl, buf, len, &n);
  return rc == 1 ? static_cast<long>(n) : Classify(ssl, rc);
}

__attribute__((visibility("default"))) void dp_compat_tls_free(void* s) {
  auto* ssl = static_cast<SSL*>(s);
  if (ssl == nullptr) return;
  ERR_clear_error();
  if (SSL_is_init_finished(ssl)) SSL_shutdown(ssl);  // one close_notify, best effort, never waits
  SSL_free(ssl);
  ERR_clear_error();
}

}  // extern "C"
