#!/usr/bin/env bash
# The fleet path for real: 20 exporters on the Raspberry Pi fixture roots (three of them probing
# a loop device presented as their card, the way dashboards_e2e.sh does) are scraped by a
# Prometheus in agent mode with the shipped diskprobe job (deploy/prometheus/prometheus.yml) and
# the shipped remote-write relabelling (deploy/prometheus/remote-write.example.yml), which
# remote-writes to a central Prometheus with the remote-write receiver on. The shipped rules run
# at the central one (their `for:` as shipped; only the evaluation interval is 1 s).
# Checks at the central Prometheus: all 20 targets' series arrive; every panel query of both
# dashboards returns series; and kernel I/O errors injected for one card fire exactly the
# expected alerts there (DiskprobeKernelIOErrors for that card, DiskprobeUnderVoltageStorageErrors
# if the node reports under-voltage) and no others. Prints series per node and samples/s.
# Needs root (loop devices, device nodes); skips (77) outside CI without it, fails under CI=true.
# Usage: fleet_remote_write.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null; then
  [ "${CI:-}" = true ] && { echo "FAIL: needs root and losetup under CI" >&2; exit 1; }
  echo "SKIP: needs root (loop devices)"; exit 77
fi
for tool in curl jq prometheus python3 mknod; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
LOOPS=()
cleanup_loops() { local l; for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done; }
trap 'cleanup || true; cleanup_loops' EXIT
cd "$E2E_WORK"
N=20
ROOTS=(pi3bplus pi4 cm4 pi4-usb faults)

# Three exporters probe a card: a loop device over a sparse file of the fixture card's size, whose
# major:minor is written into the fixture copy's sysfs and given a node in a private devfs.
cat >probe.yml <<'YML'
probes:
  state_directory: STATE
  busy_threshold: 1
  defaults:
    randread: {interval: 5s}
    seqread: {interval: 10s, size: 1MiB}
    write: {enabled: false}
    fsync: {enabled: false}
    verify: {enabled: false}
