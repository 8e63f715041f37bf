// The "libcrypto.so" that Debian's civetweb 1.15 dlopens: nothing of its own; every symbol comes
// from its dependency, the real libcrypto.so.3. Needed because the unversioned name exists only
// where libssl-dev is installed. See exporter/http/tls.h.
extern "C" __attribute__((visibility("default"))) int diskprobe_openssl_compat_crypto() { return 1; }
