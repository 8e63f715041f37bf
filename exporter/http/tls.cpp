#include "http/tls.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <mutex>

#include "http/openssl_compat/compat_api.h"

namespace diskprobe::http {
namespace {

static_assert(static_cast<int>(ClientAuth::kNoClientCert) == DISKPROBE_NO_CLIENT_CERT &&
                  static_cast<int>(ClientAuth::kRequestClientCert) == DISKPROBE_REQUEST_CLIENT_CERT &&
                  static_cast<int>(ClientAuth::kRequireAnyClientCert) == DISKPROBE_REQUIRE_ANY_CLIENT_CERT &&
                  static_cast<int>(ClientAuth::kVerifyClientCertIfGiven) == DISKPROBE_VERIFY_CLIENT_CERT_IF_GIVEN &&
                  static_cast<int>(ClientAuth::kRequireAndVerifyClientCert) == DISKPROBE_REQUIRE_AND_VERIFY_CLIENT_CERT,
              "http::ClientAuth and diskprobe_client_auth must agree");
static_assert(kTlsWantRead == DISKPROBE_TLS_WANT_READ && kTlsWantWrite == DISKPROBE_TLS_WANT_WRITE &&
                  kTlsClosed == DISKPROBE_TLS_CLOSED && kTlsError == DISKPROBE_TLS_ERROR,
              "http::kTls* and diskprobe_tls_code must agree");

#if !DISKPROBE_STATIC_TLS
std::string ExeDir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}
#endif

std::mutex g_compat_mu;
bool g_compat_loaded = false;
diskprobe_ssl_ctx_new_fn g_ssl_ctx_new = nullptr;
diskprobe_ssl_ctx_free_fn g_ssl_ctx_free = nullptr;
diskprobe_ssl_ctx_reload_fn g_ssl_ctx_reload = nullptr;
diskprobe_hmac_sha256_fn g_hmac_sha256 = nullptr;
TlsIo g_tls_io{};

diskprobe_tls_options ToOptions(const TlsServerConfig& tls) {
  return {tls.cert_file.c_str(), tls.key_file.c_str(), tls.client_ca_file.c_str(),
          tls.min_version,       tls.max_version,      static_cast<int>(tls.client_auth)};
}

}  // namespace

#if DISKPROBE_STATIC_TLS
// A static executable (the ARMv6 build, cmake/toolchain-armv6.cmake) cannot dlopen shared objects
// that link their own libc: the compat functions and OpenSSL are linked into the binary instead,
// and "loading" them is taking their addresses. The price: OpenSSL's pages are part of the
// binary whether or not --web.config.file is given.
extern "C" {
void* dp_compat_ssl_ctx_new(const diskprobe_tls_options* opts, char* err, size_t err_size);
int dp_compat_ssl_ctx_reload(void* front, const diskprobe_tls_options* opts, char* err, size_t err_size);
void dp_compat_ssl_ctx_free(void* ctx);
int dp_compat_hmac_sha256(const void* key, size_t key_len, void* msg, size_t msg_len, unsigned char out[32]);
void* dp_compat_tls_new(void* ctx, int fd);
int dp_compat_tls_handshake(void* session);
long dp_compat_tls_read(void* session, void* buf, size_t len);
long dp_compat_tls_write(void* session, const void* buf, size_t len);
void dp_compat_tls_free(void* session);
}

