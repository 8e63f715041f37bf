#!/usr/bin/env bash
# Fleet scale: how many series one node exports with the default configuration, for "a
# Raspberry Pi with one card and one USB disk", and what that costs Prometheus at the default
# scrape interval for 10, 100 and 1,000 Pis. Asserts the total is at most 500 (the target for one node)
# and that docs/operations.md ("Fleet scale") states the same total.
#
# Two measurements, added up:
#   1. Every collector but the probes, on the fixture root tests/fixtures/roots/pi4-usb (a Pi 4
#      with its SD card mmcblk0 and a USB stick sda, their filesystems, config.txt, debugfs ios, a
#      boot kernel log), with the default configuration. The probes cannot run there (no /dev
#      nodes; they would open this machine's /dev and write to its /var/lib), so this run sets
#      only `probes: {enabled: false}`.
#   2. The probes, for real, on this machine: two loop devices stand for the card and the USB
#      disk. The card holds the state directory (an ext4 filesystem on it), as the SD card holds
#      the root filesystem of a Pi: it gets every probe the default configuration enables
#      (randread, seqread, write, fsync, verify); the USB disk gets the read probes (randread,
#      seqread). The probe kinds are read from config/default.yml and checked against what the
#      exporter runs. Only the intervals are shortened (2 s) and the busy check is off, so every
#      probe completes a run within seconds: the set of series does not depend on either. The
#      count is taken once every (device, probe) has completed a successful run (steady state:
#      the last_* gauges exist).
# Then the Prometheus examples the "Fleet scale" section includes are checked: promtool check
# config on deploy/prometheus/remote-write.example.yml and federation.example.yml, the docs quote
# them verbatim, the federation match[] selects every recording rule and every family the
# fleet-overview dashboard reads (the count per node is printed), and the node's series go
# through the remote_write relabelling (emulated in fleet_scale.py): every metric the dashboards
# and the rules use keeps series, the alert thresholds' buckets and +Inf stay.
# Needs root (loop devices, mount) and losetup, mkfs.ext4, promtool, python3 with PyYAML: skips
# (77) outside CI without root, fails under CI=true.
# Usage: fleet_scale.sh <path to diskprobe_exporter>
set -euo pipefail
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: needs root (loop devices, mount) under CI" >&2; exit 1; }
  echo "SKIP: needs root for the loop devices of the probe measurement"; exit 77
fi
for tool in curl losetup mkfs.ext4 promtool python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
python3 -c 'import yaml' || { echo "missing python3-yaml" >&2; exit 1; }

LOOPS=(); MNT=
fleet_cleanup() {
  local l
  [ -n "$MNT" ] && { umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true; }
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
  cleanup || true
}
trap fleet_cleanup EXIT
cd "$E2E_WORK"

