#!/usr/bin/env bash
# Builds a Debian sysroot (Debian 12 bookworm by default, SUITE=trixie for Debian 13) for
# cross-compiling diskprobe_exporter: the -dev packages the build needs, and everything they
# depend on, for a foreign architecture (or amd64, for packages of another suite), downloaded with apt and
# unpacked with dpkg -x. Nothing is installed into the machine: apt runs with its own state,
# lists and cache under the output directory and an empty dpkg status, so it resolves the whole
# dependency closure as for an empty system. (Installing libyaml-cpp-dev:arm64 etc. into the
# machine root replaces the amd64 -dev packages: they are not co-installable across architectures.) It also writes a dpkg
# database of them in <output>/var/lib/dpkg (scripts/cross-dpkg-db.sh), for dpkg-shlibdeps.
#   scripts/make-sysroot.sh arm64 [build/sysroot-arm64]
#   scripts/make-sysroot.sh armhf [build/sysroot-armhf]
#   SUITE=trixie scripts/make-sysroot.sh arm64 /var/cache/diskprobe/sysroot-trixie-arm64
# Then: cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm64.cmake
# A trixie sysroot needs trixie's compilers (its libstdc++ headers are GCC 14's):
# scripts/build-deb.sh builds in a trixie root for that.
set -euo pipefail
arch=${1:?usage: make-sysroot.sh arm64|armhf|armel|amd64 [output directory]}
case "$arch" in arm64|armhf|armel|amd64) ;; *) echo "unsupported architecture $arch" >&2; exit 2 ;; esac
suite=${SUITE:-bookworm}
# The C++ library headers of the suite's default compiler.
case "$suite" in
  bookworm) libstdcxx=libstdc++-12-dev ;;
  trixie) libstdcxx=libstdc++-14-dev ;;
  *) echo "unsupported suite $suite (bookworm, trixie)" >&2; exit 2 ;;
esac
out=$(realpath -m "${2:-build/sysroot-$arch}")
# The libraries the build links or includes (scripts/install-deps.sh build_pkgs and the tests').
# No libcivetweb-dev: the HTTP server is the exporter's own (exporter/http); prometheus-cpp-dev
# still pulls civetweb in as its own dependency.
pkgs=(libc6-dev "$libstdcxx" prometheus-cpp-dev libyaml-cpp-dev libcli11-dev
      libcrypt-dev nlohmann-json3-dev libssl-dev liburing-dev libcurl4-openssl-dev zlib1g-dev libdeflate-dev
      libgtest-dev libgmock-dev libboost-dev)

# Done already with these packages: nothing to do (scripts/cross-test.sh calls this every time, so a
# package added above reaches sysroots made before).
stamp=$out/.diskprobe-sysroot-packages
if [ "$(cat "$stamp" 2>/dev/null)" = "$suite ${pkgs[*]}" ]; then
  echo "make-sysroot: $out is up to date" >&2
  exit 0
fi

apt_dir=$out.apt
mkdir -p "$apt_dir"/{lists/partial,archives/partial,etc/preferences.d} "$out"
: >"$apt_dir/status"
sources=$apt_dir/etc/sources.list
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
printf 'deb [arch=%s] %s %s main\ndeb [arch=%s] %s %s-updates main\ndeb [arch=%s] http://deb.debian.org/debian-security %s-security main\n' \
  "$arch" "$mirror" "$suite" "$arch" "$mirror" "$suite" "$arch" "$suite" >"$sources"
source "$(dirname "$0")/sysroot-apt.sh"
sysroot_apt_opts "$arch" "$apt_dir"
echo "make-sysroot: apt update ($suite $arch)" >&2
for try in 1 2 3; do  # a mirror in the middle of a sync answers with a stale index now and then
  apt-get "${apt_opts[@]}" update -qq && break
  if [ "$try" = 3 ]; then
    # Building needs headers and sonames, which the main suite has; say what is missing.
    echo "make-sysroot: WARNING: some indexes did not download (above); building from the others" >&2
    break
  fi
  sleep 5
done
echo "make-sysroot: downloading ${pkgs[*]} and their dependencies" >&2
apt-get "${apt_opts[@]}" install -y -qq --download-only "${pkgs[@]}" >/dev/null
n=0
for deb in "$apt_dir"/archives/*.deb; do
  dpkg-deb -x "$deb" "$out"
  n=$((n + 1))
done
# Absolute symlinks (e.g. lib/<triplet>/libfoo.so -> /lib/<triplet>/libfoo.so.1) would point into
# the machine root: make them relative to the sysroot.
find "$out" -type l | while read -r l; do
  t=$(readlink "$l")
  case "$t" in /*) ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" "$out$t")" "$l" ;; esac
done
# Debian 12 and 13 are merged-/usr, but the unpacked packages are not: lib -> usr/lib as on the target.
for d in lib bin sbin; do
  if [ -d "$out/$d" ] && [ ! -L "$out/$d" ]; then cp -a "$out/$d/." "$out/usr/$d/" && rm -rf "${out:?}/$d"; fi
  [ -e "$out/$d" ] || ln -s "usr/$d" "$out/$d"
done
echo "make-sysroot: $n packages unpacked into $out" >&2
# A dpkg database of these packages, for dpkg-shlibdeps when packaging (cpack -G DEB) a cross build.
"$(dirname "$0")/cross-dpkg-db.sh" "$out" "$apt_dir/archives"
echo "$suite ${pkgs[*]}" >"$stamp"
