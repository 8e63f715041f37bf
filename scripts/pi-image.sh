#!/usr/bin/env bash
# An SD card image of a Raspberry Pi board for QEMU, made from Debian's packages only:
#   scripts/pi-image.sh BOARD [output directory]      (PI_SUITE: bookworm or trixie; default: the board's)
# The boards are the rows of scripts/pi-boards.tsv: pi3b (QEMU raspi3b, BCM2837, Cortex-A53):
# Debian arm64, linux-image-arm64, the diskprobe-exporter arm64 package; pi0 (QEMU raspi0,
# BCM2835, ARM1176): Debian armel (ARMv5TE user space, which runs on ARMv6), linux-image-rpi
# (Debian's kernel for the BCM2835 boards), and diskprobe-exporter-armv6, the package Raspberry
# Pi OS 32-bit installs on a Zero (Architecture armhf, static: dpkg takes it in the armel root
# with armhf added as a foreign architecture).
# Output directory (default ${DISKPROBE_PI_CACHE:-/var/cache/diskprobe-pi}/<board>-<suite>):
#   card.img   2 GiB (QEMU's SD card wants a power of two), MBR, partition 1 ext4 = the root:
#              Debian <suite> <arch> (mmdebstrap, minbase + systemd-sysv, udev, kmod, iproute2,
#              fio for the test's reference measurements, e2fsprogs, the .deb's Depends), systemd as
#              init, the project's .deb installed with dpkg -i, the kernel's modules;
#   Image, <board>.dtb, initrd.gz   for qemu -kernel/-dtb/-initrd: Debian's kernel (dpkg -x,
#              never installed on this machine; Image is the arm64 Image or the armel zImage),
#              and a busybox initramfs that loads the SD host drivers (modules in Debian's
#              kernel), mounts mmcblk0p1 and switch_roots to systemd;
#   root/      the root filesystem as a directory, with root.stamp (the .deb's sha256, suite,
#              package list): made anew only when one of those changes;
#   stamp      what the image was made from (root.stamp, the sha256 of this script and the board
#              table): a second run with the same inputs returns at once; a new .deb, script or
#              board row makes it anew.
# The .deb: $PI_DEB if set (built for the same suite: its version ends ~deb12 for bookworm,
# ~deb13 for trixie), else scripts/build-deb.sh <suite> <build> (its build tree and sysroot in
# $DISKPROBE_CACHE, default /var/cache/diskprobe-build).
# The guest: root without password, a root shell on TCP port 29101 for the test (one command
# per connection); usb0 (QEMU's usb-net) gets 10.0.2.15/24 from systemd-networkd, as QEMU's user network
# expects; apt timers and wait-online masked (a TCG boot is slow enough).
# Needs root: the second stage of the root filesystem runs the target's maintainer scripts under
# qemu-user, which needs a binfmt_misc handler. If none is registered for the architecture, this
# script registers its own under a private name (diskprobe-pi-<arch>) for the build only and
# removes it on exit, so the machine's other users see no change afterwards.
# Packages: scripts/install-deps.sh pi-qemu.
set -euo pipefail
# Paths given relative to where it was started, resolved before the cd to the repository.
self=$(realpath "$0")
[ -z "${PI_DEB:-}" ] || PI_DEB=$(realpath "$PI_DEB")
[ -z "${2:-}" ] || set -- "$1" "$(realpath -m "$2")"
cd "$(dirname "$self")/.."
board=${1:?usage: pi-image.sh BOARD [output directory] (scripts/pi-boards.tsv: pi3b, pi0)}
# The board's row: root architecture, package build and name, kernel metapackage and dtb,
# qemu-user, the dtb's trimming (scripts/pi-boards.tsv).
. scripts/pi-boards.sh
pi_board "$board" || exit 2
if [ "$(id -u)" != 0 ]; then
  echo "pi-image: needs root (chroot and a binfmt_misc handler for the root's second stage, the cache in /var/cache)" >&2
  exit 2