bool LoadOpenSslCompat(std::string*) {
  std::lock_guard<std::mutex> lock(g_compat_mu);
  g_ssl_ctx_new = dp_compat_ssl_ctx_new;
  g_ssl_ctx_free = dp_compat_ssl_ctx_free;
  g_ssl_ctx_reload = dp_compat_ssl_ctx_reload;
  g_hmac_sha256 = dp_compat_hmac_sha256;
  g_tls_io = {dp_compat_tls_new, dp_compat_tls_handshake, dp_compat_tls_read, dp_compat_tls_write, dp_compat_tls_free};
  g_compat_loaded = true;
  return true;
}
#else
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
    // Never closed: TLS contexts, sessions and function pointers into them live as long as the process.
    void* crypto_h = dlopen(crypto.c_str(), RTLD_NOW | RTLD_LOCAL);
    void* ssl_h = crypto_h == nullptr ? nullptr : dlopen(ssl.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (crypto_h == nullptr || ssl_h == nullptr) {
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
    g_ssl_ctx_new = reinterpret_cast<diskprobe_ssl_ctx_new_fn>(dlsym(ssl_h, "dp_compat_ssl_ctx_new"));
    g_ssl_ctx_free = reinterpret_cast<diskprobe_ssl_ctx_free_fn>(dlsym(ssl_h, "dp_compat_ssl_ctx_free"));
    g_ssl_ctx_reload = reinterpret_cast<diskprobe_ssl_ctx_reload_fn>(dlsym(ssl_h, "dp_compat_ssl_ctx_reload"));
    g_hmac_sha256 = reinterpret_cast<diskprobe_hmac_sha256_fn>(dlsym(crypto_h, "dp_compat_hmac_sha256"));
    g_tls_io.new_session = reinterpret_cast<diskprobe_tls_new_fn>(dlsym(ssl_h, "dp_compat_tls_new"));
    g_tls_io.handshake = reinterpret_cast<diskprobe_tls_handshake_fn>(dlsym(ssl_h, "dp_compat_tls_handshake"));
    g_tls_io.read = reinterpret_cast<diskprobe_tls_read_fn>(dlsym(ssl_h, "dp_compat_tls_read"));
    g_tls_io.write = reinterpret_cast<diskprobe_tls_write_fn>(dlsym(ssl_h, "dp_compat_tls_write"));
    g_tls_io.free_session = reinterpret_cast<diskprobe_tls_free_fn>(dlsym(ssl_h, "dp_compat_tls_free"));
    if (g_ssl_ctx_new == nullptr || g_ssl_ctx_free == nullptr || g_ssl_ctx_reload == nullptr ||
        g_hmac_sha256 == nullptr || g_tls_io.new_session == nullptr || g_tls_io.handshake == nullptr ||
        g_tls_io.read == nullptr || g_tls_io.write == nullptr || g_tls_io.free_session == nullptr) {
      *error = "OpenSSL compat libraries in " + d + " lack the dp_compat_* functions (from another build?)";
      return false;
    }
    g_compat_loaded = true;
    return true;
  }
  *error = "OpenSSL compat libraries (libssl.so, libcrypto.so) not found in " + tried +
           "; TLS needs them (see docs/architecture.md)";
  return false;
}
#endif  // DISKPROBE_STATIC_TLS

namespace {

// The compat library names the key first ("key_file \"...\": ..."): put its place in the web
// config in front, as every other web config error has (file:line:col: path: message), on the
// first load and on every reload alike.
std::string WithPlace(const TlsServerConfig& tls, const char* err) {
  const std::string_view e = err;
  const std::pair<std::string_view, const std::string*> keys[] = {{"cert_file ", &tls.cert_file_at},
                                                                  {"key_file ", &tls.key_file_at},
                                                                  {"client_ca_file ", &tls.client_ca_file_at}};
  for (const auto& [key, at] : keys)
    if (e.substr(0, key.size()) == key && !at->empty()) return *at + ": " + std::string(e.substr(key.size()));
  return std::string(e);
}

}  // namespace

void* MakeSslContext(const TlsServerConfig& tls, std::string* error) {
  if (!LoadOpenSslCompat(error)) return nullptr;
  const diskprobe_tls_options opts = ToOptions(tls);
  char err[1024] = "";
  void* ctx = g_ssl_ctx_new(&opts, err, sizeof err);
  if (ctx == nullptr) *error = WithPlace(tls, err);
  return ctx;
}

bool ReloadSslContext(void* ctx, const TlsServerConfig& tls, std::string* error) {
  if (!LoadOpenSslCompat(error)) return false;
  const diskprobe_tls_options opts = ToOptions(tls);
  char err[1024] = "";
  if (g_ssl_ctx_reload(ctx, &opts, err, sizeof err) == 0) return true;
  *error = WithPlace(tls, err);
  return false;
}

void FreeSslContext(void* ctx) {
  if (ctx != nullptr && g_ssl_ctx_free != nullptr) g_ssl_ctx_free(ctx);
}

HmacSha256Fn LoadHmacSha256(std::string* error) {
  if (!LoadOpenSslCompat(error)) return nullptr;
  return g_hmac_sha256;
}

const TlsIo* LoadTlsIo(std::string* error) {
  if (!LoadOpenSslCompat(error)) return nullptr;
  return &g_tls_io;
}

}  // namespace diskprobe::http
