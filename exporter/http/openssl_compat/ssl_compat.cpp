// The "libssl.so" that Debian's civetweb 1.15 dlopens: everything comes from its dependency, the
// real libssl.so.3, except the one OpenSSL 1.1 function civetweb needs and OpenSSL 3 renamed.
// See exporter/http/tls.h. No OpenSSL header: ssl.h turns the old name into a macro.
extern "C" {
struct ssl_st;
struct x509_st;
x509_st* SSL_get1_peer_certificate(const ssl_st* s);

// OpenSSL 1.1's SSL_get_peer_certificate already returned a new reference (civetweb X509_free()s it).
__attribute__((visibility("default"))) x509_st* SSL_get_peer_certificate(const ssl_st* s) {
  return SSL_get1_peer_certificate(s);
}
}
