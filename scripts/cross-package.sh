#!/usr/bin/env bash
# The Debian package of a cross build (arm64 or armhf), checked: cpack -G DEB with dpkg-shlibdeps
# run against the sysroot's libraries and dpkg database (cmake/CPackCrossShlibdeps.cmake), then
#  - Architecture is the target's; every ELF file in it is for the target machine (and, for armhf,
#    the hard-float ABI), stripped;
#  - Depends, from dpkg-shlibdeps, names the libraries with versions: libc6, libstdc++6,
#    libyaml-cpp0.7, libcrypt1 (the exporter) and libssl3 (the OpenSSL compat
#    libraries in /usr/lib/diskprobe_exporter);
#  - the same package names as the native package's Depends (build/, or $NATIVE_BUILD), printed
#    side by side;
#  - the exporter from the .deb, run under qemu-user, serves HTTPS with basic auth through the
#    packaged OpenSSL compat libraries;
#  - apt, with the sysroot's own state and Debian 12 indexes for the target architecture, can
#    install it on an empty system: every Depends resolves (simulated: no root made);
#  - lintian's findings, printed with their counts (reported, not asserted: as
#    tests/deploy/deb_package.sh does for the native package).
# Called by scripts/cross-test.sh after the unit tests; needs the build, its sysroot (with the
# dpkg database: scripts/cross-dpkg-db.sh) and cpack, dpkg-deb, lintian, file, readelf, qemu-user,
# curl, openssl, htpasswd (apache2-utils; without it, outside CI, TLS only).
#   scripts/cross-package.sh arm64|armhf <build directory> <sysroot>
# The package is left in <build directory>/package.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: cross-package.sh arm64|armhf <build> <sysroot>}
build=$(realpath "${2:?usage: cross-package.sh arm64|armhf <build> <sysroot>}")
sysroot=$(realpath "${3:?usage: cross-package.sh arm64|armhf <build> <sysroot>}")
native=$(realpath -m "${NATIVE_BUILD:-build}")
case "$arch" in
  arm64) triplet=aarch64-linux-gnu; elf='ELF 64-bit LSB .*ARM aarch64'; machine=AArch64; qemu=qemu-aarch64-static ;;
  armhf) triplet=arm-linux-gnueabihf; elf='ELF 32-bit LSB .*ARM, EABI5'; machine=ARM; qemu=qemu-arm-static ;;
  *) echo "unsupported architecture $arch" >&2; exit 2 ;;
esac
for tool in cpack dpkg-deb dpkg-shlibdeps lintian file readelf "$triplet-objdump" "$qemu" curl openssl; do
  command -v "$tool" >/dev/null || { echo "missing $tool: scripts/install-deps.sh cross and test" >&2; exit 1; }
done
source tests/e2e/lib.sh  # check, ok, fail, E2E_WORK (removed on exit), E2E_PIDS (killed on exit)
work=$E2E_WORK

rm -rf "$build/package"
start=$SECONDS
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$build/package" >cpack.log 2>&1) ||
  { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$build"/package/diskprobe-exporter_*_"$arch".deb)
printf '%s package: %s, %d bytes (cpack %d s)\n' "$arch" "$(basename "$deb")" "$(stat -c %s "$deb")" $((SECONDS - start))
depends=$(dpkg-deb -f "$deb" Depends)
echo "$arch Depends: $depends"
check "Architecture: $arch" test "$(dpkg-deb -f "$deb" Architecture)" = "$arch"
# Each library package with a version (dpkg-shlibdeps wrote it from the symbols/shlibs files).
for p in libc6 libstdc++6 libyaml-cpp0.7 libcrypt1 libssl3; do
  re=$(sed 's/[.+]/\\&/g' <<<"$p")
  check "Depends has $p with a version: $(grep -oE "(^|, )$re \([^)]*\)" <<<"$depends" | sed 's/^, //')" \
    grep -qE "(^|, )$re \(>= [^)]+\)" <<<"$depends"
done

# The files: every ELF one for the target.
mkdir "$work/root"
dpkg-deb -x "$deb" "$work/root"
n=0
while IFS= read -r f; do
  desc=$(file -b "$f")
  rel=${f#"$work/root"}
  case "$desc" in ELF*) ;; *) continue ;; esac
  n=$((n + 1))
  echo "  $rel: $desc" | sed -E 's/, BuildID\[[^]]*\]=[0-9a-f]+//'
  check "$rel is $arch ($machine), stripped" bash -c \
    "file -b '$f' | grep -qE '$elf' && file -b '$f' | grep -q ', stripped' &&
     readelf -h '$f' | grep -qE 'Machine: +$machine\$'"
  if [ "$arch" = armhf ]; then
    check "$rel: hard-float ABI (Tag_ABI_VFP_args: VFP registers)" bash -c "readelf -A '$f' | grep -q 'Tag_ABI_VFP_args: VFP registers'"
  fi
done < <(find "$work/root" -type f | sort)
check "ELF files in the package: $n (exporter, bench, libssl.so, libcrypto.so)" test "$n" -ge 4