INTERVAL=$(python3 -c 'import sys, yaml; c = yaml.safe_load(open(sys.argv[1]))
print(next(j for j in c["scrape_configs"] if j["job_name"] == "diskprobe").get("scrape_interval", c["global"]["scrape_interval"]))' \
  "$SRC/deploy/prometheus/prometheus.yml")
INTERVAL_S=$(python3 -c 'import re, sys; m = re.fullmatch(r"(\d+)(s|m)", sys.argv[1]); print(int(m[1]) * (60 if m[2] == "m" else 1))' "$INTERVAL")
log "default scrape interval (deploy/prometheus/prometheus.yml, job diskprobe): $INTERVAL"

# --- 1. the node's collectors on the Pi 4 fixture root ----------------------------------------
ROOT=$SRC/tests/fixtures/roots/pi4-usb
# SMART of the USB disk: as on a node with smartmontools but without the SMART drop-in (the
# shipped unit grants no CAP_SYS_RAWIO), whatever this machine has. smartctl is a stand-in that
# exists (it is never run: without CAP_SYS_RAWIO the reader reports `permission` unrun), and the
# exporter runs without CAP_SYS_RAWIO in its bounding set, also as root.
printf '#!/bin/sh\nexit 0\n' >smartctl; chmod +x smartctl
printf 'probes:\n  enabled: false\nhealth: {smartctl_path: %s/smartctl}\n' "$E2E_WORK" >no-probes.yml
log "exporter on $ROOT (default configuration, probes off: they are measured below; no CAP_SYS_RAWIO)"
RT_SAVED=("${RT[@]}")
RT=(setpriv --bounding-set=-sys_rawio --inh-caps=-sys_rawio "${RT[@]}")
start_exporter --config.file=no-probes.yml --path.sysfs="$ROOT/sys" --path.procfs="$ROOT/proc" \
  --path.rootfs="$ROOT" --path.debugfs="$ROOT/debug" --path.bootconfig="$ROOT/boot/firmware/config.txt" \
  --path.kmsg="$ROOT/kmsg"
RT=("${RT_SAVED[@]}")
# The kmsg follower and the SMART reader work in their threads: wait for the first SMART pass
# (its series exist from then on) and the kernel log's records, up to 30 s on a busy machine.
for _ in $(seq 1 300); do
  scrape >node.prom
  grep -q '^diskprobe_smart_up{device="sda"}' node.prom && grep -q '^diskprobe_kernel_messages_total{device="sda"' node.prom && break
  sleep 0.1
done
sleep 1; scrape >node.prom
stop_exporter
check "fixture: promtool check metrics is clean" bash -c "[ -z \"\$(promtool check metrics <node.prom 2>&1)\" ]"
check "fixture: every collector succeeded" bash -c "! grep -q '^diskprobe_collector_success{.*} 0' node.prom"
for dev in mmcblk0 sda; do
  check "fixture: $dev is monitored" grep -q "^diskprobe_block_info{device=\"$dev\"" node.prom
done
check "fixture: the card's identity, SD bus, board, config.txt, mounts and kernel log are there" bash -c \
  "grep -q '^diskprobe_mmc_card_info' node.prom && grep -q '^diskprobe_mmc_ios_clock_hertz' node.prom &&
   grep -q '^diskprobe_board_info' node.prom && grep -q '^diskprobe_boot_sd_config_info' node.prom &&
   grep -q '^diskprobe_filesystem_read_only{device=\"sda\"' node.prom &&
   grep -q '^diskprobe_kernel_messages_total{device=\"sda\"' node.prom"
check "fixture: SMART of sda is read and refused for want of CAP_SYS_RAWIO (smart_up 0, reason permission)" bash -c \
  "grep -q '^diskprobe_smart_up{device=\"sda\"} 0' node.prom &&
   grep -q '^diskprobe_smart_read_failures_total{device=\"sda\",reason=\"permission\"}' node.prom"
check "fixture: no probe series (probes off)" bash -c "! grep -q '^diskprobe_probe_' node.prom"

# --- 2. the probes on two real block devices ---------------------------------------------------
truncate -s 128M card.img usb.img
CARD=$(losetup -f --show --direct-io=on card.img); LOOPS+=("$CARD")
USB=$(losetup -f --show --direct-io=on usb.img); LOOPS+=("$USB")
CARD=${CARD#/dev/}; USB=${USB#/dev/}
mkfs.ext4 -q -F "/dev/$CARD"
MNT=$E2E_WORK/card-root; mkdir -p "$MNT"; mount -o noatime "/dev/$CARD" "$MNT"
log "card: $CARD (ext4 with the state directory), USB disk: $USB (raw)"
read -r ENABLED WRITE_KINDS < <(python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))["probes"]["defaults"]
on = [k for k, v in d.items() if v.get("enabled")]
print(",".join(on), ",".join(k for k in on if k not in ("randread", "seqread")))' "$SRC/config/default.yml")
log "probes the default configuration enables: $ENABLED (need the probe file: $WRITE_KINDS)"
{
  printf 'devices:\n  include: [%s, %s]\n' "$CARD" "$USB"
  printf 'probes:\n  state_directory: %s/state\n  busy_threshold: 1\n  defaults:\n' "$MNT"
  for k in ${ENABLED//,/ }; do printf '    %s: {interval: 2s}\n' "$k"; done
} >probes.yml
cat probes.yml
start_exporter --config.file=probes.yml --no-collector.kmsg
# Steady state: each (device, probe) has finished a successful run (last_iops exists).
expected=$(( $(echo "$ENABLED" | tr ',' '\n' | wc -l) + 2 ))
for _ in $(seq 1 60); do
  scrape >probes.prom
  n=$(grep -Ec "^diskprobe_probe_last_iops\{device=\"($CARD|$USB)\"" probes.prom || true)
  [ "$n" -ge "$expected" ] && break
  sleep 1
done
stop_exporter
check "probes: every (device, probe) completed a successful run ($n of $expected)" [ "$n" -ge "$expected" ]
card_kinds=$(sed -n "s/^diskprobe_probe_runs_total{device=\"$CARD\",probe=\"\([a-z]*\)\".*/\1/p" probes.prom | sort -u | paste -sd,)
usb_kinds=$(sed -n "s/^diskprobe_probe_runs_total{device=\"$USB\",probe=\"\([a-z]*\)\".*/\1/p" probes.prom | sort -u | paste -sd,)
want_card=$(echo "$ENABLED" | tr ',' '\n' | sort | paste -sd,)
want_usb=$(echo "$ENABLED" | tr ',' '\n' | grep -Ev "^(${WRITE_KINDS//,/|})$" | sort | paste -sd,)
check "probes: the card runs the default probes ($card_kinds)" [ "$card_kinds" = "$want_card" ]
check "probes: the USB disk runs the default read probes ($usb_kinds)" [ "$usb_kinds" = "$want_usb" ]
check "probes: the probe directory is on the card" grep -q "^diskprobe_probe_directory_up{device=\"$CARD\".*} 1" probes.prom

# --- the table, the total, the fleet -----------------------------------------------------------
log "series of one node: Pi 4, SD card (root filesystem, every default probe) + USB disk (read probes)"
python3 "$SRC/tests/deploy/fleet_scale.py" count node.prom probes.prom "$CARD" "$USB" "$INTERVAL_S" series.jsonl \
  | tee table.txt || true
TOTAL=$(sed -n 's/^TOTAL=//p' table.txt)
check "a node exports $TOTAL series, at most 500" [ -n "$TOTAL" ] && [ "$TOTAL" -le 500 ]
check "docs/operations.md (Fleet scale) states the measured total ($TOTAL)" \
  grep -q "^| \*\*total\*\* .*| \*\*$TOTAL\*\* |$" "$SRC/docs/operations.md"
RATE=$(python3 -c 'import sys; print("%.1f" % (int(sys.argv[1]) / int(sys.argv[2])))' "$TOTAL" "$INTERVAL_S")
check "docs/operations.md states the rate: $TOTAL / $INTERVAL_S s = $RATE samples/s per node" \
  grep -q "$TOTAL / $INTERVAL_S s = $RATE samples/s per node" "$SRC/docs/operations.md"

# --- the Prometheus examples of the "Fleet scale" section --------------------------------------
for f in remote-write.example.yml federation.example.yml; do
  check "promtool check config deploy/prometheus/$f" promtool check config "$SRC/deploy/prometheus/$f"
  # The docs quote each file's YAML (its comment header aside) verbatim.
  grep -v '^#' "$SRC/deploy/prometheus/$f" >"$f.body"
  check "docs/operations.md quotes deploy/prometheus/$f" python3 -c 'import sys
doc = open(sys.argv[1]).read(); body = open(sys.argv[2]).read().strip()
sys.exit(0 if "```yaml\n" + body + "\n```" in doc else 1)' "$SRC/docs/operations.md" "$f.body"
done
if python3 "$SRC/tests/deploy/fleet_scale.py" federation series.jsonl "$SRC/deploy/prometheus/federation.example.yml" "$SRC" \
   | tee federation.txt; then
  ok "federation: match[] selects every recording rule and every family of the fleet overview"
else
  fail "federation selectors"
fi
# The check can fail: without the fleet-overview families the dashboard would be half empty.
grep -v '{job="diskprobe",__name__=~' "$SRC/deploy/prometheus/federation.example.yml" >broken-fed.yml
if python3 "$SRC/tests/deploy/fleet_scale.py" federation series.jsonl broken-fed.yml "$SRC" >broken-fed.txt; then
  fail "negative: federation of the recording rules alone passed the fleet-overview check"
else
  ok "negative: federation of the recording rules alone is refused ($(grep -o 'reads families.*' broken-fed.txt | cut -c1-60)...)"
fi
FEDERATED=$(sed -n 's/^FEDERATED=//p' federation.txt)
RULES=$(sed -n 's/^RULE_SERIES=//p' federation.txt)
check "docs/operations.md states the series per node with Prometheus' own and the rules ($TOTAL + 5 + $RULES)" \
  grep -q "$TOTAL + 5 + $RULES = $((TOTAL + 5 + RULES)) series" "$SRC/docs/operations.md"
check "docs/operations.md states the series per node federation brings ($FEDERATED)" \
  grep -q "$FEDERATED series per node" "$SRC/docs/operations.md"
if python3 "$SRC/tests/deploy/fleet_scale.py" relabel series.jsonl "$SRC/deploy/prometheus/remote-write.example.yml" "$SRC" \
   | tee relabel.txt; then
  ok "remote_write relabelling keeps what the dashboards and rules need"
else
  fail "remote_write relabelling"
fi
SENT=$(sed -n 's/.*series of a node -> \([0-9]*\) sent.*/\1/p' relabel.txt)
check "docs/operations.md states what the relabelling leaves ($TOTAL series; $SENT remain)" \
  grep -q "$TOTAL series through these rules; $SENT remain" "$SRC/docs/operations.md"
# The check can fail: a relabelling that drops every bucket but +Inf must be caught.
sed 's/(1e-04|0\\.0001|0\\.001|0\\.01|0\\.05|0\\.1|1|1\\.0|10|10\\.0|\\+Inf)/(\\+Inf)/' \
  "$SRC/deploy/prometheus/remote-write.example.yml" >broken-rw.yml
if grep -q "bucket;(\\\\+Inf)'" broken-rw.yml &&
   ! python3 "$SRC/tests/deploy/fleet_scale.py" relabel series.jsonl broken-rw.yml "$SRC" >broken.txt; then
  ok "negative: a relabelling that drops the threshold buckets is refused ($(grep -c FAIL broken.txt) finding(s))"
else
  fail "negative: a relabelling without the threshold buckets passed the check"
fi

[ "$FAILURES" = 0 ] || { echo "$FAILURES failure(s)"; exit 1; }
echo "fleet_scale: all checks passed"
