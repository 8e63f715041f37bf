#!/usr/bin/env bash
# The apt repository of scripts/make-repo.sh, as a Pi would use it: served by a static web server
# (python3 -m http.server) on 127.0.0.1, then for each suite (bookworm, trixie) a clean root of
# that suite (debootstrap minbase, amd64, plus systemd to boot it and curl for the commands) runs
# the README's three commands (key, source, apt install), and the root boots with systemd-nspawn:
# the package's service must be active and serve /metrics.
# Then, for each suite, the ARMv6 package as Raspberry Pi OS 32-bit on a Pi Zero/1 gets it: both
# diskprobe-exporter and diskprobe-exporter-armv6 are in the suite's binary-armhf index, apt for
# an empty armhf system of the suite installs (resolves and fetches) diskprobe-exporter-armv6
# from the repository, and the exporter unpacked from it serves /metrics under
# qemu-arm -cpu arm1176 (the Pi 1/Zero core).
#   scripts/test-repo.sh <repository directory> [suite...]
#   TEST_REPO_ARCH=arm64 scripts/test-repo.sh ...   the arm64 (or armhf, armv6) packages instead, below
#   TEST_REPO_ARMV6=0 scripts/test-repo.sh ...      without the ARMv6 part
# Needs root, systemd-nspawn (systemd-container), debootstrap and the Debian mirror. Clean roots
# are cached in $DISKPROBE_CACHE (default /var/cache/diskprobe-build).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
repo=$(realpath "${1:?usage: test-repo.sh <repository directory> [suite...]}")
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie)
cache=${DISKPROBE_CACHE:-/var/cache/diskprobe-build}
source tests/e2e/lib.sh  # check, ok, fail, free_port, E2E_WORK, E2E_PIDS
source tests/e2e/nspawn_lib.sh
work=$E2E_WORK
for tool in systemd-nspawn debootstrap python3 nsenter; do
  command -v "$tool" >/dev/null || { echo "missing $tool: scripts/install-deps.sh matrix" >&2; exit 1; }
done

port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$repo" "$port" >"$work/http.log" 2>&1 &
E2E_PIDS+=($!)
for i in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/diskprobe-archive-keyring.gpg" && break; sleep 0.1; done
url=http://127.0.0.1:$port
echo "repository $repo served on $url"

mounts=()
roots=()
umount_all() { local m; for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; mounts=(); }
safe_cleanup() {
  local p r
  for p in "${NSPAWN_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${NSPAWN_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  umount_all
  for r in "${roots[@]}"; do
    if grep -q " $r/" /proc/self/mounts; then echo "mounts remain under $r: not removing $work" >&2; return; fi
  done
  cleanup
}
NSPAWN_PIDS=()
trap safe_cleanup EXIT

