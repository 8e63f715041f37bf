#!/usr/bin/env bash
# End-to-end: the shipped Prometheus configuration (deploy/prometheus/prometheus.yml, file_sd) and
# rules run in a real Prometheus that scrapes
#   - the exporter on this machine, probing an emulated card (nbdkit: 2 ms reads, error filter
#     armed by a trigger file) and the real disk that holds the work directory;
#   - four exporters on the Raspberry Pi fixture roots (tests/fixtures/roots/{pi3bplus,pi4,cm4,pi4-usb}),
#     for the panels only a Pi can fill (SD bus clock, card identity, classes, wear, board,
#     config.txt, under-voltage) and the SMART ones (pi4-usb's sda, a stand-in smartctl
#     replaying a recorded report). The Pi 4 one probes a second emulated card presented as its
#     mmcblk0: a private mount namespace gives it a /dev/mmcblk0 node for the card's loop device
#     and the copied fixture's sysfs names the loop device's major:minor, so the card ranking
#     (probe p99 joined with diskprobe_mmc_card_info) has a real card behind it.
# Reads of the first card start failing and DiskprobeProbeFailing and DiskprobeKernelIOErrors
# must reach `firing` in /api/v1/alerts; then every panel query of every dashboard runs with its
# variables substituted by real values and must return at least one series (the
# test's copy of the rules has every `for:` cut to 5s; everything else is the shipped file); last,
# an exporter stops and DiskprobeExporterDown must fire.
# Needs root, FUSE and loop devices: skips (77) outside CI without them, fails under CI=true.
# Usage: dashboards_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
# lib.sh's cleanup runs under set -e: a failing step (kill of an nbdfuse that already exited with
# its mount) would end it early, leaving later cards attached and mounted, and turn a passing run
# into exit 1. Run it to the end whatever fails.
trap 'cleanup || true' EXIT
require_card_support
for tool in curl jq promtool prometheus python3 unshare mknod mkfs.ext4; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
cd "$E2E_WORK"

# start_named NAME COMMAND...: runs an exporter command in the background with its log in
# NAME.log; sets ADDR to the address it listens on.
start_named() {
  local name=$1; shift
  "$@" --web.listen-address=127.0.0.1:0 2>"$E2E_WORK/$name.log" &
  E2E_PIDS+=($!)
  eval "PID_$name=$!"
  ADDR=$(listen_address "$E2E_WORK/$name.log" $!)
}

# ---------------------------------------------------------------------------------------------
log "emulated card A (2 ms reads; reads fail with EIO while $E2E_WORK/fail-A exists)"
card_start A 256M --filter=error --filter=delay rdelay=2ms wdelay=5ms \
  error-pread=EIO error-pread-rate=100% error-pread-file="$E2E_WORK/fail-A"
A=$CARD_NAME
check "card A reads while the trigger file is absent" dd if="$CARD_DEV" of=/dev/null bs=4096 count=1 iflag=direct status=none

# The real disk: the one holding the work directory (its write probes run there).
devno=$(stat -c '%Hd:%Ld' "$E2E_WORK")
REAL=$(basename "$(readlink -f "/sys/dev/block/$devno")")
[ -e "/sys/dev/block/$devno/partition" ] && REAL=$(basename "$(dirname "$(readlink -f "/sys/dev/block/$devno")")")
real_reads="{}"
if ! dd if="/dev/$REAL" of=/dev/null bs=4096 count=1 iflag=direct status=none 2>/dev/null; then
  # Containers often may not open the host's disk for reading (device cgroup): probe its writes only.
  log "direct reads of /dev/$REAL refused here: read probes off for $REAL"
  real_reads="{randread: {enabled: false}, seqread: {enabled: false}}"
fi
cat >real.yml <<YML
devices: {include: ['$A', '$REAL']}
probes:
  state_directory: $E2E_WORK/state
  probe_file_size: 4MiB
  busy_threshold: 1
  jitter: 0
  op_deadline: 2s
  defaults:
    randread: {interval: 1s, ops: 8}
    seqread: {interval: 2s, size: 2MiB}
    write: {interval: 1s, ops: 4}
    fsync: {interval: 1s, ops: 2}
  devices:
    '$REAL': $real_reads
YML
start_named real "$EXPORTER" --config.file=real.yml
REAL_ADDR=$ADDR
log "exporter on this machine: $REAL_ADDR (card $A, real disk $REAL)"

