#!/usr/bin/env bash
# A build root for one Debian suite (scripts/build-deb.sh builds there when this machine runs
# another suite): debootstrap minbase, then the suite's compiler, CMake, Ninja, dpkg-dev, lintian, git,
# the cross compilers for arm64, armhf and armel (the static ARMv6 build), and the -dev packages
# of scripts/install-deps.sh build for amd64.
# Returns at once when the root has them (stamp file). Needs root.
#   scripts/make-build-root.sh trixie /var/cache/diskprobe-build/buildroot-trixie
set -euo pipefail
suite=${1:?usage: make-build-root.sh <suite> <directory>}
root=$(realpath -m "${2:?usage: make-build-root.sh <suite> <directory>}")
pkgs=(g++ cmake ninja-build pkg-config make dpkg-dev file gzip ca-certificates lintian git
      crossbuild-essential-arm64 crossbuild-essential-armhf crossbuild-essential-armel
      prometheus-cpp-dev libyaml-cpp-dev libcli11-dev libcrypt-dev nlohmann-json3-dev libssl-dev libboost-dev
      liburing-dev libdeflate-dev zlib1g-dev libcurl4-openssl-dev)
mkdir -p "$(dirname "$root")"  # a fresh DISKPROBE_CACHE: debootstrap's log goes beside the root
stamp=$root/.diskprobe-build-root
[ "$(cat "$stamp" 2>/dev/null)" = "$suite ${pkgs[*]}" ] && exit 0
if [ ! -x "$root/bin/sh" ]; then
  echo "make-build-root: debootstrap $suite into $root" >&2
  rm -rf "$root.tmp"
  debootstrap --variant=minbase "$suite" "$root.tmp" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$root.log" 2>&1 ||
    { tail -20 "$root.log" >&2; exit 1; }
  mv "$root.tmp" "$root"
fi
echo "make-build-root: installing ${pkgs[*]}" >&2
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"' sh "${pkgs[@]}" >>"$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; exit 1; }
echo "$suite ${pkgs[*]}" >"$stamp"