fi
suite=${PI_SUITE:-$board_suite}
arch=$board_arch build=$board_build kmeta=$board_kernel dtb=$board_dtb qemu_user=$board_qemu_user
# binfmt_misc magic/mask of the root's ELF programs (for the second stage under qemu-user): by
# ELF class and machine, i.e. by the qemu-user emulator.
case "$qemu_user" in
  qemu-aarch64-static)
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' ;;
  qemu-arm-static)
    magic='\x7fELF\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x28\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff' ;;
  *) echo "pi-image: no binfmt_misc magic for $qemu_user" >&2; exit 2 ;;
esac
cache=${DISKPROBE_PI_CACHE:-/var/cache/diskprobe-pi}
out=$(realpath -m "${2:-$cache/$board-$suite}")
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { printf '[pi-image %s] %s\n' "$(date +%T)" "$*" >&2; }
# The dtb trimmings (scripts/pi-boards.tsv's dtb_fix column), each: FUNCTION DTB, in place.
# bcm2835_pm (BCM2835: Pi Zero, Pi 1): Debian's kernel panics in bcm2835_pm_probe on QEMU's raspi0
# as the dtb stands. The PM block's node keeps only its "pm" registers: without "asb" the kernel's
# PM driver adds the watchdog (the SoC's reset, which QEMU emulates: `reboot` works) and no
# power-domain driver. The firmware's power-domain node (/soc/power) is disabled, and with it
# every reference to it: the USB controller (dwc2) would wait for that provider forever and
# usb-net would never appear (QEMU's devices need no power-on).
bcm2835_pm() {
  local dtb=$1 pm=/soc/watchdog@7e100000 power
  # shellcheck disable=SC2046 # the two cells, address and size, as two words
  fdtput -t x "$dtb" "$pm" reg $(fdtget -t x "$dtb" "$pm" reg | cut -d' ' -f1-2)
  fdtput -t s "$dtb" "$pm" reg-names pm
  fdtput -t s "$dtb" /soc/power status disabled
  power=$(printf '0x%02x' "$(fdtget -t u "$dtb" /soc/power phandle)")
  dtc -q -I dtb -O dts "$dtb" >"$dtb.dts"
  log "dtb: $pm reg $(fdtget -t x "$dtb" "$pm" reg) (pm only); /soc/power disabled and its" \
    "power-domains ($power) dropped from $(grep -c "power-domains = <$power " "$dtb.dts") nodes"
  sed -i "/power-domains = <$power /d" "$dtb.dts"
  dtc -q -I dts -O dtb -o "$dtb" "$dtb.dts"
  rm -f "$dtb.dts"
}

deb=${PI_DEB:-}
if [ -z "$deb" ]; then
  log "building the $suite $build package (scripts/build-deb.sh)"
  scripts/build-deb.sh "$suite" "$build" "$cache/debs-$suite" >&2
  deb=$(ls -t "$cache/debs-$suite/${board_package}_"*.deb | head -n1)
fi
[ -f "$deb" ] || { echo "pi-image: no package at $deb" >&2; exit 2; }
deb=$(realpath "$deb")
# The package's Depends name the libraries of the suite it was built for (~deb12: bookworm,
# ~deb13: trixie): in the other suite's root they do not exist. A version without the suffix
# (make test-cross builds one) says nothing about it: PI_SUITE must then name the suite.
case "$(dpkg-deb -f "$deb" Version)" in
  *~deb12) deb_suite=bookworm ;; *~deb13) deb_suite=trixie ;;
  *) if [ -z "${PI_SUITE:-}" ]; then
       echo "pi-image: $(basename "$deb")'s version names no Debian release (~deb12, ~deb13): set PI_SUITE to the one it was built for (make test-cross builds against bookworm)" >&2
       exit 2
     fi
     deb_suite=$suite ;;
