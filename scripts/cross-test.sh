#!/usr/bin/env bash
# Cross-builds diskprobe_exporter for arm64 or armhf against a Debian sysroot, runs the unit tests
# under qemu-user (CTest's CROSSCOMPILING_EMULATOR), and prints the footprint: binary size
# (as built and stripped) and the RSS after 100 scrapes of the exporter running under qemu.
# Also builds the .deb for the target and checks it (scripts/cross-package.sh: Depends from
# dpkg-shlibdeps against the sysroot, ELF machine, installable with apt, lintian findings).
#   scripts/cross-test.sh arm64|armhf [build directory, default build-<arch>]
# The end-to-end and deployment tests need the native binary and are left to `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: cross-test.sh arm64|armhf [build dir]}
build=${2:-build-$arch}
case "$arch" in
  arm64) triplet=aarch64-linux-gnu; qemu=qemu-aarch64-static ;;
  armhf) triplet=arm-linux-gnueabihf; qemu=qemu-arm-static ;;
  *) echo "unsupported architecture $arch" >&2; exit 2 ;;
esac
scripts/install-deps.sh cross
sysroot=${SYSROOT:-build/sysroot-$arch}
scripts/make-sysroot.sh "$arch" "$sysroot"  # returns at once when the sysroot has every package
# The sysroot's dpkg database, for dpkg-shlibdeps (sysroots made before make-sysroot.sh wrote it,
# or moved since).
if [ "$(cat "$sysroot/var/lib/dpkg/info/sysroot-path" 2>/dev/null)" != "$(realpath "$sysroot")" ]; then
  scripts/cross-dpkg-db.sh "$sysroot" "$sysroot.apt/archives"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISKPROBE_BUILD_TESTS=ON \
  -DCMAKE_TOOLCHAIN_FILE="cmake/toolchain-$arch.cmake" -DDISKPROBE_SYSROOT="$PWD/$sysroot" -DDISKPROBE_WERROR="${WERROR:-OFF}"
cmake --build "$build" -j "${JOBS:-2}"
# qemu-user's -L prefix takes every absolute path that exists in the sysroot: a /tmp there (left
# by a run of an older build whose probe tests created it through the prefix) would hide the
# machine's /tmp, where the unit tests make their directories.
rm -rf "$sysroot/tmp"
ctest --test-dir "$build" --output-on-failure -j 2 -E '^(e2e_|deploy_|prometheus_rules|dashboards|fleet_)'
# The Debian package for the target: Depends from dpkg-shlibdeps, ELF machine, lintian.
scripts/cross-package.sh "$arch" "$build" "$sysroot"

bin=$build/diskprobe_exporter
"$triplet-strip" -o "$build/diskprobe_exporter.stripped" "$bin"
printf '%s binary: %d bytes as built (RelWithDebInfo), %d bytes stripped\n' "$arch" \
  "$(stat -c %s "$bin")" "$(stat -c %s "$build/diskprobe_exporter.stripped")"
log=$(mktemp)
"$qemu" -L "$sysroot" "$bin" --web.listen-address=127.0.0.1:0 2>"$log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
addr=""
for i in $(seq 1 100); do
  addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$log" | head -n1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || { cat "$log" >&2; exit 1; }
for i in $(seq 1 100); do curl -sf -o /dev/null "http://$addr/metrics"; done
series=$(curl -sf "http://$addr/metrics" | grep -vc '^#')
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
printf '%s under %s after 100 scrapes: RSS %d KiB (qemu included), %d samples per scrape\n' "$arch" "$qemu" "$rss" "$series"
