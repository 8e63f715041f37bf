#!/usr/bin/env bash
# One package of the build matrix: diskprobe_exporter for a Debian suite (bookworm = Debian 12,
# trixie = Debian 13) and architecture (amd64, arm64, armhf), linked against that suite's own
# libraries, as a .deb with a suite-specific version (0.1.0-1~deb12, 0.1.0-1~deb13), Debian's
# hardening flags (dpkg-buildflags with hardening=+all: PIE, stack protector, FORTIFY_SOURCE,
# RELRO and BIND_NOW) and Depends from dpkg-shlibdeps.
#   scripts/build-deb.sh bookworm|trixie amd64|arm64|armhf|armv6 [output directory]
# armv6 is a pseudo-architecture: the package diskprobe-exporter-armv6 (Architecture armhf) for
# Raspberry Pi 1/Zero on Raspberry Pi OS 32-bit, one static executable from Debian's armel compiler
# (cmake/toolchain-armv6.cmake, docs/packaging.md "ARMv6"), built with the armel compiler
# (crossbuild-essential-armel) of $ARMV6_LIBS_SUITE (default bookworm; trixie gives yaml-cpp 0.8,
# OpenSSL 3.5 and 64-bit time_t) against a sysroot of that suite's armel packages
# (sysroot-<that suite>-armel) and packaged for <suite>, with dpkg-buildflags for armel: all of
# them apply to a static link except PIE (Debian's armel glibc has no static PIE) and BIND_NOW (no
# dynamic symbols to bind); checked below on the unstripped executable before cpack strips it.
# The .deb is written to the output directory (default build-deb/); the build tree is
# $DISKPROBE_CACHE/build-<suite>-<arch>.
#
# Where it builds: with the suite's own compiler, since the C++ library headers, the libraries'
# symbol versions and the suite's dpkg-buildflags (trixie armhf: 64-bit time_t) belong to it.
#  - on this machine when it runs the suite (its -dev packages: scripts/install-deps.sh build,
#    its cross compilers: scripts/install-deps.sh cross);
#  - otherwise in a build root of the suite, $DISKPROBE_CACHE/buildroot-<suite> (debootstrap,
#    made once by scripts/make-build-root.sh, with the compilers, CMake and the amd64 -dev
#    packages), entered with chroot; this repository and the cache are bind-mounted at their own
#    paths, so the sysroots' recorded paths stay valid.
# Cross builds use a sysroot of the suite's packages for the architecture ($DISKPROBE_CACHE/
# sysroot-<suite>-<arch>, scripts/make-sysroot.sh), as scripts/cross-test.sh does.
# DISKPROBE_CACHE defaults to /var/cache/diskprobe-build (sysroots, build roots, build trees: several GB
# for the whole matrix, outside the repository). Needs root for the chroot.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
suite=${1:?usage: build-deb.sh bookworm|trixie amd64|arm64|armhf|armv6 [output directory]}
arch=${2:?usage: build-deb.sh bookworm|trixie amd64|arm64|armhf|armv6 [output directory]}
out=$(realpath -m "${3:-build-deb}")
cache=${DISKPROBE_CACHE:-/var/cache/diskprobe-build}
case "$suite" in
  bookworm) revision=1~deb12 unitdir=/lib/systemd/system ;;
  trixie) revision=1~deb13 unitdir=/usr/lib/systemd/system ;;
  *) echo "build-deb: unsupported suite $suite (bookworm, trixie)" >&2; exit 2 ;;
esac
case "$arch" in amd64|arm64|armhf|armv6) ;; *) echo "build-deb: unsupported architecture $arch" >&2; exit 2 ;; esac
# The suite whose compiler and libraries build it: the package's own, except for armv6, a static
# executable that takes nothing from the system it runs on, built with $ARMV6_LIBS_SUITE's armel
# compiler and libraries (default bookworm: deb.debian.org answers 404 for trixie's current armel
# libc6, libssl and zlib files that its index lists, docs/packaging.md) and packaged for the
# suite (version, systemd unit directory, changelog) like the others.
libsuite=$suite
if [ "$arch" = armv6 ]; then
  libsuite=${ARMV6_LIBS_SUITE:-bookworm}
  case "$libsuite" in bookworm|trixie) ;; *) echo "build-deb: ARMV6_LIBS_SUITE=$libsuite: bookworm or trixie" >&2; exit 2 ;; esac
fi
build=$cache/build-$suite-$arch
sysroot=$cache/sysroot-$suite-$arch
here=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
native=$(dpkg --print-architecture)
# The package's name and dpkg architecture, and dpkg-buildflags' architecture.
pkg=diskprobe-exporter debarch=$arch flagsarch=$arch
sysarch=$arch
if [ "$arch" = armv6 ]; then
  pkg=diskprobe-exporter-armv6 debarch=armhf flagsarch=armel sysarch=armel
  sysroot=$cache/sysroot-$libsuite-armel
fi

