#!/usr/bin/env bash
# The ARMv6 build (Raspberry Pi 1, Zero, Zero W, CM1; cmake/toolchain-armv6.cmake), checked:
#  - Debian's armel sysroot (scripts/make-sysroot.sh armel) and the static libraries Debian lacks
#    (scripts/armv6-static-deps.sh), then the build with the unit tests;
#  - the unit tests under qemu-arm -cpu arm1176 (CTest's emulator: the Pi 1/Zero core, which
#    faults on any ARMv7 instruction), run the same way as scripts/cross-test.sh runs them;
#  - every executable statically linked, ARM EABI5, Tag_CPU_arch v5TE (readelf -A), no Thumb-2;
#  - before/after: a program built by Debian's armhf compiler dies with SIGILL on that core (and
#    runs on qemu's default core), the exporter runs;
#  - the package diskprobe-exporter-armv6 (Architecture armhf), made from this build with cpack,
#    then scripts/test-deb.sh on it: size, Depends, Provides/Conflicts, lintian, installed into an
#    empty Debian armhf root, serving /metrics under qemu-arm -cpu arm1176.
#   scripts/armv6-test.sh [build directory, default build-armv6]
# The package of the matrix (Debian's hardening flags, no tests) is scripts/build-deb.sh <suite> armv6.
# SYSROOT (default build/sysroot-armel), DISKPROBE_CACHE (test-deb.sh's roots), JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${1:-build-armv6}")  # absolute: cpack runs in another directory
scripts/install-deps.sh armv6
sysroot=${SYSROOT:-build/sysroot-armel}
scripts/make-sysroot.sh armel "$sysroot"
if [ "$(cat "$sysroot/var/lib/dpkg/info/sysroot-path" 2>/dev/null)" != "$(realpath "$sysroot")" ]; then
  scripts/cross-dpkg-db.sh "$sysroot" "$sysroot.apt/archives"
fi
scripts/armv6-static-deps.sh "$sysroot"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# The Debian revision and suite of the package made at the end (the matrix's bookworm one).
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDISKPROBE_BUILD_TESTS=ON "${launcher[@]}" \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv6.cmake -DDISKPROBE_SYSROOT="$(realpath "$sysroot")" \
  -DDISKPROBE_WERROR="${WERROR:-OFF}" -DDISKPROBE_DEB_REVISION=1~deb12 -DDISKPROBE_DEB_DISTRIBUTION=bookworm \
  -DDISKPROBE_SYSTEMD_UNIT_DIR=/lib/systemd/system >/dev/null
start=$SECONDS
cmake --build "$build" -j "${JOBS:-2}"
echo "armv6: built in $((SECONDS - start)) s"

source tests/e2e/lib.sh  # check, ok, fail, E2E_WORK (removed on exit)
work=$E2E_WORK
start=$SECONDS
# (A failure is counted by the check below, so the checks after it still run.)
ctest --test-dir "$build" --output-on-failure -j 2 -E '^(e2e_|deploy_|prometheus_rules|dashboards|fleet_)' | tee "$work/ctest.txt" || true
check "unit tests under qemu-arm -cpu arm1176: $(grep -E 'tests passed|tests failed' "$work/ctest.txt") in $((SECONDS - start)) s" \
  grep -q '100% tests passed' "$work/ctest.txt"

# readelf -A of a file merges the attributes of every object linked into it; libatomic.a carries
# IFUNC alternatives built for ARMv7 (<op>_<size>_1_.o, chosen at run time only on a CPU with
# LDREXB/H/D) beside its ARMv5TE code, so the file says v7. The link map (CMakeLists.txt,
# DISKPROBE_STATIC) names every archive member that went in: all must be v5TE but those.
inputs_by_arch() {  # inputs_by_arch <map>: "<Tag_CPU_arch> <archive>(<member>)" per linked member
  grep -oE '[^ ()]+\.a\([^)]+\.o\)' "$1" | sort -u >"$work/members"
  sed 's/(.*//' "$work/members" | sort -u | while read -r a; do
    { (cd "$build" && readelf -A "$a" 2>/dev/null) || true; } | awk -v a="$a" '/^File: / {f=$2} /Tag_CPU_arch:/ {print $2, f}'
  done | sort -u | awk 'NR == FNR {used[$0] = 1; next} ($2 in used)' "$work/members" -
}
for t in diskprobe_exporter diskprobe_exporter-bench tests/diskprobe_unit_tests; do
  f=$build/$t
  desc=$(file -b "$f" | sed -E 's/, BuildID\[[^]]*\]=[0-9a-f]+//')
  tags=$(readelf -A "$f" | grep -E 'Tag_(CPU_arch|THUMB_ISA_use|FP_arch|ABI_VFP_args):' | sed 's/^ *//' | tr '\n' ' ')
  echo "  $t: $desc"
  echo "    readelf -A: $tags"
  check "$t: static ARM EABI5, soft-float" bash -c \
    "file -b '$f' | grep -q 'ELF 32-bit LSB executable, ARM, EABI5' && file -b '$f' | grep -q 'statically linked' &&
     ! readelf -A '$f' | grep -q 'Tag_ABI_VFP_args: VFP registers'"
  inputs_by_arch "$build/$(basename "$t").map" >"$work/inputs"
  summary=$(awk '{n[$1]++} END {for (k in n) printf "%s %d, ", k, n[k]}' "$work/inputs")
  others=$(awk '$1 != "v5TE" && $2 !~ /libatomic\.a\([a-z]+_[0-9]+_1_\.o\)$/' "$work/inputs")
  echo "    linked archive members by Tag_CPU_arch: ${summary%, }; not v5TE: $(awk '$1 != "v5TE" {sub(/.*\//, "", $2); printf "%s ", $2}' "$work/inputs")"
  check "$t: every linked member is ARMv5TE, except libatomic's ARMv7 IFUNC alternatives${others:+ (also: $others)}" \
    test -z "$others" -a -s "$work/inputs"