# ---------------------------------------------------------------------------------------------
log "emulated card P as the Pi 4 fixture's mmcblk0"
card_start P 128M --filter=delay rdelay=1ms wdelay=3ms
P=$CARD_NAME
card_mkfs_mount; PMNT=$CARD_MNT
majmin=$(cat "/sys/block/$P/dev")
cp -a "$SRC/tests/fixtures/roots/pi4" root-pi4
pi4_blk=$(readlink -f root-pi4/sys/block/mmcblk0)
echo "$majmin" >"$pi4_blk/dev"
mkdir -p root-pi4/sys/dev/block
ln -s "$pi4_blk" "root-pi4/sys/dev/block/$majmin"
cat >pi4.yml <<YML
probes:
  state_directory: $PMNT/state
  probe_file_size: 4MiB
  busy_threshold: 1
  jitter: 0
  defaults:
    randread: {interval: 1s, ops: 8}
    seqread: {interval: 2s, size: 2MiB}
    write: {interval: 1s, ops: 4}
    fsync: {interval: 1s, ops: 2}
YML
cat >ns-exporter.sh <<SH
#!/bin/sh
# A private /dev holding only mmcblk0 (= card P's loop device) and the character devices a process needs.
mount -t tmpfs -o mode=755 none /dev && mknod -m 600 /dev/mmcblk0 b ${majmin%%:*} ${majmin##*:} &&
  mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/zero c 1 5 && mknod -m 666 /dev/urandom c 1 9 &&
  mknod -m 666 /dev/random c 1 8 && exec "\$@"
SH
chmod +x ns-exporter.sh
R=$E2E_WORK/root-pi4
start_named pi4 unshare -m --propagation private "$E2E_WORK/ns-exporter.sh" "$EXPORTER" --config.file=pi4.yml --no-collector.kmsg \
  --path.sysfs="$R/sys" --path.procfs="$R/proc" --path.rootfs="$R" --path.debugfs="$R/debug"
PI4_ADDR=$ADDR
# The kernel log is this machine's, not the fixtures': the fixture exporters leave it alone.
for name in pi3bplus cm4; do
  R=$SRC/tests/fixtures/roots/$name
  start_named "$name" "$EXPORTER" --no-collector.probes --no-collector.kmsg --path.sysfs="$R/sys" \
    --path.procfs="$R/proc" --path.rootfs="$R" --path.debugfs="$R/debug"
  eval "${name^^}_ADDR=$ADDR"
done
# A Pi 4 booting from a USB SSD (the pi4-usb fixture root, its sda): a stand-in smartctl replies
# with the recorded report of a real SSD through SAT (tests/fixtures/samples/smartctl/01-*), so
# the SMART panels have a drive behind them (e2e_smart_recorded checks those values field by field).
R=$SRC/tests/fixtures/roots/pi4-usb
grep -v '^#' "$SRC"/tests/fixtures/samples/smartctl/01-sat-*.json >smart-report.json
printf '#!/bin/sh\ncat %s/smart-report.json\n' "$E2E_WORK" >smartctl
chmod +x smartctl
printf 'health: {smart_interval: 1h, smartctl_path: %s/smartctl}\n' "$E2E_WORK" >usb.yml
start_named usb "$EXPORTER" --config.file=usb.yml --no-collector.probes --no-collector.kmsg --path.sysfs="$R/sys" \
  --path.procfs="$R/proc" --path.rootfs="$R" --path.debugfs="$R/debug" --path.devfs="$E2E_WORK"
USB_ADDR=$ADDR
log "fixture exporters: pi4 $PI4_ADDR (probing card $P), pi3bplus $PI3BPLUS_ADDR, cm4 $CM4_ADDR, pi4-usb $USB_ADDR (smartctl replaying an SSD's report)"

# ---------------------------------------------------------------------------------------------
log "Prometheus with the shipped configuration and rules"
mkdir -p rules file_sd
sed -e "s#/etc/prometheus/rules/#$E2E_WORK/rules/#; s#/etc/prometheus/file_sd/#$E2E_WORK/file_sd/#" \
    -e 's/^\(\s*\(scrape\|evaluation\)_interval:\) 30s$/\1 1s/; s/^\(\s*scrape_timeout:\) 10s$/\1 1s/' \
    "$SRC/deploy/prometheus/prometheus.yml" >prometheus.yml
check "the shipped prometheus.yml was rewritten in 8 lines (4 paths, 4 intervals)" \
  test "$(diff <(grep -v '^ *#' "$SRC/deploy/prometheus/prometheus.yml") <(grep -v '^ *#' prometheus.yml) | grep -c '^>')" = 8
# The 5-minute groups (7-day baselines) every second too, so that their panels have data.
sed 's/^\(\s*interval:\) 5m$/\1 1s/' "$SRC/deploy/prometheus/rules/diskprobe-recording.rules.yml" >rules/diskprobe-recording.rules.yml
sed 's/^\(\s*for:\).*/\1 5s/' "$SRC/deploy/prometheus/rules/diskprobe-alerts.rules.yml" >rules/diskprobe-alerts.rules.yml
check "promtool check config on the test copy" bash -c "promtool check config prometheus.yml >/dev/null"
cat >file_sd/diskprobe-e2e.yml <<YML
- targets: ['$REAL_ADDR']
  labels: {site: machine}
- targets: ['$PI4_ADDR', '$PI3BPLUS_ADDR', '$CM4_ADDR', '$USB_ADDR']
  labels: {site: fixtures}
YML
check "Prometheus started with the shipped configuration" start_prometheus prometheus.yml --log.level=warn
wait_for_up diskprobe 5 || true
check "Prometheus scrapes the 5 exporters through file_sd (up: $UP)" test "$UP" = 5
# A few scrape and evaluation intervals, enough for 15 s of probe runs in every window.
sleep 20
rules_health=$(curl -sS "$PROM/api/v1/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | join(", ")')
check "every rule evaluates without error${rules_health:+ (failing: $rules_health)}" test -z "$rules_health"

firing() {  # firing ALERTNAME [jq condition on .labels]: the matching firing alerts, one per line
  curl -sS "$PROM/api/v1/alerts" | jq -r --arg n "$1" \
    ".data.alerts[] | select(.labels.alertname == \$n and .state == \"firing\") | .labels | select(${2:-true}) | tostring"
}
log "alerts firing before the fault:"
curl -sS "$PROM/api/v1/alerts" | jq -r '.data.alerts[] | "  \(.state) \(.labels.alertname) \(.labels.instance) \(.labels.device // "")"' | sort
check "DiskprobeProbeFailing is not firing for card $A before the fault" \
  test -z "$(firing DiskprobeProbeFailing ".device == \"$A\"")"

# ---------------------------------------------------------------------------------------------
log "fault: every read of card $A fails with EIO from now on"
touch fail-A
# (at an offset not read before: FUSE may serve a block it has seen from its cache)
ADEV=/dev/$A
check "a direct read of $A fails now" bash -c "! dd if=$ADEV of=/dev/null bs=4096 skip=54321 count=1 iflag=direct status=none 2>/dev/null"
got=""
start=$(date +%s)
for _ in $(seq 1 120); do
  got=$(firing DiskprobeProbeFailing ".device == \"$A\"")
  [ -n "$got" ] && break
  sleep 1
done
log "after $(( $(date +%s) - start )) s: $got"
check "DiskprobeProbeFailing reaches firing for card $A" test -n "$got"
# The same reads, failed, reach the kernel log ("I/O error, dev loopN ..."): the kmsg collector
# counts them and DiskprobeKernelIOErrors fires (no `for:` in the shipped rule).
got=""
for _ in $(seq 1 30); do
  got=$(firing DiskprobeKernelIOErrors ".device == \"$A\"")
  [ -n "$got" ] && break
  sleep 1
done
check "DiskprobeKernelIOErrors reaches firing for card $A: $got" test -n "$got"
log "alerts after the fault:"
curl -sS "$PROM/api/v1/alerts" | jq -r '.data.alerts[] | "  \(.state) \(.labels.alertname) \(.labels.instance) \(.labels.device // "") \(.labels.probe // "")"' | sort
# The panel queries after the fault: the failure panels leave out series that stay at zero, and
# the firing-alerts panel lists firing alerts, so a fleet without a fault leaves them empty.
log "every panel query of every dashboard"
# Two panels need what this machine cannot have: an NVMe controller answering the SMART log (the
# NVMe guest test, tests/e2e/nvme_qemu_e2e.sh, covers those series) and a device whose reported
# wear moved within the projection's window (the days-left query; its rules have promtool tests,
# tests/prometheus/rules_life_test.yml). Their queries still run, and must return nothing here.
python3 "$SRC/tests/e2e/dashboard_queries.py" "$PROM" "$SRC/dashboards/fleet-overview.json" "$SRC/dashboards/node-detail.json" \
  "--no-data=NVMe health (SMART log)" "--no-data=The ten devices with the least life left#A" | tee panels.txt
check "every panel query returns at least one series" test "${PIPESTATUS[0]}" = 0

python3 "$SRC/tests/e2e/dashboard_queries.py" "$PROM" "$SRC/dashboards/node-detail.json" --annotations | tee annotations.txt
check "the node detail's probe-failure annotation shows the fault" \
  grep -Eq '^diskprobe-node-detail +Probe failures +annotation +[1-9]' annotations.txt

log "exporter down: stop the cm4 exporter"
kill "$PID_cm4"
got=""
for _ in $(seq 1 60); do
  got=$(firing DiskprobeExporterDown ".instance == \"$CM4_ADDR\"")
  [ -n "$got" ] && break
  sleep 1
done
check "DiskprobeExporterDown reaches firing for $CM4_ADDR" test -n "$got"

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all dashboard end-to-end checks passed"