esac
if [ "$deb_suite" != "$suite" ]; then
  echo "pi-image: $(basename "$deb") is built for $deb_suite, the image is $suite (PI_SUITE=$deb_suite)" >&2
  exit 2
fi
# The Debian part of the root: systemd as init, udev and kmod (they load the USB network
# modules), iproute2, busybox for the initramfs, fio (the test's reference), e2fsprogs (the
# test's filefrag finds the probe file's blocks; Debian 13's minbase has no e2fsprogs), and the
# .deb's Depends (first alternative), so the .deb itself installs with dpkg -i afterwards and
# the Debian part is cached across .debs.
deps=$(dpkg-deb -f "$deb" Depends Pre-Depends | sed 's/^[A-Za-z-]*: //' | tr ',' '\n' |
       sed 's/|.*//; s/(.*)//; s/:any//; s/[[:space:]]//g' | sed '/^$/d' | sort -u | paste -sd, -)
packages=systemd-sysv,udev,kmod,iproute2,busybox-static,fio,e2fsprogs,$deps
deb_sum=$(sha256sum <"$deb" | cut -d' ' -f1)
root_key="suite $suite arch $arch packages $packages"
key="$root_key deb $deb_sum script $(cat "$self" scripts/pi-boards.tsv scripts/pi-boards.sh | sha256sum | cut -d' ' -f1)"
if [ -f "$out/stamp" ] && [ "$(cat "$out/stamp")" = "$key" ] && [ -f "$out/card.img" ]; then
  log "up to date: $out ($(basename "$deb"))"
  echo "$out"
  exit 0
