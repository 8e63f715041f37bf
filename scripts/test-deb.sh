#!/usr/bin/env bash
# Checks one package of the build matrix (scripts/build-deb.sh) on a clean system of its suite:
#  - prints name, version, size, Depends, lintian's findings (that suite's lintian: the machine's
#    for bookworm, the build root's for trixie; --pedantic, overrides shipped in the package) and
#    the hardening of every ELF file (hardening-check from devscripts);
#  - amd64: installs it with apt into a clean root of the suite (debootstrap minbase, cached),
#    maintainer scripts included (the diskprobe user, the state directory), and runs the exporter
#    there as that user;
#    arm64/armhf: apt resolves the package's Depends for an empty system of the suite and
#    architecture, the resolved packages and the package are unpacked into an empty root
#    (dpkg -x: no maintainer scripts, which would need binfmt_misc), and the exporter runs from
#    it under qemu-user with only that root's libraries (-L);
#    armv6 (diskprobe-exporter-armv6, Architecture armhf, static): the same on an empty Debian armhf
#    root (the dpkg architecture of Raspberry Pi OS 32-bit), run under qemu-arm -cpu arm1176 (the
#    Pi 1/Zero core); a Debian armhf binary from that root is shown to die there with SIGILL;
#  - a scrape of /metrics answers 200 with diskprobe_build_info.
#   scripts/test-deb.sh <suite> <arch> <package.deb>
# Needs root (chroot). Roots are cached in $DISKPROBE_CACHE (default /var/cache/diskprobe-build).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
suite=${1:?usage: test-deb.sh <suite> <arch> <deb>}
arch=${2:?usage: test-deb.sh <suite> <arch> <deb>}
deb=$(realpath "${3:?usage: test-deb.sh <suite> <arch> <deb>}")
cache=${DISKPROBE_CACHE:-/var/cache/diskprobe-build}
source tests/e2e/lib.sh  # check, ok, fail, E2E_WORK (removed on exit), E2E_PIDS (killed on exit)
work=$E2E_WORK
here=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")

# armv6 is a pseudo-architecture (scripts/build-deb.sh): an armhf package.
debarch=$arch
[ "$arch" = armv6 ] && debarch=armhf
echo "== $suite $arch: $(basename "$deb")"
printf 'Package: %s  Version: %s  Architecture: %s  Size: %d bytes (Installed-Size %s KiB)\n' \
  "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" "$(dpkg-deb -f "$deb" Architecture)" \
  "$(stat -c %s "$deb")" "$(dpkg-deb -f "$deb" Installed-Size)"
echo "Depends: $(dpkg-deb -f "$deb" Depends)"
check "Architecture is $debarch" test "$(dpkg-deb -f "$deb" Architecture)" = "$debarch"
if [ "$arch" = armv6 ]; then
  echo "Provides: $(dpkg-deb -f "$deb" Provides)  Conflicts: $(dpkg-deb -f "$deb" Conflicts)  Replaces: $(dpkg-deb -f "$deb" Replaces)"
  check "armv6: Depends is adduser alone (a static executable)" test "$(dpkg-deb -f "$deb" Depends)" = adduser
  check "armv6: Provides, Conflicts and Replaces diskprobe-exporter" bash -c \
    "dpkg-deb -f '$deb' Provides | grep -q '^diskprobe-exporter (= ' && [ \"\$(dpkg-deb -f '$deb' Conflicts)\" = diskprobe-exporter ] &&
     [ \"\$(dpkg-deb -f '$deb' Replaces)\" = diskprobe-exporter ]"
fi
case "$suite" in bookworm) want=deb12 ;; trixie) want=deb13 ;; *) want=unknown ;; esac
check "version ends in ~$want" bash -c "dpkg-deb -f '$deb' Version | grep -q '~$want\$'"

# lintian of the suite.
lint=(lintian --pedantic --tag-display-limit 0)
if [ "$here" = "$suite" ]; then
  "${lint[@]}" "$deb" >"$work/lintian.txt" 2>&1 || true
else
  root=$cache/buildroot-$suite
  mkdir -p "$root/tmp/lint"
  cp "$deb" "$root/tmp/lint/"
  chroot "$root" env -i PATH=/usr/bin:/bin LANG=C.UTF-8 "${lint[@]}" "/tmp/lint/$(basename "$deb")" >"$work/lintian.txt" 2>&1 || true
  rm -rf "$root/tmp/lint"
fi
printf 'lintian (%s, pedantic): %d error(s), %d warning(s), %d info, %d pedantic, %d overridden\n' "$suite" \
  "$(grep -c '^E:' "$work/lintian.txt" || true)" "$(grep -c '^W:' "$work/lintian.txt" || true)" \
  "$(grep -c '^I:' "$work/lintian.txt" || true)" "$(grep -c '^P:' "$work/lintian.txt" || true)" \
  "$(grep -c '^O:' "$work/lintian.txt" || true)"