# arm64/armhf (TEST_REPO_ARCH): apt on this machine, with its own state for an empty system of
# that suite and architecture, the README's source line and key, installs (downloads and
# resolves) from the repository; the packages are unpacked into an empty root and the exporter
# runs from it under qemu-user. Maintainer scripts and the unit need binfmt_misc, which this
# test does not register on a shared machine: amd64 covers them.
# armv6: diskprobe-exporter-armv6 for armhf, run on the ARM1176 core.
test_foreign() {
  local suite=$1 arch=$2 qemu apt_dir root n=0 d pkg=diskprobe-exporter name=$2
  root=$work/root-$suite-$name
  case "$arch" in
    arm64) qemu=(qemu-aarch64-static) ;;
    armhf) qemu=(qemu-arm-static) ;;
    armv6) qemu=(qemu-arm-static -cpu arm1176) pkg=diskprobe-exporter-armv6 arch=armhf ;;
  esac
  if [ "$name" = armv6 ]; then
    local idx=$repo/dists/$suite/main/binary-armhf/Packages
    check "$suite armhf index: $(grep '^Package:' "$idx" 2>/dev/null | sed 's/Package: //' | sort | tr '\n' ' ')(both builds under one sources.list line)" \
      bash -c "grep -qx 'Package: diskprobe-exporter-armv6' '$idx' && grep -qx 'Package: diskprobe-exporter' '$idx'"
  fi
  apt_dir=$work/apt-$suite-$arch
  mkdir -p "$apt_dir"/{lists/partial,archives/partial,etc/preferences.d} "$root"
  : >"$apt_dir/status"
  curl -fsSL "$url/diskprobe-archive-keyring.gpg" -o "$apt_dir/diskprobe.gpg"
  { printf 'deb [arch=%s] http://deb.debian.org/debian %s main\n' "$arch" "$suite"
    printf 'deb [arch=%s] http://deb.debian.org/debian-security %s-security main\n' "$arch" "$suite"
    printf 'deb [arch=%s signed-by=%s] %s %s main\n' "$arch" "$apt_dir/diskprobe.gpg" "$url" "$suite"; } >"$apt_dir/etc/sources.list"
  source scripts/sysroot-apt.sh
  sysroot_apt_opts "$arch" "$apt_dir"
  if apt-get "${apt_opts[@]}" update >"$work/apt-$suite-$arch.log" 2>&1 &&
     apt-get "${apt_opts[@]}" install -y --download-only "$pkg" >>"$work/apt-$suite-$arch.log" 2>&1; then
    ok "$suite $name: apt (empty $suite $arch system) resolved and fetched $(ls "$apt_dir"/archives/"$pkg"_*.deb | xargs -n1 basename) from $url with $(ls "$apt_dir"/archives/*.deb | wc -l) packages"
    grep -E "127\.0\.0\.1" "$work/apt-$suite-$arch.log" | sed 's/^/  /'
  else
    fail "$suite $name: apt install $pkg from the repository"; tail -20 "$work/apt-$suite-$arch.log" >&2; return
  fi
  check "$suite $arch: the repository's signature was checked" bash -c "! grep -qiE 'not signed|NO_PUBKEY|insecure' '$work/apt-$suite-$arch.log'"
  for d in "$apt_dir"/archives/*.deb; do dpkg-deb -x "$d" "$root"; n=$((n + 1)); done
  for d in lib bin sbin; do [ -e "$root/$d" ] || ln -s "usr/$d" "$root/$d"; done
  "${qemu[@]}" -L "$root" "$root/usr/bin/diskprobe_exporter" --config.file="$root/etc/diskprobe_exporter/config.yml" \
    --web.listen-address=127.0.0.1:0 2>"$work/exporter-$suite-$arch.log" &
  E2E_PIDS+=($!)
  local addr="" code
  for i in $(seq 1 300); do
    addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$work/exporter-$suite-$arch.log" | head -n1)
    [ -n "$addr" ] && break
    kill -0 "${E2E_PIDS[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  code=$(curl -s -o "$work/metrics-$suite-$arch.txt" -w '%{http_code}' --max-time 30 "http://$addr/metrics" || true)
  check "$suite $name: the installed exporter under ${qemu[*]} serves /metrics: $code, $(grep '^diskprobe_build_info' "$work/metrics-$suite-$arch.txt" 2>/dev/null)" \
    bash -c "[ '$code' = 200 ] && grep -q '^diskprobe_build_info' '$work/metrics-$suite-$arch.txt'"
  kill "${E2E_PIDS[-1]}" 2>/dev/null || true
}

for suite in "${suites[@]}"; do
  if [ "${TEST_REPO_ARCH:-amd64}" != amd64 ]; then
    log "$suite ${TEST_REPO_ARCH}: apt from the repository for an empty system, run under qemu"
    test_foreign "$suite" "$TEST_REPO_ARCH"
    continue
  fi
  log "$suite: clean root"
  base=$cache/root-$suite-amd64-systemd
  if [ ! -x "$base/bin/systemctl" ]; then
    clean=$cache/root-$suite-amd64
    if [ ! -x "$clean/bin/sh" ]; then
      debootstrap --variant=minbase "$suite" "$clean.tmp" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log" >&2; exit 1; }
      mv "$clean.tmp" "$clean"
    fi
    rm -rf "$base.tmp"
    cp -a "$clean" "$base.tmp"
    cp /etc/resolv.conf "$base.tmp/etc/resolv.conf"
    # What a Raspberry Pi OS Lite image has and minbase lacks: systemd as init, curl, CA certificates.
    chroot "$base.tmp" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
      sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus curl ca-certificates' \
      >"$work/base.log" 2>&1 || { tail -20 "$work/base.log" >&2; exit 1; }
    mv "$base.tmp" "$base"
  fi
  root=$work/root-$suite
  roots+=("$root")
  cp -a "$base" "$root"
  for m in proc sys dev; do mount --rbind "/$m" "$root/$m"; mount --make-rslave "$root/$m"; mounts=("$root/$m" "${mounts[@]}"); done
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # No service starts inside the chroot (no systemd running there); the boot below starts it.
  printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
  chmod +x "$root/usr/sbin/policy-rc.d"

  log "$suite: the README's commands, with REPO=$url"
  # The commands of README.md ("Install on a Raspberry Pi"), as written there, run as root: "sudo "
  # dropped (no sudo in the root), REPO set to the server above.
  { echo "set -ex"
    awk '/^## Install on a Raspberry Pi/ { f = 1 } f && /^```sh/ { b = 1; next } b && /^```/ { exit } b' "$src/README.md" |
      sed -e 's/sudo //g' -e "s|^REPO=.*|REPO=$url|"
  } >"$root/tmp/add-repo.sh"
  check "$suite: README has the commands ($(grep -vc '^set' "$root/tmp/add-repo.sh") lines)" grep -q 'apt-get install' "$root/tmp/add-repo.sh"
  if chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh /tmp/add-repo.sh >"$work/apt-$suite.log" 2>&1; then
    ok "$suite: apt installed $(chroot "$root" dpkg-query -W -f='${Package} ${Version} ${Architecture}' diskprobe-exporter) from $url"
    grep -E "^(Get|Hit):.*127\.0\.0\.1|^Setting up diskprobe" "$work/apt-$suite.log" | sed 's/^/  /'
  else
    fail "$suite: apt install from the repository"; tail -30 "$work/apt-$suite.log" >&2; continue
  fi
  check "$suite: the repository's signature was checked (no [trusted=yes], no unsigned warning)" \
    bash -c "! grep -qiE 'not signed|NO_PUBKEY|insecure' '$work/apt-$suite.log'"
  rm -f "$root/usr/sbin/policy-rc.d" "$root/tmp/add-repo.sh"
  umount_all

  log "$suite: boot the root (systemd-nspawn), the service starts"
  machine=diskprobe-repo-$suite-$$
  # CAP_SYSLOG and /dev/kmsg: the unit grants CAP_SYSLOG, which must be in the container's
  # bounding set (nspawn leaves it out by default).
  systemd-nspawn -q --register=no --keep-unit --private-network --machine="$machine" -D "$root" \
    --capability=CAP_SYSLOG --bind=/dev/kmsg --boot -- systemd.firstboot=off >"$work/nspawn-$suite.log" 2>&1 &
  NSPAWN_PIDS+=($!)
  leader=$(nspawn_leader "${NSPAWN_PIDS[-1]}")
  [ -n "$leader" ] || { tail -20 "$work/nspawn-$suite.log" >&2; fail "$suite: the container did not start systemd"; continue; }
  state=$(nspawn_wait_running "$leader") || true
  check "$suite: booted (is-system-running: $state)" bash -c "[ '$state' = running ] || [ '$state' = degraded ]"
  active=
  for i in $(seq 1 100); do
    active=$(nspawn_ct "$leader" systemctl is-active diskprobe_exporter.service 2>/dev/null || true)
    [ "$active" = active ] && break
    sleep 0.2
  done
  code=
  for i in $(seq 1 50); do
    code=$(nspawn_ct "$leader" curl -s -o /tmp/metrics.txt -w '%{http_code}' --max-time 5 http://127.0.0.1:29100/metrics || true)
    [ "$code" = 200 ] && break
    sleep 0.2
  done
  info=$(nspawn_ct "$leader" sh -c 'grep "^diskprobe_build_info" /tmp/metrics.txt' 2>/dev/null || true)
  check "$suite: diskprobe_exporter.service $active (enabled: $(nspawn_ct "$leader" systemctl is-enabled diskprobe_exporter.service 2>/dev/null || true)), /metrics on :29100 $code: $info" \
    bash -c "[ '$active' = active ] && [ '$code' = 200 ] && [ -n '$info' ]"
  [ "$active" = active ] || nspawn_ct "$leader" journalctl -u diskprobe_exporter.service --no-pager 2>/dev/null | tail -20 >&2
  kill "${NSPAWN_PIDS[-1]}" 2>/dev/null || true
  wait "${NSPAWN_PIDS[-1]}" 2>/dev/null || true
done

if [ "${TEST_REPO_ARCH:-amd64}" = amd64 ] && [ "${TEST_REPO_ARMV6:-1}" != 0 ]; then
  for suite in "${suites[@]}"; do
    log "$suite armv6: diskprobe-exporter-armv6 from the repository for an empty armhf system, run on the ARM1176"
    test_foreign "$suite" armv6
  done
fi

if [ "$FAILURES" -gt 0 ]; then echo "repository test: $FAILURES check(s) failed" >&2; exit 1; fi
echo "repository test: all checks passed (${suites[*]})"
