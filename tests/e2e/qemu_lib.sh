# Shared by the QEMU guest tests (nvme_qemu_e2e.sh, sata_qemu_e2e.sh, sd_cmd56_qemu_e2e.sh):
# Debian's kernels and busybox fetched once into a cache, and the small initramfs each guest boots.
# Sourced after lib.sh (log, E2E_WORK).
QEMU_CACHE=${DISKPROBE_E2E_CACHE:-$HOME/.cache/diskprobe-e2e}

# qemu_skip MESSAGE: exit 77 (skipped), or fail under CI=true, where every test must run.
qemu_skip() {
  if [[ "${CI:-}" == "true" ]]; then echo "FAIL (CI=true): $*" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}

# qemu_amd64_kernel: Debian's current amd64 kernel package (the one linux-image-amd64 depends
# on) and busybox-static, unpacked once into the cache. Sets KPKG (package name), KVER (its
# release), KDIR (the unpacked package: boot/vmlinuz-KVER, lib/modules/KVER) and BUSYBOX.
qemu_amd64_kernel() {
  local cache=$QEMU_CACHE/nvme-qemu
  mkdir -p "$cache"
  KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
  [[ -n "$KPKG" ]] || qemu_skip "no linux-image-amd64 in the apt sources"
  if [[ ! -d "$cache/$KPKG" ]]; then
    log "fetching $KPKG and busybox-static"
    (cd "$cache" && apt-get download "$KPKG" busybox-static >/dev/null 2>&1) || qemu_skip "apt-get download $KPKG failed"
    mkdir -p "$cache/$KPKG" "$cache/busybox"
    dpkg -x "$cache"/"$KPKG"_*.deb "$cache/$KPKG"
    dpkg -x "$cache"/busybox-static_*.deb "$cache/busybox"
  fi
  KDIR="$cache/$KPKG"
  BUSYBOX="$cache/busybox/bin/busybox"
  KVER=${KPKG#linux-image-}
}

# qemu_arm64_kernel DIR: Debian 12's arm64 kernel and busybox-static (through a private apt state
# in the cache: the host's apt knows only its own architecture), unpacked into DIR/k and DIR/bb.
# Sets KVER (the release under DIR/k/lib/modules).
qemu_arm64_kernel() {
  local dir=$1 cache=$QEMU_CACHE/sd-cmd56-qemu
  local a=$cache/apt
  local o=(-o APT::Architecture=arm64 -o APT::Architectures=arm64 -o Dir::State="$a" -o Dir::State::Status="$a/status"
           -o Dir::Cache="$a" -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/nonexistent
           -o Dir::Etc::PreferencesParts=/nonexistent)
  mkdir -p "$cache"
  if ! ls "$cache"/linux-image-*arm64*.deb >/dev/null 2>&1; then
    log "fetching the arm64 kernel and busybox-static (private apt state in $a)"
    mkdir -p "$a/lists/partial" "$a/archives/partial"
    : >"$a/status"
    printf 'deb [arch=arm64] http://deb.debian.org/debian bookworm main\n' >"$a/sources.list"
    apt-get "${o[@]}" update -qq || qemu_skip "apt-get update (arm64) failed"
    local k
    k=$(apt-cache "${o[@]}" depends linux-image-arm64 | awk '/Depends: linux-image-/{print $2; exit}')
    [[ -n "$k" ]] || qemu_skip "no linux-image-arm64 in the arm64 index"
    (cd "$cache" && apt-get "${o[@]}" download "$k:arm64" busybox-static:arm64 >/dev/null 2>&1) ||
      qemu_skip "apt-get download failed"
  fi
  mkdir -p "$dir/k" "$dir/bb"
  dpkg -x "$(ls "$cache"/linux-image-*arm64*.deb | head -n1)" "$dir/k"
  dpkg -x "$(ls "$cache"/busybox-static_*.deb | head -n1)" "$dir/bb"
  KVER=$(ls "$dir/k/lib/modules" | head -n1)
}

# qemu_modules ROOT MODULE_TREE "PATH ...": copies each kernel module (PATH relative to
# MODULE_TREE, without .ko, in load order) to ROOT/lib and lists their names, in that order, in
# ROOT/etc/modules for the guest's init to insmod.
qemu_modules() {
  local root=$1 tree=$2 m
  mkdir -p "$root/lib" "$root/etc"
  for m in $3; do cp "$tree/$m.ko" "$root/lib/"; done
  echo "$3" | tr ' ' '\n' | sed '/^$/d; s|.*/||' >"$root/etc/modules"
}

# qemu_copy_with_libs ROOT FILE DEST: FILE into ROOT/DEST with the shared libraries ldd lists
# for it, at their own paths (the guest runs the host's binaries).
qemu_copy_with_libs() {
  local root=$1 lib
  cp "$2" "$root/$3"
  ldd "$2" | awk '/=> \//{print $3} /^\t\/lib/{print $1}' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

# qemu_initrd ROOT OUT: ROOT as a gzip'd newc cpio archive (the kernel's initramfs format).
qemu_initrd() {
  (cd "$1" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$2"
}