YML
: >file_sd.yml
grep -v '^#' "$SRC"/tests/fixtures/samples/smartctl/01-sat-*.json >smart-report.json
printf '#!/bin/sh\ncat %s/smart-report.json\n' "$E2E_WORK" >smartctl
chmod +x smartctl
for i in $(seq 0 $((N - 1))); do
  n=${ROOTS[i % 5]}
  R=$E2E_WORK/root-$i
  cp -a "$SRC/tests/fixtures/roots/$n" "$R"
  : >kmsg-$i
  [ -f "$R/kmsg" ] && cp "$R/kmsg" kmsg-$i
  args=(--no-collector.probes)
  if [ "$i" -lt 3 ]; then
    truncate -s $(( $(cat "$R/sys/block/mmcblk0/size") * 512 )) card-$i.img
    L=$(losetup -f --show card-$i.img)
    LOOPS+=("$L")
    mm=$(stat -c '%t:%T' "$L")
    echo "$((16#${mm%:*})):$((16#${mm#*:}))" >"$(readlink -f "$R/sys/block/mmcblk0")/dev"
    mkdir -p dev-$i state-$i
    mknod dev-$i/mmcblk0 b $((16#${mm%:*})) $((16#${mm#*:}))
    sed "s#STATE#$E2E_WORK/state-$i#" probe.yml >probe-$i.yml
    args=(--config.file=probe-$i.yml --path.devfs="$E2E_WORK/dev-$i")
  fi
  if [ "$n" = pi4-usb ]; then
    # Its USB SSD (sda) answers smartctl with a real SSD's recorded report (a stand-in smartctl).
    printf 'health: {smart_interval: 1h, smartctl_path: %s/smartctl}\n' "$E2E_WORK" >smart-$i.yml
    args+=(--config.file=smart-$i.yml --path.devfs="$E2E_WORK")
  fi
  dbg=$R/debug
  [ -d "$dbg" ] || dbg=$R/sys/kernel/debug
  "$EXPORTER" "${args[@]}" --path.sysfs="$R/sys" --path.procfs="$R/proc" --path.rootfs="$R" \
    --path.debugfs="$dbg" --path.kmsg="$E2E_WORK/kmsg-$i" --web.listen-address=127.0.0.1:0 2>exporter-$i.log &
  E2E_PIDS+=($!)
  PIDS[i]=$!
done
for i in $(seq 0 $((N - 1))); do
  addr=$(listen_address exporter-$i.log "${PIDS[i]}")
  # Node names as file_sd would give them (an instance set there is kept by the relabelling).
  printf -- "- targets: ['%s']\n  labels: {instance: node-%02d-%s, site: fleet}\n" "$addr" "$i" "${ROOTS[i % 5]}" >>file_sd.yml
done
log "$N exporters started (3 probing loop-backed cards)"

# Central: the shipped rules, evaluated every second (the 5-minute baseline groups too).
CPORT=$(free_port)
mkdir -p rules
sed 's/^\(\s*interval:\) 5m$/\1 1s/' "$SRC/deploy/prometheus/rules/diskprobe-recording.rules.yml" >rules/recording.yml
cp "$SRC/deploy/prometheus/rules/diskprobe-alerts.rules.yml" rules/alerts.yml
cat >central.yml <<YML
global: {evaluation_interval: 1s}
rule_files: [$E2E_WORK/rules/recording.yml, $E2E_WORK/rules/alerts.yml]
YML
# Agent: the shipped diskprobe job (file_sd path and intervals rewritten) and the shipped
# remote-write relabelling, sending to the central one.
python3 - "$SRC" "$E2E_WORK" "$CPORT" <<'PY'
import sys, yaml
src, work, port = sys.argv[1:]
job = [j for j in yaml.safe_load(open(f"{src}/deploy/prometheus/prometheus.yml"))["scrape_configs"] if j["job_name"] == "diskprobe"][0]
job["file_sd_configs"] = [{"files": [f"{work}/file_sd.yml"]}]
job["scrape_interval"], job["scrape_timeout"] = "2s", "2s"
rw = yaml.safe_load(open(f"{src}/deploy/prometheus/remote-write.example.yml"))["remote_write"][0]
rw = {"url": f"http://127.0.0.1:{port}/api/v1/write", "write_relabel_configs": rw.get("write_relabel_configs", []),
      "queue_config": {"batch_send_deadline": "1s"}}
yaml.safe_dump({"global": {"scrape_interval": "2s"}, "scrape_configs": [job], "remote_write": [rw]},
               open(f"{work}/agent.yml", "w"), sort_keys=False)
PY
prometheus --config.file=central.yml --storage.tsdb.path="$E2E_WORK/central-tsdb" --web.enable-remote-write-receiver \
  --web.listen-address=127.0.0.1:$CPORT --log.level=warn >central.log 2>&1 &
E2E_PIDS+=($!)
PROM=http://127.0.0.1:$CPORT
for _ in $(seq 1 100); do curl -sf "$PROM/-/ready" >/dev/null && break; sleep 0.1; done
check "central Prometheus ready (remote-write receiver on)" curl -sf "$PROM/-/ready"
APORT=$(free_port)
prometheus --enable-feature=agent --config.file=agent.yml --storage.agent.path="$E2E_WORK/agent-wal" \
  --web.listen-address=127.0.0.1:$APORT --log.level=warn >agent.log 2>&1 &
E2E_PIDS+=($!)
up=0
for _ in $(seq 1 60); do
  up=$(query_value 'count(up{job="diskprobe"} == 1)')
  [ "${up:-0}" = "$N" ] && break
  sleep 1
done
check "the central Prometheus has up == 1 for all $N targets, through agent and remote write (got ${up:-0})" test "${up:-0}" = "$N"
sleep 12   # windows for the rates and the 1 h recording rules to have two samples, probes to run
log "series per node at the central Prometheus:"
query 'sort(count by (instance) ({job="diskprobe"}))' | jq -r '.data.result[] | "  \(.metric.instance // "(none: fleet-level recording rules)") \(.value[1])"'
a=$(curl -sS "$PROM/metrics" | awk '/^prometheus_tsdb_head_samples_appended_total/ {s += $NF} END {print s}')
sleep 5
b=$(curl -sS "$PROM/metrics" | awk '/^prometheus_tsdb_head_samples_appended_total/ {s += $NF} END {print s}')
log "central: $(query_value 'count({job="diskprobe"})') diskprobe series, $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (b - a) / 5 }') samples/s appended (remote write and rules)"
rules_health=$(curl -sS "$PROM/api/v1/rules" | jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | join(", ")')
check "every rule evaluates without error at the central${rules_health:+ (failing: $rules_health)}" test -z "$rules_health"

firing_set() {
  curl -sS "$PROM/api/v1/alerts" | jq -r '.data.alerts[] | select(.state == "firing") | "\(.labels.alertname) \(.labels.instance) \(.labels.device // "")"' | sort
}
firing_set >before.txt
log "alerts firing at the central before the fault:"
sed 's/^/  /' before.txt
# The fault: the kernel of node 01 (a Pi 4 probing its card) logs I/O errors for its card.
T=node-01-pi4
last=$(tail -n 1 kmsg-1 | cut -d, -f2)
seq0=$(( ${last:-0} + 1 ))
for k in 0 1 2; do
  printf '3,%d,%d,-;I/O error, dev mmcblk0, sector %d op 0x0:(READ) flags 0x800 phys_seg 1 prio class 2\n' \
    $((seq0 + k)) $((900000000 + k)) $((2048 * k)) >>kmsg-1
done
want="DiskprobeKernelIOErrors $T mmcblk0"
uv=$(grep -c "^DiskprobeUnderVoltage $T " before.txt || true)
[ "$uv" != 0 ] && want="$want"$'\n'"DiskprobeUnderVoltageStorageErrors $T "
for _ in $(seq 1 60); do
  firing_set >after.txt
  grep -qxF "DiskprobeKernelIOErrors $T mmcblk0" after.txt && break
  sleep 1
done
sleep 5
firing_set >after.txt
new=$(comm -13 before.txt after.txt)
gone=$(comm -23 before.txt after.txt)
log "alerts new after the fault: ${new:-none}; resolved: ${gone:-none}"
check "the injected card failure fires exactly: $(echo "$want" | tr '\n' ';')" test "$new" = "$(echo "$want" | sort)"
check "no alert resolved meanwhile" test -z "$gone"

log "every panel query of both dashboards at the central Prometheus"
# The fixture exporters cannot give two things: write probes (their probe directory would have to
# be on the fixture's card) and changing block counters (the fixtures' stat files are static, so
# "Await" has no completed requests), and no device whose reported wear moved within the life
# projection's window (the days-left query), nor an NVMe controller (the NVMe health table). Exactly those panel queries may be empty here; every other
# must return series (dashboards_e2e.sh checks all of them on real devices).
ALLOWED_EMPTY="diskprobe-fleet-overview / Health: one row per node and device, worst first / F
diskprobe-fleet-overview / Health: one row per node and device, worst first / G
diskprobe-fleet-overview / Card models ranked per board family (median of per-card p99) / C
diskprobe-fleet-overview / Card models ranked per board family (median of per-card p99) / D
diskprobe-fleet-overview / Card models ranked per board family (median of per-card p99) / E
diskprobe-fleet-overview / Card models ranked per board family (median of per-card p99) / F
diskprobe-fleet-overview / fsync p99 (1 h window) / A
diskprobe-fleet-overview / The ten devices with the least life left / A
diskprobe-node-detail / NVMe health (SMART log) / A
diskprobe-node-detail / NVMe health (SMART log) / B
diskprobe-node-detail / NVMe health (SMART log) / C
diskprobe-node-detail / NVMe health (SMART log) / D
diskprobe-node-detail / NVMe health (SMART log) / E
diskprobe-node-detail / NVMe health (SMART log) / F
diskprobe-node-detail / NVMe health (SMART log) / G
diskprobe-node-detail / NVMe health (SMART log) / H
diskprobe-node-detail / Probe bytes per day / A
diskprobe-node-detail / Write budget left today / A
diskprobe-node-detail / Await / A
diskprobe-node-detail / Await / B"
python3 "$SRC/tests/e2e/dashboard_queries.py" "$PROM" "$SRC/dashboards/fleet-overview.json" "$SRC/dashboards/node-detail.json" \
  >panels.txt 2>panels.err || true
tail -n 1 panels.txt
sed -n 's/^no series: //p' panels.err | tr ';' '\n' | sed 's/^ //' | sort >empty.txt
unexpected=$(comm -23 empty.txt <(echo "$ALLOWED_EMPTY" | sort))
check "every panel query returns series at the central Prometheus, but the write-probe and Await ones ($(wc -l <empty.txt) empty)${unexpected:+; also empty: $unexpected}" \
  test -z "$unexpected"
[ "$FAILURES" = 0 ] || { echo "$FAILURES check(s) failed" >&2; exit 1; }
echo "fleet through agent and remote write: all checks passed"
