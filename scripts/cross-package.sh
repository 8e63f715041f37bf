#!/usr/bin/env bash
# The Debian package of a cross build (arm64 or armhf), checked: cpack -G DEB with dpkg-shlibdeps
# run against the sysroot's libraries and dpkg database (cmake/CPackCrossShlibdeps.cmake), then
#  - Architecture is the target's; every ELF file in it is for the target machine (and, for armhf,
#    the hard-float ABI), stripped;
#  - Depends, from dpkg-shlibdeps, names the libraries with versions: libc6, libstdc++6,
#    libcivetweb1, libyaml-cpp0.7, libcrypt1 (the exporter) and libssl3 (the OpenSSL compat
#    libraries in /usr/lib/diskprobe_exporter);
#  - the same package names as the native package's Depends (build/, or $NATIVE_BUILD), printed
#    side by side;
#  - apt, with the sysroot's own state and Debian 12 indexes for the target architecture, can
#    install it on an empty system: every Depends resolves (simulated: no root made);
#  - lintian's findings, printed with their counts (reported, not asserted: as
#    tests/deploy/deb_package.sh does for the native package).
# Called by scripts/cross-test.sh after the unit tests; needs the build, its sysroot (with the
# dpkg database: scripts/cross-dpkg-db.sh) and cpack, dpkg-deb, lintian, file, readelf.
#   scripts/cross-package.sh arm64|armhf <build directory> <sysroot>
# The package is left in <build directory>/package.
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: cross-package.sh arm64|armhf <build> <sysroot>}
build=$(realpath "${2:?usage: cross-package.sh arm64|armhf <build> <sysroot>}")
sysroot=$(realpath "${3:?usage: cross-package.sh arm64|armhf <build> <sysroot>}")
native=$(realpath -m "${NATIVE_BUILD:-build}")
case "$arch" in
  arm64) triplet=aarch64-linux-gnu; elf='ELF 64-bit LSB .*ARM aarch64'; machine=AArch64 ;;
  armhf) triplet=arm-linux-gnueabihf; elf='ELF 32-bit LSB .*ARM, EABI5'; machine=ARM ;;
  *) echo "unsupported architecture $arch" >&2; exit 2 ;;
esac
for tool in cpack dpkg-deb dpkg-shlibdeps lintian file readelf "$triplet-objdump"; do
  command -v "$tool" >/dev/null || { echo "missing $tool: scripts/install-deps.sh cross and test" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check <description> <command...>
  local what=$1; shift
  if "$@" >/dev/null 2>&1; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}

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
for p in libc6 libstdc++6 libcivetweb1 libyaml-cpp0.7 libcrypt1 libssl3; do
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
  echo "FAIL no native amd64 build in $native to compare Depends with (make test builds it)"; failures=$((failures + 1))
else
  echo "note: no native amd64 build in $native: Depends not compared"
fi

# Installable on Debian 12 for the target: apt resolves every Depends (the sysroot's apt state:
# an empty dpkg status, the target's indexes; make-sysroot.sh).
apt_dir=$sysroot.apt
if [ -d "$apt_dir/lists" ]; then
  apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
            -o "Dir::State::status=$apt_dir/status" -o "Dir::State::Lists=$apt_dir/lists"
            -o "Dir::Cache::archives=$apt_dir/archives" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
            -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
            -o "Dir::Etc::Preferences=/nonexistent" -o "Dir::Etc::PreferencesParts=$apt_dir/etc/preferences.d"
            -o "APT::Install-Recommends=false" -o "Debug::NoLocking=true" -o "APT::Sandbox::User=root")
  cp "$deb" "$work/"
  if (cd "$work" && apt-get "${apt_opts[@]}" install -s "./$(basename "$deb")") >"$work/apt.txt" 2>&1; then
    inst=$(grep -c '^Inst ' "$work/apt.txt" || true)
    check "apt ($arch, Debian 12 indexes) would install it on an empty system: $inst packages with its dependencies" \
      grep -q "^Inst diskprobe-exporter .*\[$arch\])" "$work/apt.txt"
  else
    echo "FAIL apt cannot install it on an empty $arch system:"; sed 's/^/  /' "$work/apt.txt" | tail -20
    failures=$((failures + 1))
  fi
else
  echo "note: no apt state in $apt_dir: installability not checked"
fi

lintian --no-tag-display-limit "$deb" >"$work/lintian.txt" 2>&1 || true
printf '%s lintian: %d error(s), %d warning(s), %d info\n' "$arch" "$(grep -c '^E:' "$work/lintian.txt" || true)" \
  "$(grep -c '^W:' "$work/lintian.txt" || true)" "$(grep -c '^I:' "$work/lintian.txt" || true)"
sed 's/^/  /' "$work/lintian.txt"

if [ "$failures" -gt 0 ]; then echo "$arch package: $failures check(s) failed" >&2; exit 1; fi
echo "$arch package: all checks passed"
