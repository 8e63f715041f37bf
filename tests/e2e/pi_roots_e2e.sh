#!/usr/bin/env bash
# The real binary on each Raspberry Pi fixture root (tests/fixtures/roots/<name>): every collector
# succeeds, promtool check metrics is clean, and with an unreadable debugfs mmc_ios fails alone with
# one log line. Usage: pi_roots_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
set +e   # the checks below read exit codes (grep) themselves
ROOTS=$SRC/tests/fixtures/roots
command -v promtool >/dev/null || { echo "missing promtool: run scripts/install-deps.sh test" >&2; exit 1; }
WORK=$E2E_WORK

scrape_root() {  # name debugfs -> $WORK/<name>.prom, $WORK/<name>.log
  local r=$ROOTS/$1 addr pid
  # mounts and kmsg have their own root (tests/fixtures/roots/faults, faults_e2e.sh): these roots
  # have no mountinfo, and the host's /dev/kmsg is no part of them.
  "$EXPORTER" --web.listen-address=127.0.0.1:0 --no-collector.probes --no-collector.mounts --no-collector.kmsg \
    --path.sysfs="$r/sys" \
    --path.procfs="$r/proc" --path.rootfs="$r" --path.debugfs="$2" 2>"$WORK/$1.log" &
  pid=$!
  E2E_PIDS+=("$pid")
  addr=$(listen_address "$WORK/$1.log" "$pid")
  curl -sf "http://$addr/metrics" >"$WORK/$1.prom" && curl -sf -o /dev/null "http://$addr/metrics"
  kill "$pid"; wait "$pid" 2>/dev/null
}

for name in pi3bplus pi4 cm4; do
  scrape_root "$name" "$ROOTS/$name/debug"
  out=$(promtool check metrics <"$WORK/$name.prom" 2>&1)
  [ -z "$out" ] && ok "$name: promtool check metrics is clean" || fail "$name: promtool: $out"
  grep -q 'diskprobe_collector_success{collector="[a-z_]*"} 0' "$WORK/$name.prom" \
    && fail "$name: a collector failed: $(grep 'success.* 0$' "$WORK/$name.prom")" || ok "$name: every collector succeeded"
  grep -q '^diskprobe_mmc_ios_actual_clock_hertz\|^diskprobe_mmc_ios_clock_hertz' "$WORK/$name.prom" \
    && ok "$name: ios series present" || fail "$name: no ios series"
done

scrape_root pi4 "$WORK/no-debugfs"
grep -q '^diskprobe_collector_success{collector="mmc_ios"} 0$' "$WORK/pi4.prom" && ok "unreadable debugfs: mmc_ios success 0" \
  || fail "unreadable debugfs: mmc_ios success is not 0"
grep -q '^diskprobe_mmc_ios_' "$WORK/pi4.prom" && fail "unreadable debugfs: ios series present" || ok "unreadable debugfs: ios series absent"
n=$(grep -c 'collector=mmc_ios' "$WORK/pi4.log")
[ "$n" = 1 ] && ok "unreadable debugfs: one log line for two scrapes" || fail "unreadable debugfs: $n log lines"
out=$(promtool check metrics <"$WORK/pi4.prom" 2>&1)
[ -z "$out" ] && ok "unreadable debugfs: promtool clean" || fail "unreadable debugfs: promtool: $out"

[ "$FAILURES" = 0 ] || { echo "$FAILURES failure(s)"; exit 1; }