sed 's/^/  /' "$work/lintian.txt"
check "lintian: no error, no warning" bash -c "! grep -qE '^(E|W):' '$work/lintian.txt'"

# Hardening of the ELF files.
mkdir "$work/x"
dpkg-deb -x "$deb" "$work/x"
if command -v hardening-check >/dev/null; then
  while IFS= read -r f; do
    file -b "$f" | grep -q '^ELF' || continue
    # (objdump cannot disassemble a foreign architecture: only the stack clash line needs it.)
    hardening-check "$f" >"$work/hardening.txt" 2>/dev/null || true
    sed 's/^/  /' "$work/hardening.txt"
    out=$work/hardening.txt
    # Every ELF file: RELRO and BIND_NOW. The executables also: PIE, stack protector, no
    # unprotected call of a function FORTIFY_SOURCE covers ("unknown, no protectable libc
    # functions used" is no failure). The OpenSSL compat libraries are forwarders, in which the
    # compiler may find no function that needs a canary.
    [ "$arch" = armv6 ] || check "${f#"$work/x"}: RELRO, BIND_NOW" bash -c \
      "! grep -E 'Read-only relocations: no|Immediate binding: no' '$out' >/dev/null"
    case "$arch:$f" in
      armv6:*/bin/*|armv6:*-bench)
        # A stripped static executable: no dynamic section (so no BIND_NOW), no symbols for
        # hardening-check to find the stack protector or fortified calls by; Debian's armel glibc
        # has no static PIE (no rcrt1.o). What can be checked: static, RELRO.
        check "${f#"$work/x"}: statically linked, RELRO (static: no PIE, no BIND_NOW on armel)" bash -c \
          "file -b '$f' | grep -q 'statically linked' && grep -q 'Read-only relocations: yes' '$out'" ;;
      *:*/bin/*|*:*-bench)
        check "${f#"$work/x"}: PIE, stack protector, fortify" bash -c \
          "grep -q 'Position Independent Executable: yes' '$out' && grep -q 'Stack protected: yes' '$out' &&
           ! grep -q 'Fortify Source functions: no' '$out'" ;;
    esac
  done < <(find "$work/x" -type f | sort)
else
  [ "${CI:-}" = true ] && fail "hardening-check missing (devscripts)"
  echo "note: no hardening-check (devscripts); readelf:"
  readelf -d "$work/x/usr/bin/diskprobe_exporter" | grep -E 'FLAGS|BIND_NOW' | sed 's/^/  /'
fi

serve() {  # serve <log> <command...>: start the exporter, scrape /metrics
  local log=$1
  shift
  "$@" --web.listen-address=127.0.0.1:0 2>"$log" &
  E2E_PIDS+=($!)
  local addr=""
  for i in $(seq 1 300); do
    addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$log" | head -n1)
    [ -n "$addr" ] && break
    kill -0 "${E2E_PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  local code
  code=$(curl -s -o "$work/metrics.txt" -w '%{http_code}' --max-time 30 "http://$addr/metrics" || true)
  check "$suite $arch: the installed exporter serves /metrics on $addr: $code, $(grep -c '^diskprobe_' "$work/metrics.txt" 2>/dev/null || true) diskprobe_ samples, $(grep '^diskprobe_build_info' "$work/metrics.txt" 2>/dev/null | head -n1)" \
    bash -c "[ '$code' = 200 ] && grep -q '^diskprobe_build_info' '$work/metrics.txt'"
  [ "$code" = 200 ] || sed 's/^/  /' "$log" >&2
  kill "${E2E_PIDS[-1]}" 2>/dev/null || true
  wait "${E2E_PIDS[-1]}" 2>/dev/null || true
}

root=$work/root
if [ "$arch" = amd64 ]; then
  clean=$cache/root-$suite-amd64
  if [ ! -x "$clean/bin/sh" ]; then
    rm -rf "$clean.tmp"
    debootstrap --variant=minbase "$suite" "$clean.tmp" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    mv "$clean.tmp" "$clean"
  fi
  cp -a "$clean" "$root"
  mounts=()
  umount_all() { local m; for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
  safe_cleanup() {
    umount_all
    # Never rm -rf through a mount that is still there (it would be /dev, /sys or /proc).
    if grep -q " $root/" /proc/self/mounts; then echo "mounts remain under $root: not removing $work" >&2; return; fi
    cleanup
  }
  trap safe_cleanup EXIT
  for m in proc sys dev; do mount --rbind "/$m" "$root/$m"; mount --make-rslave "$root/$m"; mounts=("$root/$m" "${mounts[@]}"); done
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  cp "$deb" "$root/tmp/"
  if chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb")" >"$work/apt.log" 2>&1; then
    ok "apt installed it into a clean $suite root: $(grep -c '^Setting up' "$work/apt.log") packages set up"
  else
    fail "apt install in a clean $suite root"; tail -20 "$work/apt.log" >&2; exit 1
  fi
  check "the diskprobe user exists: $(chroot "$root" id diskprobe 2>&1)" chroot "$root" id diskprobe
  check "/etc/default/diskprobe_exporter is a conffile" bash -c "chroot '$root' dpkg-query -W -f='\${Conffiles}' diskprobe-exporter | grep -q /etc/default/diskprobe_exporter"
  serve "$work/exporter.log" chroot --userspec=diskprobe:diskprobe "$root" /usr/bin/diskprobe_exporter \
    --config.file=/etc/diskprobe_exporter/config.yml
else
  qemu=(qemu-arm-static)
  case "$arch" in
    arm64) qemu=(qemu-aarch64-static) ;;
    armhf) ;;
    armv6) qemu=(qemu-arm-static -cpu arm1176) ;;
    *) echo "bad arch $arch" >&2; exit 2 ;;
  esac
  arch=$debarch
  apt_dir=$cache/aptstate-$suite-$arch
  mkdir -p "$apt_dir"/{lists/partial,archives/partial,etc/preferences.d}
  : >"$apt_dir/status"
  mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
  printf 'deb [arch=%s] %s %s main\ndeb [arch=%s] %s %s-updates main\ndeb [arch=%s] http://deb.debian.org/debian-security %s-security main\n' \
    "$arch" "$mirror" "$suite" "$arch" "$mirror" "$suite" "$arch" "$suite" >"$apt_dir/etc/sources.list"
  source scripts/sysroot-apt.sh
  sysroot_apt_opts "$arch" "$apt_dir"
  [ -n "$(ls "$apt_dir/lists" 2>/dev/null | grep -v partial)" ] || apt-get "${apt_opts[@]}" update -qq
  rm -f "$apt_dir"/archives/*.deb
  cp "$deb" "$work/"
  (cd "$work" && apt-get "${apt_opts[@]}" install -y -qq --download-only "./$(basename "$deb")") >"$work/apt.log" 2>&1 ||
    { fail "apt cannot resolve its Depends on an empty $suite $arch system"; tail -20 "$work/apt.log" >&2; exit 1; }
  mkdir "$root"
  n=0
  for d in "$apt_dir"/archives/*.deb "$deb"; do dpkg-deb -x "$d" "$root"; n=$((n + 1)); done
  for d in lib bin sbin; do [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"; done
  ok "apt resolved its Depends on an empty $suite $arch system: $n packages unpacked into an empty root"
  if [ "${#qemu[@]}" -gt 1 ]; then
    # The before/after on the ARMv6 core: Debian armhf's own code (its dynamic loader and passwd,
    # from this root) is ARMv7 with Thumb-2 and dies there, with SIGILL or, where an ARMv6 core
    # reads a 32-bit Thumb-2 instruction as two 16-bit ones and jumps astray, SIGSEGV (trixie's
    # loader); the same program runs on an ARMv7 core (cortex-a7), so the core is the cause. The
    # package's exporter runs on the ARMv6 core.
    rc=0 rc7=0
    "${qemu[@]}" -L "$root" "$root/usr/bin/passwd" --help >"$work/sigill.log" 2>&1 || rc=$?
    qemu-arm-static -cpu cortex-a7 -L "$root" "$root/usr/bin/passwd" --help >"$work/armv7.log" 2>&1 || rc7=$?
    check "Debian armhf's passwd under ${qemu[*]}: killed (exit $rc: $(head -c 120 "$work/sigill.log" | tr '\n' ' ')), under -cpu cortex-a7 exit $rc7" \
      bash -c "{ [ $rc = 132 ] || [ $rc = 139 ] || grep -qE 'signal (4|11) ' '$work/sigill.log'; } && [ $rc7 = 0 ]"
    check "the packaged exporter under ${qemu[*]}: $("${qemu[@]}" "$root/usr/bin/diskprobe_exporter" --version 2>&1 | head -n1)" \
      "${qemu[@]}" "$root/usr/bin/diskprobe_exporter" --version
  fi
  serve "$work/exporter.log" "${qemu[@]}" -L "$root" "$root/usr/bin/diskprobe_exporter" \
    --config.file="$root/etc/diskprobe_exporter/config.yml"
fi

if [ "$FAILURES" -gt 0 ]; then echo "$suite $arch: $FAILURES check(s) failed" >&2; exit 1; fi
echo "$suite $arch: all checks passed"
