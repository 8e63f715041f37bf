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
# 12. the card ejected through QMP while the probes run on it (last: the guest's root filesystem
#     is on that card): the exporter keeps answering, the kernel's messages are counted, and
#     either the card's series go and come back after re-insertion, or the guest kernel's SD host
#     driver crashed on the vanished card (its oops shown) and the probes report the card's errors.
# QEMU's DWC2 USB host sometimes never enumerates usb-net under TCG: the test then boots again
# (PI_BOOT_ATTEMPTS, default 3; PI_USB_REPLUGS re-plugs it through QMP first, none by default).
# Usage: pi_qemu_e2e.sh [BOARD] (a row of scripts/pi-boards.tsv: pi3b, the default, or pi0). The
# .deb: $PI_DEB, else scripts/build-deb.sh builds it; the Debian release: $PI_SUITE, else the
# board's. The image cache: $DISKPROBE_PI_CACHE (default /var/cache/diskprobe-pi). Needs root,
# QEMU, mmdebstrap, qemu-user-static, Prometheus (scripts/install-deps.sh pi-qemu) and Debian's
# package archive. The image 3-8 minutes the first time (plus a Debian 13 build root the first
# time the Pi 3B's package is built on a Debian 12 machine), then the boot and checks, 10-15
# minutes (the README's "A Raspberry Pi in a box"). `make test-pi-qemu`; .ci/run runs both.
# PI_STEPS=eject (a comma list of throttle, cost, reboot, lost_writes, eject) runs only those of
# the later steps, while working on one.
# Exits 77 (skip) when QEMU is missing or not root, except under CI=true.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
board=${1:-pi3b}
skip() {
  if [[ "${CI:-}" == "true" ]]; then echo "FAIL (CI=true): $*" >&2; exit 1; fi
  echo "SKIP: $*"; exit 77
}
. "$here/../../scripts/pi-boards.sh"
pi_board "$board" || exit 2
[[ $(id -u) == 0 ]] || skip "needs root (binfmt_misc and mmdebstrap for the image)"
for c in "$board_qemu" "$board_qemu_user" qemu-img mmdebstrap prometheus; do
  command -v "$c" >/dev/null || skip "$c missing (scripts/install-deps.sh pi-qemu)"
done
start=$SECONDS
image=$("$here/../../scripts/pi-image.sh" "$board" | tail -n1)
echo "image $image ready after $((SECONDS - start)) s"
work=$(mktemp -d "${TMPDIR:-/tmp}/diskprobe-pi-e2e.XXXXXX")
# The guest's console and QEMU's log are printed whenever the run did not pass, also when it is
# stopped (a TERM from CI's time bound: the test's own cleanup stops QEMU first).
rc=1
finish() {
  if ((rc != 0)); then
    # A kernel crash or stall in any boot, with the lines that say where (the tail below may
    # hold only the stall reports that came after it).
    echo "--- kernel crashes and stalls on the consoles of every boot ---"
    grep -H -E 'Unable to handle|Internal error|kernel BUG|BUG:|Oops|PC is at|LR is at|Comm: |Workqueue: |Tainted: |cut here|end trace' \
      "$work"/console*.log 2>/dev/null | head -n 60 || true
    echo "--- console.log (tail) ---"; tail -n 80 "$work/console.log" 2>/dev/null || true
    echo "--- qemu.log ---"; cat "$work/qemu.log" 2>/dev/null || true
  fi
  echo "wall time $((SECONDS - start)) s"
  ((rc == 0)) && echo PASS || echo FAIL
  rm -rf "$work"
}
trap finish EXIT
trap 'exit 143' TERM INT
python3 "$here/pi_qemu_e2e.py" "$board" "$image" "$work" && rc=0 || rc=$?
exit "$rc"