# The native package's Depends: the same library packages.
names() { tr ',' '\n' | sed -E 's/^ +//; s/ .*//' | grep -v '^$' | sort -u | tr '\n' ' '; }
if [ -e "$native/CPackConfig.cmake" ] && grep -q 'CPACK_DEBIAN_PACKAGE_ARCHITECTURE "amd64"' "$native/CPackConfig.cmake"; then
  (cd "$work" && cpack -G DEB --config "$native/CPackConfig.cmake" -B "$work/native" >native.log 2>&1) ||
    { cat "$work/native.log" >&2; exit 1; }
  ndepends=$(dpkg-deb -f "$work"/native/diskprobe-exporter_*.deb Depends)
  echo "amd64 Depends: $ndepends"
  echo "  $arch packages: $(names <<<"$depends")"
  echo "  amd64 packages: $(names <<<"$ndepends")"
  check "$arch Depends names the same packages as amd64's" test "$(names <<<"$depends")" = "$(names <<<"$ndepends")"
elif [ "${CI:-}" = true ]; then
  fail "no native amd64 build in $native to compare Depends with (make test builds it)"
else
  echo "note: no native amd64 build in $native: Depends not compared"
fi

# Installable on Debian 12 for the target: apt resolves every Depends (the sysroot's apt state:
# an empty dpkg status, the target's indexes; make-sysroot.sh).
apt_dir=$sysroot.apt
if [ -d "$apt_dir/lists" ]; then
  source scripts/sysroot-apt.sh  # the working directory is the repository (cd above)
  sysroot_apt_opts "$arch" "$apt_dir"
  cp "$deb" "$work/"
  if (cd "$work" && apt-get "${apt_opts[@]}" install -s "./$(basename "$deb")") >"$work/apt.txt" 2>&1; then
    inst=$(grep -c '^Inst ' "$work/apt.txt" || true)
    check "apt ($arch, Debian 12 indexes) would install it on an empty system: $inst packages with its dependencies" \
      grep -q "^Inst diskprobe-exporter .*\[$arch\])" "$work/apt.txt"
  else
    fail "apt cannot install it on an empty $arch system:"; sed 's/^/  /' "$work/apt.txt" | tail -20
  fi
else
  echo "note: no apt state in $apt_dir: installability not checked"
fi

# The packaged files at work: the stripped exporter from the .deb, under qemu, serves HTTPS with
# basic auth through the packaged compat libraries (<exe>/../lib/diskprobe_exporter), which link
# the sysroot's libssl3.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
pw=$(openssl rand -hex 8)
{ printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n' "$work/server.crt" "$work/server.key"
  if command -v htpasswd >/dev/null; then
    printf 'basic_auth_users:\n  prometheus: %s\n' "$(htpasswd -nbBC 10 prometheus "$pw" | cut -d: -f2)"
  fi; } >"$work/web-config.yml"
"$qemu" -L "$sysroot" "$work/root/usr/bin/diskprobe_exporter" --web.config.file="$work/web-config.yml" \
  --web.listen-address=127.0.0.1:0 2>"$work/exporter.log" &
E2E_PIDS+=($!)
addr=""
for i in $(seq 1 150); do
  addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$work/exporter.log" | head -n1)
  [ -n "$addr" ] && break
  kill -0 "${E2E_PIDS[-1]}" 2>/dev/null || break
  sleep 0.1
done
code=$(curl -s -o "$work/metrics.txt" -w '%{http_code}' --max-time 20 --cacert "$work/server.crt" -u "prometheus:$pw" \
  "https://$addr/metrics" || true)
if command -v htpasswd >/dev/null; then
  check "the packaged $arch exporter under $qemu: HTTPS + basic auth scrape, 200 (got $code), $(grep -c '^diskprobe_' "$work/metrics.txt" 2>/dev/null || true) diskprobe_ samples" \
    bash -c "[ '$code' = 200 ] && grep -q '^diskprobe_build_info' '$work/metrics.txt'"
  bad=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 --cacert "$work/server.crt" -u "prometheus:wrong" "https://$addr/metrics" || true)
  check "... and 401 with a wrong password (got $bad)" test "$bad" = 401
else
  [ "${CI:-}" = true ] && fail "htpasswd missing (apache2-utils): basic auth not checked"
  check "the packaged $arch exporter under $qemu: HTTPS scrape (no htpasswd: TLS only), 200 (got $code)" test "$code" = 200
fi
[ "$code" = 200 ] || sed 's/^/  /' "$work/exporter.log" >&2

lintian --tag-display-limit 0 "$deb" >"$work/lintian.txt" 2>&1 || true
printf '%s lintian: %d error(s), %d warning(s), %d info\n' "$arch" "$(grep -c '^E:' "$work/lintian.txt" || true)" \
  "$(grep -c '^W:' "$work/lintian.txt" || true)" "$(grep -c '^I:' "$work/lintian.txt" || true)"
sed 's/^/  /' "$work/lintian.txt"

if [ "$FAILURES" -gt 0 ]; then echo "$arch package: $FAILURES check(s) failed" >&2; exit 1; fi
echo "$arch package: all checks passed"
