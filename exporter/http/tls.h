#pragma once
// TLS on OpenSSL 3 through two compat libraries (Debian 12 / Raspberry Pi OS Bookworm).
//
// The libraries were made for civetweb 1.15, which served HTTP until its worker-per-connection
// model proved unable to bound hostile clients (docs/architecture.md); the server (http/server.h)
// now drives non-blocking OpenSSL sessions itself through LoadTlsIo(). What follows explains why
// the libraries have the names they have; they stay as the one place OpenSSL is linked.
//
// Debian's civetweb is built for the OpenSSL 1.1 API and loads OpenSSL at run time with
// dlopen("libssl.so") and dlopen("libcrypto.so"), then dlsym()s each function from those handles.
// On OpenSSL 3 two things break: SSL_get_peer_certificate no longer exists (it became
// SSL_get1_peer_certificate), so civetweb calls a NULL pointer on the first HTTPS connection
// (https://github.com/civetweb/civetweb/issues/1334); and the unversioned names exist only where libssl-dev is
// installed, which a Pi running the exporter does not have. docs/architecture.md weighs the options.
//
// The fix: two tiny compat libraries, shipped with the exporter in a private directory
// (<prefix>/lib/diskprobe_exporter), whose SONAMEs are "libssl.so" and "libcrypto.so". They link
// the real libssl.so.3 / libcrypto.so.3 and the libssl one adds SSL_get_peer_certificate as a
// forwarder. LoadOpenSslCompat() dlopens them by full path before civetweb starts; glibc then
// answers civetweb's dlopen("libssl.so") with the already-loaded object of that SONAME, and dlsym
// on it finds every other function in its dependency, the real libssl.so.3.
//
// The SSL_CTX itself is built with OpenSSL 3 directly (MakeSslContext) and handed to civetweb
// through its external_ssl_ctx callback, so certificate and key may be separate files and every
// exporter-toolkit option maps onto OpenSSL calls rather than onto civetweb's narrower options.
// That code, and basic auth's HMAC, sit inside the compat libraries (openssl_compat/compat_api.h):
// the exporter binary does not link OpenSSL, so without --web.config.file no OpenSSL page is
// mapped (1.7 MiB of RSS on x86-64, against an RSS target of a third of node_exporter's).
#include <cstddef>
#include <string>

#include "http/web_config.h"

namespace diskprobe::http {

// Loads the compat libraries from the first directory that has both: <exe dir>/../lib/diskprobe_exporter
// (installed), then <exe dir>/lib/diskprobe_exporter (build tree). Then checks that dlopen("libssl.so")
// resolves to the compat library and that SSL_get_peer_certificate resolves through it. Idempotent.
// False with *error naming the directories tried or the failed check.
bool LoadOpenSslCompat(std::string* error);

// Builds a server SSL_CTX (loads the compat libraries first if needed) (returned as void* so that callers need no
// OpenSSL headers) from `tls`: certificate chain, private key (checked against the certificate), protocol version
// bounds, client certificate policy and CAs. nullptr with *error (file name and OpenSSL's reason) on failure.
void* MakeSslContext(const TlsServerConfig& tls, std::string* error);
void FreeSslContext(void* ctx);  // nullptr: no-op

// Certificate rotation: rebuilds the TLS settings of a context from MakeSslContext (still in use
// by the server) from `tls`, for every connection accepted from now on (a ClientHello callback
// moves each onto the newest context; running connections keep theirs). False with *error (file
// name and OpenSSL's reason) when the new files don't load: the previous settings stay in force.
bool ReloadSslContext(void* ctx, const TlsServerConfig& tls, std::string* error);

// HMAC-SHA256 from the compat libcrypto (loads the compat libraries first if needed): out gets 32
// bytes; msg is cleansed afterwards. Returns 0 on success. nullptr with *error when the compat
// libraries cannot be loaded.
using HmacSha256Fn = int (*)(const void* key, std::size_t key_len, void* msg, std::size_t msg_len,
                             unsigned char out[32]);
HmacSha256Fn LoadHmacSha256(std::string* error);

// Non-blocking TLS sessions for the server's event loop, from the compat "libssl.so" (loads the
// compat libraries first if needed). Codes and semantics: openssl_compat/compat_api.h
// (diskprobe_tls_code: -1 want read, -2 want write, -3 peer closed, -4 error). nullptr with *error
// when the compat libraries cannot be loaded or lack the functions.
inline constexpr long kTlsWantRead = -1, kTlsWantWrite = -2, kTlsClosed = -3, kTlsError = -4;
struct TlsIo {
  void* (*new_session)(void* ssl_ctx, int fd);
  int (*handshake)(void* session);
  long (*read)(void* session, void* buf, std::size_t len);
  long (*write)(void* session, const void* buf, std::size_t len);
  void (*free_session)(void* session);
};
const TlsIo* LoadTlsIo(std::string* error);

}  // namespace diskprobe::http
