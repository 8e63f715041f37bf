#!/usr/bin/env bash
# End-to-end: the SD vendor health reader's error path on a real kernel. A loop device is a block
# device that does not implement MMC_IOC_CMD: the kernel answers CMD56 with EINVAL, as it does for
# any block device that is not an MMC card (a USB reader's sdX, a partition-less loop). Checks that
# the exporter reports that as a state (up 0, reason not_mmc, one log line), exports no health
# value and no zeros, keeps scraping without waiting on the card, and sends nothing at all when no
# card is configured (the default). Prints the cost figures of a pass and of the collector.
# Needs root and a free loop device (no FUSE): skips (77) outside CI without them, fails under
# CI=true. About 5 s.
# Usage: sd_cmd56_errors_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
command -v promtool >/dev/null || { echo "missing promtool: run scripts/install-deps.sh test" >&2; exit 1; }
cd "$E2E_WORK"
why=""
[ "$(id -u)" = 0 ] || why="not root"
losetup -f >/dev/null 2>&1 || why="${why:+$why, }no free loop device"
if [ -n "$why" ]; then
  if [ "${CI:-}" = true ]; then echo "FAIL: loop device impossible under CI: $why" >&2; exit 1; fi
  echo "SKIP: needs root and a loop device: $why"; exit 77
fi
LOOP_DEV=
cards_cleanup() { [ -n "$LOOP_DEV" ] && losetup -d "$LOOP_DEV" 2>/dev/null || true; }
truncate -s 16M card.img
LOOP_DEV=$(losetup -f --show card.img)
LOOP=${LOOP_DEV#/dev/}
log "loop device $LOOP_DEV"
metric() { awk -v k="$1" '$1 == k { print $2; found = 1 } END { if (!found) exit 1 }'; }

log "default config: no card listed, no command, no series"
start_exporter --no-collector.probes
scrape >default.txt
stop_exporter
check "no diskprobe_sd_health series without health.sd_vendor.devices" bash -c "! grep -q '^diskprobe_sd_health' default.txt"
check "sd_vendor collector succeeds" grep -q '^diskprobe_collector_success{collector="sd_vendor"} 1$' default.txt

log "health.sd_vendor.devices: [$LOOP]"
cat >config.yml <<YML
health:
  sd_vendor: {devices: [$LOOP], interval: 1m, timeout: 2s}
YML
start_exporter --no-collector.probes --config.file=config.yml
for i in $(seq 1 50); do
  scrape >on.txt
  grep -q "^diskprobe_sd_health_up{device=\"$LOOP\"}" on.txt && break
  sleep 0.1
done
scrape >on2.txt
out=$(promtool check metrics <on2.txt 2>&1)
check "promtool check metrics is clean" test -z "$out"
check "up 0" grep -q "^diskprobe_sd_health_up{device=\"$LOOP\"} 0$" on2.txt
check "one failed command, reason not_mmc (EINVAL: the ioctl is not the loop driver's)" \
  grep -q "^diskprobe_sd_health_read_failures_total{device=\"$LOOP\",reason=\"not_mmc\"} 1$" on2.txt
check "one command sent (a failure that holds for every layout ends the pass)" \
  grep -q "^diskprobe_sd_health_commands_total{device=\"$LOOP\"} 1$" on2.txt
check "no rejected reply (no reply at all)" bash -c "! grep -q '^diskprobe_sd_health_rejected_replies_total{' on2.txt"
for f in info life_used_ratio erase_count_average erase_count_max grown_bad_blocks spare_blocks power_cycles_total \
  abnormal_power_losses_total written_bytes_total last_success_timestamp_seconds; do
  check "no diskprobe_sd_health_$f series" bash -c "! grep -q '^diskprobe_sd_health_$f{' on2.txt"
done
n=$(grep -c 'cannot read SD vendor health' "$E2E_WORK/exporter.log" || true)
check "one log line for the state (got $n)" test "$n" = 1
grep 'cannot read SD vendor health' "$E2E_WORK/exporter.log" | head -n1
log "figures: pass wall $(metric "diskprobe_sd_health_read_duration_seconds{device=\"$LOOP\"}" <on2.txt) s," \
  "pass CPU $(metric "diskprobe_sd_health_read_cpu_seconds_total{device=\"$LOOP\"}" <on2.txt) s," \
  "collector in the scrape $(metric 'diskprobe_collector_duration_seconds{collector="sd_vendor"}' <on2.txt) s"
t0=$(date +%s%N)
for i in $(seq 1 20); do scrape >/dev/null; done
t1=$(date +%s%N)
log "figures: 20 scrapes in $(( (t1 - t0) / 1000000 )) ms"
log "reload with the card removed from the list: its series go"
cat >config.yml <<YML
health:
  sd_vendor: {devices: []}
YML
kill -HUP "$EXPORTER_PID"
sleep 0.5
scrape >off.txt
check "no series after the reload" bash -c "! grep -q '^diskprobe_sd_health_up{' off.txt"
stop_exporter

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
echo "all checks passed"
