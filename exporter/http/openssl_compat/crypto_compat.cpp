// The "libcrypto.so" that Debian's civetweb 1.15 dlopens: every OpenSSL symbol comes from its
// dependency, the real libcrypto.so.3. Needed because the unversioned name exists only where
// libssl-dev is installed. See exporter/http/tls.h. It also holds the one OpenSSL call of basic
// auth (compat_api.h), so that the exporter itself does not link OpenSSL.
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "compat_api.h"

extern "C" __attribute__((visibility("default"))) int diskprobe_openssl_compat_crypto() { return 1; }

extern "C" __attribute__((visibility("default"))) int dp_compat_hmac_sha256(const void* key, size_t key_len, void* msg,
                                                                            size_t msg_len, unsigned char out[32]) {
  unsigned int len = 0;
  const unsigned char* r =
      HMAC(EVP_sha256(), key, static_cast<int>(key_len), static_cast<const unsigned char*>(msg), msg_len, out, &len);
  OPENSSL_cleanse(msg, msg_len);
  return r != nullptr && len == 32 ? 0 : -1;
}
