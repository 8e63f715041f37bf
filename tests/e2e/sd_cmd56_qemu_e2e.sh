#!/usr/bin/env bash
# CMD56 on a real kernel's SD stack: QEMU's Raspberry Pi 3B (-M raspi3b) with Debian's arm64
# kernel and its bcm2835 / sdhci-iproc drivers, a raw card image with one partition. In the guest a
# static program sends the exporter's CMD56 read (tests/e2e/sd_cmd56_probe.c, the same ioctl as
# SendCmd56) and the reply is compared with the recorded fixture the unit tests reject
# (tests/fixtures/samples/sd-cmd56/06-qemu-raspi3b-card-arg1-recorded.txt). Checks:
#  1. QEMU's card does not implement vendor health, but the kernel returns success with 512 bytes
#     of EC for every argument: the reply the exporter rejects as "constant" (never health);
#  2. CMD56 on the partition node mmcblk0p1 fails with EPERM (the kernel wants the whole card);
#  3. CMD56 without capabilities (after setuid to nobody) fails with EPERM: the exporter's service
#     user without the opt-in drop-in (reason "permission").
# The exporter itself does not run in the guest (that needs the arm64 cross build of
# `make test-cross`); the errno-to-reason mapping and the rejection are unit-tested on these
# recorded results. Usage: sd_cmd56_qemu_e2e.sh (no argument needed; BINARY accepted and unused).
# Needs qemu-system-aarch64 (qemu-system-arm), aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu),
# sfdisk, and apt access for linux-image-arm64 and busybox-static (arm64), cached in
# ${DISKPROBE_E2E_CACHE:-$HOME/.cache/diskprobe-e2e}. About 1-2 minutes under TCG. Not in
# `make test`: `make test-sd-cmd56-qemu`. Exits 77 (skip) when a tool is missing, except under CI=true.
source "$(dirname "$0")/lib.sh"
SRC=$(realpath "$(dirname "$0")/../..")
source "$(dirname "$0")/qemu_lib.sh"
command -v qemu-system-aarch64 >/dev/null || qemu_skip "qemu-system-aarch64 missing (apt-get install qemu-system-arm)"
command -v aarch64-linux-gnu-gcc >/dev/null || qemu_skip "aarch64-linux-gnu-gcc missing (apt-get install gcc-aarch64-linux-gnu)"
command -v sfdisk >/dev/null || qemu_skip "sfdisk missing (apt-get install fdisk)"

W=$E2E_WORK
mkdir -p "$W/R/bin" "$W/R/lib" "$W/R/dev" "$W/R/proc" "$W/R/sys"
qemu_arm64_kernel "$W"
KV=$KVER
log "kernel $KV"
cp "$W/bb/bin/busybox" "$W/R/bin/"
aarch64-linux-gnu-gcc -static -O2 -o "$W/R/bin/sd_cmd56_probe" "$SRC/tests/e2e/sd_cmd56_probe.c"
for m in sdhci sdhci-pltfm sdhci-iproc bcm2835; do cp "$W/k/lib/modules/$KV/kernel/drivers/mmc/host/$m.ko" "$W/R/lib/"; done
cat >"$W/R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in sdhci sdhci-pltfm sdhci-iproc bcm2835; do insmod /lib/$m.ko; done
for i in $(seq 1 100); do [ -e /dev/mmcblk0p1 ] && break; sleep 0.2; done
echo "GUEST: $(cat /sys/block/mmcblk0/device/type) card $(cat /sys/block/mmcblk0/device/name)"
for a in 0x00000001 0x110005fd 0x110005f1 0x110005f9 0x110005fb 0x53420001; do /bin/sd_cmd56_probe /dev/mmcblk0 $a; done
echo GUEST-DUMP-BEGIN
/bin/sd_cmd56_probe /dev/mmcblk0 0x00000001 dump | grep -v '^cmd56'
echo GUEST-DUMP-END
/bin/sd_cmd56_probe /dev/mmcblk0p1 0x00000001
/bin/sd_cmd56_probe /dev/mmcblk0 0x00000001 drop
echo GUEST-DONE
poweroff -f
INIT
chmod +x "$W/R/init"
qemu_initrd "$W/R" "$W/initrd.gz"
truncate -s 64M "$W/card.img"
printf 'label: dos\n2048,,c\n' | sfdisk -q "$W/card.img"
log "booting the raspi3b guest (TCG)"
t0=$(date +%s)
# The raspi3b machine has no power-off: the guest halts and QEMU stays; it is ended once the
# guest printed GUEST-DONE (or after 400 s).
qemu-system-aarch64 -M raspi3b -m 1G -kernel "$W/k/boot/vmlinuz-$KV" \
  -dtb "$W/k/usr/lib/linux-image-$KV/broadcom/bcm2837-rpi-3-b.dtb" -initrd "$W/initrd.gz" \
  -append "console=ttyAMA0 rdinit=/init" -drive file="$W/card.img",if=sd,format=raw -nographic -serial mon:stdio \
  </dev/null >"$W/guest.log" 2>&1 &
QEMU_PID=$!
E2E_PIDS+=("$QEMU_PID")
for i in $(seq 1 400); do
  grep -q 'GUEST-DONE' "$W/guest.log" 2>/dev/null && { sleep 0.5; break; }
  kill -0 "$QEMU_PID" 2>/dev/null || break
  sleep 1
done
kill "$QEMU_PID" 2>/dev/null || true
wait "$QEMU_PID" 2>/dev/null || true
log "guest ran $(( $(date +%s) - t0 )) s"
tr -d '\r' <"$W/guest.log" >"$W/g.log"
grep -E '^(GUEST|cmd56)' "$W/g.log" || true
check "guest finished" grep -q '^GUEST-DONE' "$W/g.log"
check "an SD card on the emulated bcm2835 host" grep -q '^GUEST: SD card' "$W/g.log"
n=$(grep -c '^cmd56 /dev/mmcblk0 arg 0x[0-9a-f]*: ok, bytes 0-7: ec ec ec ec ec ec ec ec$' "$W/g.log" || true)
check "every vendor argument answered with EC bytes (got $n of 6)" test "$n" = 6
sed -n '/^GUEST-DUMP-BEGIN/,/^GUEST-DUMP-END/p' "$W/g.log" | sed '1d;$d' >"$W/dump.txt"
grep -v '^#' "$SRC/tests/fixtures/samples/sd-cmd56/06-qemu-raspi3b-card-arg1-recorded.txt" >"$W/fixture.txt"
check "the reply equals the recorded fixture the unit tests reject (reason constant)" cmp -s "$W/dump.txt" "$W/fixture.txt"
check "CMD56 on the partition node: EPERM" grep -q '^cmd56 /dev/mmcblk0p1 arg 0x00000001: errno 1 ' "$W/g.log"
check "CMD56 without capabilities: EPERM" \
  grep -q '^cmd56 /dev/mmcblk0 arg 0x00000001 without capabilities: errno 1 ' "$W/g.log"
if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed"; tail -40 "$W/g.log"; exit 1; fi
echo "all checks passed"