done
printf 'armv6 binary: %d bytes as built (RelWithDebInfo), %d bytes stripped\n' "$(stat -c %s "$build/diskprobe_exporter")" \
  "$(arm-linux-gnueabi-strip -o "$work/stripped" "$build/diskprobe_exporter" && stat -c %s "$work/stripped")"

# Before/after on the ARMv6 core. A static program from Debian's armhf compiler (its defaults:
# ARMv7-A, Thumb-2, VFPv3-D16) is "a plain Debian armhf binary" that needs no sysroot.
printf '#include <cstdio>\nint main() { std::puts("hello from armhf"); }\n' >"$work/hello.cpp"
arm-linux-gnueabihf-g++ -static -O2 -o "$work/hello-armhf" "$work/hello.cpp"
echo "  Debian armhf hello: $(readelf -A "$work/hello-armhf" | grep -E 'Tag_CPU_arch:|Tag_THUMB_ISA_use:' | sed 's/^ *//' | tr '\n' ' ')"
rc=0
qemu-arm-static -cpu arm1176 "$work/hello-armhf" >"$work/sigill.txt" 2>&1 || rc=$?
check "Debian armhf hello under qemu-arm -cpu arm1176: SIGILL (exit $rc: $(head -c 100 "$work/sigill.txt" | tr '\n' ' '))" \
  bash -c "[ $rc = 132 ] || grep -q 'signal 4 (Illegal instruction)' '$work/sigill.txt'"
check "... and on qemu-arm's default core it runs: $(qemu-arm-static "$work/hello-armhf" 2>&1)" qemu-arm-static "$work/hello-armhf"
check "the ARMv6 exporter under qemu-arm -cpu arm1176: $(qemu-arm-static -cpu arm1176 "$build/diskprobe_exporter" --version 2>&1 | head -n1)" \
  qemu-arm-static -cpu arm1176 "$build/diskprobe_exporter" --version

# TLS and basic auth with OpenSSL linked in (no compat libraries to dlopen in a static binary).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
pw=$(openssl rand -hex 8)
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prometheus: %s\n' "$work/server.crt" \
  "$work/server.key" "$(htpasswd -nbBC 10 prometheus "$pw" | cut -d: -f2)" >"$work/web-config.yml"
qemu-arm-static -cpu arm1176 "$build/diskprobe_exporter" --web.config.file="$work/web-config.yml" \
  --web.listen-address=127.0.0.1:0 2>"$work/tls.log" &
E2E_PIDS+=($!)
addr=""
for i in $(seq 1 300); do
  addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$work/tls.log" | head -n1)
  [ -n "$addr" ] && break
  sleep 0.1
done
code=$(curl -s -o "$work/tls-metrics.txt" -w '%{http_code}' --max-time 60 --cacert "$work/server.crt" -u "prometheus:$pw" \
  "https://$addr/metrics" || true)
bad=$(curl -s -o /dev/null -w '%{http_code}' --max-time 60 --cacert "$work/server.crt" -u prometheus:wrong "https://$addr/metrics" || true)
check "HTTPS + basic auth under qemu-arm -cpu arm1176: $code with the password ($(grep -c '^diskprobe_' "$work/tls-metrics.txt" 2>/dev/null || true) diskprobe_ samples), $bad with a wrong one" \
  bash -c "[ '$code' = 200 ] && [ '$bad' = 401 ]"
[ "$code" = 200 ] || sed 's/^/  /' "$work/tls.log" >&2
kill "${E2E_PIDS[-1]}" 2>/dev/null || true

# The package, and it on an empty Debian armhf root (scripts/test-deb.sh armv6).
rm -rf "$build/package"
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$build/package" >cpack.log 2>&1) ||
  { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$build"/package/diskprobe-exporter-armv6_*_armhf.deb)
scripts/test-deb.sh bookworm armv6 "$deb" || fail "scripts/test-deb.sh bookworm armv6 $deb"

if [ "$FAILURES" -gt 0 ]; then echo "armv6: $FAILURES check(s) failed" >&2; exit 1; fi
echo "armv6: all checks passed ($deb)"