if [ "${DISKPROBE_IN_BUILD_ROOT:-}" != 1 ] && [ "$here" != "$libsuite" ]; then
  root=$cache/buildroot-$libsuite
  scripts/make-build-root.sh "$libsuite" "$root"
  [ "$arch" = "$native" ] || SUITE=$libsuite scripts/make-sysroot.sh "$sysarch" "$sysroot"
  mounts=()
  cleanup() { for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done; }
  trap cleanup EXIT
  # The Git directory too when it lies outside the checkout (a worktree): CMake reads the
  # revision for diskprobe_build_info from it.
  gitdir=$(git -C "$src" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
  case "$gitdir" in "$src"/*|"") gitdir= ;; esac
  for d in /proc /dev "$src" "$cache" "$out" ${gitdir:+"$gitdir"}; do
    mkdir -p "$d" "$root$d"
    mount --bind "$d" "$root$d"
    mounts+=("$root$d")
    if [ "$d" = "$gitdir" ]; then mount -o remount,bind,ro "$root$d"; fi  # read only: the revision is all it gives
  done
  chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DISKPROBE_IN_BUILD_ROOT=1 \
    DISKPROBE_CACHE="$cache" JOBS="${JOBS:-2}" ARMV6_LIBS_SUITE="$libsuite" bash "$src/scripts/build-deb.sh" "$suite" "$arch" "$out"
  exit
fi

# From here on: a machine (or build root) of the suite.
cmake_args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DDISKPROBE_BUILD_TESTS=OFF
            -DDISKPROBE_DEB_REVISION="$revision" -DDISKPROBE_DEB_DISTRIBUTION="$suite"
            -DDISKPROBE_SYSTEMD_UNIT_DIR="$unitdir")
if [ "$arch" = armv6 ]; then
  SUITE=$libsuite scripts/make-sysroot.sh armel "$sysroot"
  if [ "$(cat "$sysroot/var/lib/dpkg/info/sysroot-path" 2>/dev/null)" != "$(realpath "$sysroot")" ]; then
    scripts/cross-dpkg-db.sh "$sysroot" "$sysroot.apt/archives"
  fi
  scripts/armv6-static-deps.sh "$sysroot"
  cmake_args+=(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv6.cmake -DDISKPROBE_SYSROOT="$sysroot")
elif [ "$arch" != "$native" ]; then
  SUITE=$suite scripts/make-sysroot.sh "$arch" "$sysroot"
  if [ "$(cat "$sysroot/var/lib/dpkg/info/sysroot-path" 2>/dev/null)" != "$(realpath "$sysroot")" ]; then
    scripts/cross-dpkg-db.sh "$sysroot" "$sysroot.apt/archives"
  fi
  cmake_args+=(-DCMAKE_TOOLCHAIN_FILE="cmake/toolchain-$arch.cmake" -DDISKPROBE_SYSROOT="$sysroot")
fi
command -v ccache >/dev/null && cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Debian's flags for the target architecture, all hardening features on (bindnow is not in the
# default set). CMake takes CXXFLAGS and LDFLAGS from the environment at the first configure.
# No -g: the package ships no debug symbols (no -dbgsym package), and -g costs a third of the
# compile time on a small machine.
# (armv6: armel's, the ABI the compiler builds for.)
export DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CXXFLAGS_MAINT_STRIP=-g DEB_HOST_ARCH=$flagsarch
CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
export CXXFLAGS LDFLAGS
unset DEB_HOST_ARCH
echo "build-deb: $suite $arch, version 0.x-$revision, built with $libsuite's compiler and libraries" >&2
echo "build-deb: CXXFLAGS=$CXXFLAGS" >&2
echo "build-deb: LDFLAGS=$LDFLAGS" >&2
rm -rf "$build"
cmake "${cmake_args[@]}" >"$cache/build-$suite-$arch.configure.log" 2>&1 ||
  { cat "$cache/build-$suite-$arch.configure.log" >&2; exit 1; }
start=$SECONDS
cmake --build "$build" -j "${JOBS:-2}"
echo "build-deb: built in $((SECONDS - start)) s" >&2
if [ "$arch" = armv6 ]; then
  # What hardening-check cannot see in the stripped static executable of the package: the
  # project's own objects call the stack protector's check and the fortified libc functions.
  nm=arm-linux-gnueabi-nm
  objs=$(find "$build" -name '*.cpp.o' -path '*diskprobe_*' | wc -l)
  ssp=$(find "$build" -name '*.cpp.o' -path '*diskprobe_*' -exec "$nm" -u {} + 2>/dev/null | grep -c ' U __stack_chk_fail$' || true)
  chk=$(find "$build" -name '*.cpp.o' -path '*diskprobe_*' -exec "$nm" -u {} + 2>/dev/null | awk '$2 ~ /^__.*_chk$/ && $2 != "__stack_chk_fail" {print $2}' | sort -u | tr '\n' ' ')
  echo "build-deb: armv6 hardening: $ssp of $objs objects call __stack_chk_fail; fortified calls: ${chk:-none}" >&2
  file -b "$build/diskprobe_exporter" | grep -q 'statically linked' || { echo "build-deb: armv6: not a static executable" >&2; exit 1; }
  [ "$ssp" -gt 0 ] && [ -n "$chk" ] || { echo "build-deb: armv6: no stack protector or FORTIFY_SOURCE in the objects" >&2; exit 1; }
fi
rm -rf "$build/package"
(cd "$build" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$build/package" >cpack.log 2>&1) ||
  { cat "$build/cpack.log" >&2; exit 1; }
deb=$(ls "$build"/package/"$pkg"_*_"$debarch".deb)
mkdir -p "$out"
cp "$deb" "$out/"
echo "build-deb: $out/$(basename "$deb")" >&2
