#!/usr/bin/env bash
# Installs what diskprobe_exporter needs from Debian packages, and only what is missing.
# Idempotent: a second run installs nothing. Runs as root, or through sudo.
#   scripts/install-deps.sh build   # compiler, CMake, libraries
#   scripts/install-deps.sh test    # build + GoogleTest, Prometheus/promtool, node_exporter (bench peer), curl, python3,
#                                   # emulated card (nbdkit, nbdfuse, fuse3, mkfs.ext4) and fio (bench peer)
#   scripts/install-deps.sh cross   # build + cross compilers for arm64/armhf and qemu-user-static
#   scripts/install-deps.sh fuzz    # build + clang 14 and libFuzzer (make fuzz; the default build stays g++)
#   scripts/install-deps.sh qemu    # build + QEMU (x86 system), nvme-cli and smartmontools for make test-nvme-qemu
#                                   # and make test-sata-qemu
#   scripts/install-deps.sh pi-qemu # armv6 + QEMU (arm system), mmdebstrap for make test-pi-qemu
#   scripts/install-deps.sh armv6   # cross + Debian's armel compiler, for the static ARMv6 build (make test-armv6)
#   scripts/install-deps.sh matrix  # cross + armv6 + what make matrix / make repo need (debootstrap, hardening-check,
#                                   # apt-ftparchive, gpg)
set -euo pipefail

# No libcivetweb-dev: the HTTP server is the exporter's own (prometheus-cpp-dev still depends on it).
build_pkgs=(g++ cmake ninja-build pkg-config make
            prometheus-cpp-dev libyaml-cpp-dev libcli11-dev libcrypt-dev
            nlohmann-json3-dev libssl-dev libboost-dev liburing-dev libdeflate-dev)
test_pkgs=(googletest libgtest-dev libgmock-dev prometheus prometheus-node-exporter curl procps jq python3
           nbdkit libnbd-bin fuse3 fio e2fsprogs socat apache2-utils openssl debootstrap lintian
           prometheus-pushgateway python3-jsonschema
           man-db zlib1g-dev)  # man-db: cli_man_e2e.sh formats the man page as lintian does; zlib: gzip_test inflates
# Fleet deployment tests (one per way of installing on many Pis): Ansible role lint and chroot run, compose file check,
# Containerfile build (buildah, rootful, vfs storage) and run (podman with runc: crun cannot start
# containers in some sandboxes; getcap from libcap2-bin), Kubernetes manifests (schemas from npm),
# systemd-nspawn (systemd-container) boots a root for the Ansible role's start/reload checks.
deploy_pkgs=(ansible ansible-lint docker-compose buildah podman runc libcap2-bin systemd-container)
# This machine kind ships Node.js 20 and npm outside dpkg; Debian's npm only where there is none.
command -v npm >/dev/null || deploy_pkgs+=(npm)

# Cross builds (scripts/cross-test.sh): compilers and qemu-user; the target libraries come from a
# sysroot (scripts/make-sysroot.sh), never from foreign -dev packages in the machine root. lintian,
# htpasswd and curl: scripts/cross-package.sh lints the .deb and serves HTTPS from it under qemu.
cross_pkgs=(crossbuild-essential-arm64 crossbuild-essential-armhf qemu-user-static lintian apache2-utils curl)
# The ARMv6 build (scripts/armv6-test.sh): Debian's armel compiler (ARMv5TE code, runs on ARMv6),
# dpkg-dev for dpkg-source (scripts/armv6-static-deps.sh builds prometheus-cpp from its Debian
# source package), devscripts for test-deb.sh's hardening-check, file for the ELF checks.
armv6_pkgs=("${cross_pkgs[@]}" crossbuild-essential-armel dpkg-dev devscripts file)
# Fuzzing (make fuzz, tests/fuzz/README.md): clang with libFuzzer and the sanitizer runtimes
# (libclang-rt-14-dev, only recommended by clang-14), llvm-symbolizer (llvm-14) for stack traces.
fuzz_pkgs=(clang-14 libclang-rt-14-dev llvm-14)
# The guest tests. NVMe (tests/e2e/nvme_qemu_e2e.sh): QEMU's emulated NVMe controller, nvme-cli as
# the reference; the guest's kernel and busybox are fetched with apt-get download. SD CMD56
# (tests/e2e/sd_cmd56_qemu_e2e.sh): QEMU's raspi3b, a static arm64 probe (cross gcc), a
# partitioned card image (sfdisk), the initramfs (cpio). SATA (tests/e2e/sata_qemu_e2e.sh):
# smartmontools' smartctl, which the exporter runs in the guest and which is the reference.
qemu_pkgs=(qemu-system-x86 qemu-system-arm gcc-aarch64-linux-gnu fdisk cpio nvme-cli smartmontools python3)
# The emulated Pi test (tests/e2e/pi_qemu_e2e.sh, scripts/pi-image.sh): qemu-system-aarch64 and
# qemu-img, the arm64 root made by mmdebstrap (arch-test: which architectures run here) with its
# maintainer scripts under qemu-user, sfdisk and mkfs.ext4 for the card, cpio for the initramfs,
# fdtput (device-tree-compiler) for the dtb; the .deb from the package matrix (the armel compiler
# of the ARMv6 build for the Pi Zero's package), Prometheus on the host scraping the guest.
pi_qemu_pkgs=("${armv6_pkgs[@]}" qemu-system-arm qemu-utils mmdebstrap arch-test fdisk e2fsprogs cpio kmod
              python3 debootstrap devscripts apt-utils file device-tree-compiler prometheus)
# The package matrix and the apt repository (make matrix, make repo, make test-repo; docs/packaging.md):
# build roots and clean roots of each suite (debootstrap), hardening-check (devscripts), the
# repository's indexes (apt-ftparchive in apt-utils) and signature (gpg), nspawn to boot a root.
matrix_pkgs=("${armv6_pkgs[@]}" debootstrap devscripts apt-utils gpg systemd-container python3 file)
want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  test) want+=("${test_pkgs[@]}" "${deploy_pkgs[@]}") ;;
  cross) want+=("${cross_pkgs[@]}") ;;
  fuzz) want+=("${fuzz_pkgs[@]}") ;;
  qemu) want+=("${qemu_pkgs[@]}") ;;
  pi-qemu) want+=("${pi_qemu_pkgs[@]}") ;;
  armv6) want+=("${armv6_pkgs[@]}") ;;
  matrix) want+=("${matrix_pkgs[@]}") ;;
  *) echo "usage: $0 [build|test|cross|fuzz|qemu|pi-qemu|armv6|matrix]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Debian's prometheus packages try to start their services; on machines without a running
# init that fails the install, so forbid service starts for the duration of the install.
policy=/usr/sbin/policy-rc.d
made_policy=
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy" && made_policy=1
fi
trap '[ -n "$made_policy" ] && $SUDO rm -f "$policy"' EXIT
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