fi
mkdir -p "$out"
rm -f "$out/stamp"
work=$(mktemp -d "$out/work.XXXXXX")
binfmt_name=
cleanup() {
  [ -n "$binfmt_name" ] && echo -1 >"/proc/sys/fs/binfmt_misc/$binfmt_name" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- the kernel package (a private apt state of the target architecture) ---
. scripts/sysroot-apt.sh
aptdir=$cache/apt-$suite-$arch
mkdir -p "$aptdir"/{lists/partial,archives/partial,etc/preferences.d}
: >"$aptdir/status"
printf 'deb [arch=%s] %s %s main\ndeb [arch=%s] %s %s-updates main\ndeb [arch=%s] http://deb.debian.org/debian-security %s-security main\n' \
  "$arch" "$mirror" "$suite" "$arch" "$mirror" "$suite" "$arch" "$suite" >"$aptdir/etc/sources.list"
sysroot_apt_opts "$arch" "$aptdir"
log "apt-get update ($suite $arch, private state)"
apt-get "${apt_opts[@]}" -qq update
kpkg=$(apt-cache "${apt_opts[@]}" depends "$kmeta" | awk '/Depends: linux-image-/{print $2; exit}')
[ -n "$kpkg" ] || { echo "pi-image: no $kmeta in $suite $arch" >&2; exit 1; }
kver=${kpkg#linux-image-}
# prometheus-node-exporter: the peer the test compares scrape cost and RSS with, in the same guest.
(cd "$aptdir/archives" && apt-get "${apt_opts[@]}" -qq download "$kpkg" prometheus-node-exporter)
kdeb=$(ls "$aptdir/archives/${kpkg}"_*.deb | head -n1)
nedeb=$(ls -t "$aptdir"/archives/prometheus-node-exporter_*.deb | head -n1)
log "kernel $kpkg ($(basename "$kdeb")), $(basename "$nedeb")"

# --- binfmt_misc for the second stage ---
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
if ! arch-test "$arch" >/dev/null 2>&1; then
  binfmt_name=diskprobe-pi-$arch
  [ -e "/proc/sys/fs/binfmt_misc/$binfmt_name" ] && echo -1 >"/proc/sys/fs/binfmt_misc/$binfmt_name"
  # The magic and mask go in as written (binfmt_misc decodes the \x escapes itself: raw bytes
  # would stop at the first NUL and match every 64-bit ELF, this machine's own programs too).
  printf ':%s:M::%s:%s:%s:F' "$binfmt_name" "$magic" "$mask" "$(command -v "$qemu_user")" >/proc/sys/fs/binfmt_misc/register
  if ! /bin/true; then echo -1 >"/proc/sys/fs/binfmt_misc/$binfmt_name"; echo "pi-image: binfmt handler matched native programs: removed" >&2; exit 1; fi
  log "registered binfmt handler $binfmt_name (removed on exit)"
fi

# --- the root filesystem (cached in $out/root: made anew only when the .deb, the suite or the
# package list changes; the steps after it are idempotent and run on it in place) ---
root=$out/root
if [ ! -f "$out/root.stamp" ] || [ "$(cat "$out/root.stamp")" != "$root_key" ] || [ ! -d "$root" ]; then
  rm -rf "$root" "$out/root.stamp"
  log "mmdebstrap $suite $arch (minbase, $packages)"
  mmdebstrap --mode=root --variant=minbase --architectures="$arch" \
    --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/diskprobe-exporter/*' \
    "$suite" "$work/root" "deb $mirror $suite main" "deb http://deb.debian.org/debian-security $suite-security main"
  mv "$work/root" "$root"
  echo "$root_key" >"$out/root.stamp"
fi
# The project's package, by dpkg in the root (its maintainer scripts under qemu-user).
log "dpkg -i $(basename "$deb")"
deb_arch=$(dpkg-deb -f "$deb" Architecture)
# The ARMv6 package is armhf (Raspberry Pi OS 32-bit's name) in an armel root: a foreign
# architecture for dpkg, fine for a static executable whose only dependency is Architecture: all.
[ "$deb_arch" = "$arch" ] || chroot "$root" dpkg --add-architecture "$deb_arch"
cp "$deb" "$root/tmp/diskprobe-exporter.deb"
chroot "$root" dpkg -i /tmp/diskprobe-exporter.deb >&2
rm -f "$root/tmp/diskprobe-exporter.deb"
cp "$nedeb" "$root/tmp/node-exporter.deb"
chroot "$root" dpkg -i /tmp/node-exporter.deb >&2
rm -f "$root/tmp/node-exporter.deb"
dpkg-query --admindir="$root/var/lib/dpkg" -W "$(dpkg-deb -f "$deb" Package)" systemd fio >&2

# The kernel's modules and its image and dtb.
dpkg -x "$kdeb" "$work/kernel"
rm -rf "$root/lib/modules"
mkdir -p "$root/lib/modules"
# Debian 12's kernel packages ship them in /lib/modules, Debian 13's in /usr/lib/modules.
kmods=$work/kernel/lib/modules/$kver
[ -d "$kmods" ] || kmods=$work/kernel/usr/lib/modules/$kver
cp -a "$kmods" "$root/lib/modules/"
# Drivers no emulated Pi needs, to keep the card small.
(cd "$root/lib/modules/$kver/kernel" && rm -rf drivers/gpu drivers/media drivers/net/wireless \
  drivers/net/ethernet drivers/infiniband drivers/staging sound net/wireless net/mac80211 drivers/scsi/*/)
depmod -b "$root" "$kver"
# The arm64 vmlinuz is a plain Image in some Debian kernels and a gzip'd one in others; the
# armel one is a zImage (it decompresses itself).
if gzip -t "$work/kernel/boot/vmlinuz-$kver" 2>/dev/null; then
  gunzip -c "$work/kernel/boot/vmlinuz-$kver" >"$work/Image"
else
  cp "$work/kernel/boot/vmlinuz-$kver" "$work/Image"
fi
cp "$work/kernel/usr/lib/linux-image-$kver/$dtb" "$work/$board.dtb"
# The Bluetooth node under the PL011 (boards with wireless): see the serial getty below.
if fdtget -l "$work/$board.dtb" /soc/serial@7e201000 2>/dev/null | grep -qx bluetooth; then
  fdtput -r "$work/$board.dtb" /soc/serial@7e201000/bluetooth
fi
if [ "$board_dtb_fix" != - ]; then
  "$board_dtb_fix" "$work/$board.dtb"
fi

# The guest's setup for the test: a serial root shell, usb0's address, a short boot.
echo "$board" >"$root/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 %s\n' "$board" >"$root/etc/hosts"
printf '/dev/mmcblk0p1 / ext4 rw,noatime 0 1\n' >"$root/etc/fstab"
sed -i 's/^root:[^:]*:/root::/' "$root/etc/shadow"
# The test's shell: one command per TCP connection on port 29101 (socket-activated, root),
# reached through a second QEMU port forward: each command's output and exit status come back
# apart from the kernel's messages, which share the serial console. Test images only.
rm -rf "$root/etc/systemd/system/test-shell.service"
cat >"$root/etc/systemd/system/test-shell.socket" <<'EOF'
[Unit]
Description=One shell command per connection for the QEMU test (image made by pi-image.sh)
[Socket]
ListenStream=29101
Accept=yes
[Install]
WantedBy=sockets.target
EOF
cat >"$root/etc/systemd/system/test-shell@.service" <<'EOF'
[Service]
ExecStart=/bin/sh -c 'read -r cmd; eval "$cmd" 2>&1; echo "E$?"'
StandardInput=socket
StandardOutput=socket
EOF
systemctl --root="$root" enable test-shell.socket >/dev/null 2>&1
mkdir -p "$root/etc/systemd/network"
cat >"$root/etc/systemd/network/10-usb-net.network" <<'EOF'
# QEMU's usb-net (cdc_ether) on the user-mode network: the guest is 10.0.2.15, QEMU 10.0.2.2.
[Match]
Driver=cdc_ether
[Network]
Address=10.0.2.15/24
Gateway=10.0.2.2
EOF
systemctl --root="$root" enable systemd-networkd.service >/dev/null 2>&1
# Without a cdc_ether interface the host cannot reach the guest at all. This watcher says on the
# kernel log (the serial console, which the test reads) whether one exists 90 s after dwc2 bound,
# with the USB devices seen, and again when one appears later; the test boots again when none
# came. (Tried and dropped: rebinding dwc2 in the guest left the port `dwc2 3f980000.usb: Not
# connected`; re-plugging usb-net through QMP was followed by RCU stalls and sdhost timeouts.)
cat >"$root/usr/local/sbin/usb-net-watch" <<'EOF'
#!/bin/sh
drv=$(ls -d /sys/bus/platform/drivers/dwc2/*.usb 2>/dev/null | head -n1)
msg() { echo "<3>usb-net-watch: $*" >/dev/kmsg; }
up() { ls /sys/bus/usb/drivers/cdc_ether 2>/dev/null | grep -q :; }
i=0; while [ -z "$drv" ] && [ $i -lt 600 ]; do
  sleep 1; i=$((i+1)); drv=$(ls -d /sys/bus/platform/drivers/dwc2/*.usb 2>/dev/null | head -n1); done
i=0; while ! up && [ $i -lt 90 ]; do sleep 1; i=$((i+1)); done
if up; then msg "cdc_ether interface present $i s after dwc2 bound"; exit 0; fi
msg "no cdc_ether interface 90 s after dwc2 bound ($(ls /sys/bus/usb/devices | tr '\n' ' '))"
while ! up; do sleep 2; i=$((i+2)); done
msg "cdc_ether interface present $i s after dwc2 bound"
EOF
chmod 755 "$root/usr/local/sbin/usb-net-watch"
cat >"$root/etc/systemd/system/usb-net-watch.service" <<'EOF'
[Unit]
Description=Report whether QEMU's usb-net enumerated (test image made by pi-image.sh)
After=systemd-udev-trigger.service
[Service]
Type=simple
ExecStart=/usr/local/sbin/usb-net-watch
[Install]
WantedBy=multi-user.target
EOF
# A root getty on the serial console, for the test's diagnostics when the network is missing.
# The dtb's Bluetooth node under the PL011 is removed (above), as a guess at why no userspace
# output ever showed on ttyAMA0 (with that node the kernel may hand the UART to the Bluetooth
# driver); not yet seen to work: the boots since had their network.
mkdir -p "$root/etc/systemd/system/serial-getty@ttyAMA0.service.d"
cat >"$root/etc/systemd/system/serial-getty@ttyAMA0.service.d/autologin.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200 %I linux
EOF
systemctl --root="$root" enable usb-net-watch.service >/dev/null 2>&1
systemctl --root="$root" mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer \
  e2scrub_all.timer e2scrub_reap.service fstrim.timer systemd-timesyncd.service >/dev/null 2>&1
systemctl --root="$root" is-enabled diskprobe_exporter.service >&2
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*_Packages*

# The initramfs: busybox and the SD host drivers with their dependencies, in load order.
ir=$work/initramfs
mkdir -p "$ir"/{bin,dev,proc,sys,newroot,lib/modules}
cp "$root/bin/busybox" "$ir/bin/busybox"
: >"$ir/etc.modules"
declare -A seen=()
add_module() {  # NAME: its dependencies first, then itself (modinfo of the target's tree)
  local name=$1 file dep
  [ -n "${seen[$name]:-}" ] && return
  seen[$name]=1
  file=$(modinfo -b "$root" -k "$kver" -n "$name" 2>/dev/null) || return 0  # built in
  case "$file" in /*) ;; *) return 0 ;; esac
  for dep in $(modinfo -b "$root" -k "$kver" -F depends "$name" | tr ',' ' '); do add_module "$dep"; done
  cp "$file" "$ir/lib/modules/"
  echo "$(basename "$file")" >>"$ir/etc.modules"
}
# crc32c_generic before ext4: its metadata checksums ask the crypto API for crc32c at mount, and
# the initramfs has no modprobe to load it on demand.
# dwc2 and cdc_ether too: loaded here, the driver binds QEMU's usb-net as soon as it enumerates.
# Left to udev, cdc_ether was sometimes not loaded minutes after the device had enumerated
# (seen under TCG at load 11), and the host could not reach the guest.
for m in mmc_core mmc_block sdhci sdhci-pltfm sdhci-iproc bcm2835 crc32c_generic ext4 dwc2 usbnet cdc_ether; do
  add_module "$m"
done
log "initramfs modules: $(tr '\n' ' ' <"$ir/etc.modules")"
cat >"$ir/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
# On the serial console at loglevel 4 (the test boots again when a kernel never gets here).
echo "<3>initramfs: init started" >/dev/kmsg
for m in $(cat /etc.modules); do insmod /lib/modules/$m 2>/dev/null || echo "initramfs: insmod $m failed"; done
i=0; while [ ! -b /dev/mmcblk0p1 ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
mount -t ext4 -o rw,noatime /dev/mmcblk0p1 /newroot || { echo "initramfs: cannot mount /dev/mmcblk0p1"; exec sh; }
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /sbin/init
EOF
chmod +x "$ir/init"
(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# The card: MBR, partition 1 from 1 MiB to the end, ext4 made from the root directory.
log "card.img (ext4 from the root directory, $(du -sm "$root" | cut -f1) MiB used)"
truncate -s 0 "$work/card.img"; truncate -s 2G "$work/card.img"
echo 'start=2048, type=83' | sfdisk -q "$work/card.img"
mkfs.ext4 -q -F -L rootfs -E offset=$((2048 * 512)) -d "$root" "$work/card.img" $(((2 * 1024 * 1024 - 1024)))k
mv "$work/card.img" "$work/Image" "$work/$board.dtb" "$work/initrd.gz" "$out/"
printf '%s\n' "$kpkg" >"$out/kernel"
echo "$key" >"$out/stamp"
log "done: $out"
echo "$out"
