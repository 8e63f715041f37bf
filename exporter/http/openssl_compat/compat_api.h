#pragma once
// The C interface between the exporter and its OpenSSL compat libraries (exporter/http/tls.h).
//
// Everything that needs OpenSSL lives in those two dlopen'ed libraries, not in the exporter: the
// exporter binary does not link libssl.so.3 or libcrypto.so.3, so a node without
// --web.config.file never maps them (about 1.7 MiB of RSS, against a target of a third of node_exporter's). The
// exporter finds these functions with dlsym() on the compat handles after LoadOpenSslCompat().
//
// Plain C types only: the libraries are built from the same tree, but a C ABI keeps the boundary
// obvious and free of std:: layouts.
#include <stddef.h>

extern "C" {

// The TLS settings of an exporter-toolkit web config (http/web_config.h TlsServerConfig).
struct diskprobe_tls_options {
  const char* cert_file;       // PEM certificate chain
  const char* key_file;        // PEM private key
  const char* client_ca_file;  // PEM CAs for client certificates; "" when unused
  int min_version;             // TLS1_x_VERSION (0x0301..0x0304)
  int max_version;             // 0: no upper bound
  int client_auth;             // diskprobe_client_auth
};

// Go's tls.ClientAuthType, as exporter-toolkit names them (same order as http::ClientAuth).
enum diskprobe_client_auth {
  DISKPROBE_NO_CLIENT_CERT = 0,
  DISKPROBE_REQUEST_CLIENT_CERT = 1,
  DISKPROBE_REQUIRE_ANY_CLIENT_CERT = 2,
  DISKPROBE_VERIFY_CLIENT_CERT_IF_GIVEN = 3,
  DISKPROBE_REQUIRE_AND_VERIFY_CLIENT_CERT = 4,
};

// In the "libssl.so" compat library: dp_compat_ssl_ctx_new, dp_compat_ssl_ctx_free. Builds a
// server SSL_CTX (returned as void*): certificate chain, private key checked against it, protocol
// bounds, client certificate policy and CAs. NULL on failure, with a NUL-terminated message (file
// name and OpenSSL's reasons) in err.
typedef void* (*diskprobe_ssl_ctx_new_fn)(const struct diskprobe_tls_options* opts, char* err, size_t err_size);
typedef void (*diskprobe_ssl_ctx_free_fn)(void* ctx);

// dp_compat_ssl_ctx_reload: builds a new context from opts and makes it the one every *new*
// connection on `front` (a context from dp_compat_ssl_ctx_new, still in use by the server) uses:
// certificate, key, client CAs, verify mode, version bounds. Running connections keep theirs.
// 0 on success; -1 with a message in err, and the current context unchanged, on failure.
typedef int (*diskprobe_ssl_ctx_reload_fn)(void* front, const struct diskprobe_tls_options* opts, char* err,
                                           size_t err_size);

// In the "libcrypto.so" compat library: dp_compat_hmac_sha256, HMAC-SHA256 (RFC 2104, FIPS 198-1)
// of msg under key into out (32 bytes), then msg is cleansed (OPENSSL_cleanse). 0 on success, -1
// on error.
typedef int (*diskprobe_hmac_sha256_fn)(const void* key, size_t key_len, void* msg, size_t msg_len,
                                        unsigned char out[32]);

// Non-blocking TLS server sessions on an accepted socket (in the "libssl.so" compat library), for
// the server's event loop. dp_compat_tls_new: a session on `fd` from a context of
// dp_compat_ssl_ctx_new (NULL on failure). dp_compat_tls_handshake: 0 when done, else one of the
// codes below. dp_compat_tls_read / _write: bytes moved (> 0), else one of the codes below.
// dp_compat_tls_free: sends close_notify when the handshake had finished (never waits), frees.
enum diskprobe_tls_code {
  DISKPROBE_TLS_WANT_READ = -1,   // retry when the socket is readable
  DISKPROBE_TLS_WANT_WRITE = -2,  // retry when the socket is writable
  DISKPROBE_TLS_CLOSED = -3,      // the peer sent close_notify
  DISKPROBE_TLS_ERROR = -4,       // protocol or socket error: close the connection
};
typedef void* (*diskprobe_tls_new_fn)(void* ctx, int fd);
typedef int (*diskprobe_tls_handshake_fn)(void* session);
typedef long (*diskprobe_tls_read_fn)(void* session, void* buf, size_t len);
typedef long (*diskprobe_tls_write_fn)(void* session, const void* buf, size_t len);
typedef void (*diskprobe_tls_free_fn)(void* session);

}  // extern "C"
