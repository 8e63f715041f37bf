#!/usr/bin/env bash
# The static libraries of the ARMv6 build (cmake/toolchain-armv6.cmake) that Debian's armel -dev
# packages lack, built from their Debian source packages with Debian's armel cross compiler and
# installed into <sysroot>/opt/diskprobe-static, where the toolchain file looks first.
#
# What Debian 12's armel -dev packages ship as static archives (checked in a sysroot of
# scripts/make-sysroot.sh armel): libc.a, libstdc++.a, libssl.a + libcrypto.a (libssl-dev),
# libyaml-cpp.a, libcrypt.a, libdeflate.a, liburing.a, libz.a, libgtest.a/libgmock.a; CLI11 and
# nlohmann-json are headers. Missing: prometheus-cpp (shared libraries only), built here (core
# only: the exporter's HTTP server is its own, and the pull library would bring civetweb); and
# libcurl's dependency chain (libcurl.a exists, but Kerberos, OpenLDAP, librtmp, libssh2, nghttp2,
# libpsl ... do not), which prometheus-cpp's push library needs: the ARMv6 bench has no --push.
#   scripts/armv6-static-deps.sh <sysroot of scripts/make-sysroot.sh armel>
# Returns at once when the sysroot has them (stamp). Needs the sysroot's apt state (<sysroot>.apt),
# dpkg-source (dpkg-dev), cmake, ninja, crossbuild-essential-armel.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
sysroot=$(realpath "${1:?usage: armv6-static-deps.sh <armel sysroot>}")
apt_dir=$sysroot.apt
prefix=/opt/diskprobe-static
pkgs=(prometheus-cpp)
# Debian's flags for armel, as Debian builds its own packages (hardening, and on Debian 13 the
# 64-bit time_t ABI that every other armel archive linked beside this one was built with).
flags=$(DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CXXFLAGS_MAINT_STRIP=-g DEB_HOST_ARCH=armel \
        sh -c 'echo "$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"')
stamp=$sysroot$prefix/.diskprobe-static-deps
[ "$(cat "$stamp" 2>/dev/null)" = "${pkgs[*]} $flags" ] && { echo "armv6-static-deps: $sysroot$prefix is up to date" >&2; exit 0; }
[ -d "$apt_dir/lists" ] || { echo "armv6-static-deps: no apt state in $apt_dir (scripts/make-sysroot.sh armel)" >&2; exit 1; }

work=$sysroot.src
rm -rf "$work" "$sysroot$prefix"
mkdir -p "$work/lists/partial"
# The sysroot's sources (same suite, same snapshot of the mirror) plus their deb-src lines.
{ cat "$apt_dir/etc/sources.list"; sed -n 's/^deb \[arch=[^]]*\] /deb-src /p' "$apt_dir/etc/sources.list"; } >"$work/sources.list"
source scripts/sysroot-apt.sh
sysroot_apt_opts armel "$apt_dir"
apt_opts+=(-o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::State::Lists=$work/lists")
apt-get "${apt_opts[@]}" update -qq
cd "$work"
apt-get "${apt_opts[@]}" source --download-only "${pkgs[@]}" >source.log 2>&1 || { cat source.log >&2; exit 1; }
dpkg-source -x --no-check prometheus-cpp_*.dsc prometheus-cpp >/dev/null
# Debian's own configuration (debian/rules: no third-party copies) with the static library in
# place of the shared one, built as Debian builds it (dpkg-buildflags above, -DNDEBUG), for armel.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S prometheus-cpp -B build-prometheus-cpp -G Ninja -DCMAKE_TOOLCHAIN_FILE="$src/cmake/toolchain-armv6.cmake" \
  -DDISKPROBE_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=None "${launcher[@]}" -DCMAKE_CXX_FLAGS="$flags -DNDEBUG" \
  -DBUILD_SHARED_LIBS=OFF -DUSE_THIRDPARTY_LIBRARIES=OFF -DENABLE_PULL=OFF -DENABLE_PUSH=OFF \
  -DENABLE_COMPRESSION=OFF -DENABLE_TESTING=OFF -DGENERATE_PKGCONFIG=OFF -DCMAKE_INSTALL_PREFIX="$prefix" \
  >configure.log 2>&1 || { cat configure.log >&2; exit 1; }
cmake --build build-prometheus-cpp -j "${JOBS:-2}" >build.log 2>&1 || { tail -40 build.log >&2; exit 1; }
DESTDIR=$sysroot cmake --install build-prometheus-cpp >install.log 2>&1 || { cat install.log >&2; exit 1; }
echo "armv6-static-deps: $(ls "$sysroot$prefix"/lib/*.a | xargs -n1 basename | tr '\n' ' ')in $sysroot$prefix (from $(ls ./*.dsc | xargs -n1 basename))" >&2
echo "${pkgs[*]} $flags" >"$stamp"
