#!/usr/bin/env bash
# The packaged exporter on an emulated Raspberry Pi: QEMU's raspi3b (Pi 3B: Debian arm64, its
# arm64 kernel, the arm64 package) or raspi0 (Pi Zero, ARM1176: Debian armel, its rpi kernel, the
# ARMv6 package) machine under TCG (no KVM), with the kernel's own SD host driver, an SD card image
# made from Debian's packages with the project's .deb installed and systemd as init
# (scripts/pi-image.sh, cached), scraped from the host through QEMU's usb-net with a port forward.
# Checks, each printing its figures (tests/e2e/pi_qemu_e2e.py does the work):
#  1. diskprobe_mmc_ios_* equal the guest's /sys/kernel/debug/mmc0/ios;
#  2. diskprobe_mmc_card_info name/manfid/oemid/serial/date equal the guest's sysfs attributes
#     (the kernel's CID decoding), the capacity equals the CSD decoded by the test and the block
#     device size;
#  3. diskprobe_board_info's model is the device tree's;
#  4. every block_stat counter of mmcblk0 lies between the guest's stat read before and after;
#  5. the randread and seqread probes ran ok on mmcblk0, no probe errors;
#  6. the packaged unit's hardening on a real systemd: the unit is active and its journal has no
#     permission error with the default config; `systemctl reload` applies a config change;
#  7. every probe kind runs ok on the card; a real Prometheus on the host gets the same values;
#  8. with QEMU's drive throttling as the ground truth, randread's mean latency and seqread's
#     throughput within 10 % of fio's in the same guest on the same card;
#  9. scrape CPU time and RSS beside Debian's prometheus-node-exporter in the same guest (ratios);
# 10. the service is back after `systemctl reboot`;
# 11. writes the card drops while reporting success (blkdebug under QEMU's SD card, which ignores
#     a failed host write) are caught by the verify probe, the write probe seeing no error;
# 12. the card ejected and re-inserted through QMP: its series go and come back, the kernel's
#     messages counted (last: the guest's root filesystem is on that card).
# QEMU's DWC2 USB host sometimes never enumerates usb-net under TCG: the test then re-plugs it
# through QMP and, failing that, boots again (PI_BOOT_ATTEMPTS, default 3).
# Usage: pi_qemu_e2e.sh [BOARD] (pi3b, the default, or pi0). The .deb: $PI_DEB, else
# scripts/build-deb.sh builds it. The image cache: $DISKPROBE_PI_CACHE (default
# /var/cache/diskprobe-pi). Needs root, qemu-system-arm, mmdebstrap, qemu-user-static
# (scripts/install-deps.sh pi-qemu) and Debian's package archive. The image 3-15 minutes the
# first time, then the boot and checks, about 10 minutes (the README's "A Raspberry Pi in a
# box"). `make test-pi-qemu`; .ci/run runs pi3b as a stage.
# Exits 77 (skip) when QEMU is missing or not root, except under CI=true.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
board=${1:-pi3b}
skip() {
  if [[ "${CI:-}" == "true" ]]; then echo "FAIL (CI=true): $*" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}
[[ $(id -u) == 0 ]] || skip "needs root (binfmt_misc and mmdebstrap for the image)"
. "$here/../../scripts/pi-boards.sh"
pi_board "$board" || exit 2
for c in "$board_qemu" "$board_qemu_user" qemu-img mmdebstrap; do
  command -v "$c" >/dev/null || skip "$c missing (scripts/install-deps.sh pi-qemu)"
done
start=$SECONDS
image=$("$here/../../scripts/pi-image.sh" "$board" | tail -n1)
echo "image $image ready after $((SECONDS - start)) s"
work=$(mktemp -d "${TMPDIR:-/tmp}/diskprobe-pi-e2e.XXXXXX")
trap 'rm -rf "$work"' EXIT
rc=0
python3 "$here/pi_qemu_e2e.py" "$board" "$image" "$work" || rc=$?
if (( rc != 0 )); then
  echo "--- console.log (tail) ---"; tail -n 80 "$work/console.log" 2>/dev/null || true
  echo "--- qemu.log ---"; cat "$work/qemu.log" 2>/dev/null || true
fi
echo "wall time $((SECONDS - start)) s"
(( rc == 0 )) && echo PASS || echo FAIL
exit "$rc"
