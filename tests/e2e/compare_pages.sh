#!/usr/bin/env bash
# Two builds of the exporter on every fixture root (tests/fixtures/roots/*), every collector on,
# probes included (they run against the root's devices, which do not exist under /dev here), and
# their /metrics pages compared. For a change that must not change the page (a refactoring):
#   compare_pages.sh <old diskprobe_exporter> <new diskprobe_exporter>
# Masked before comparing, as they differ between any two runs: sample values of the collector
# durations, the reload and probe-run timestamps, probe durations/throughput/IOPS, and the
# revision label of diskprobe_build_info. Everything else (names, HELP, TYPE, labels, values,
# order) is compared byte for byte.
# Prints per root "identical", or "same families, order differs" with the families that moved,
# or the diff. Also runs promtool check metrics on each new page.
# KEEP_DIR=<dir> keeps the pages (<root>.old, <root>.new) and the logs there.
# Exit status: 0 when every root is identical or differs only in family order and ALLOW_ORDER=1,
# 1 otherwise, 2 on a set-up problem.
set -euo pipefail
OLD=$(realpath "${1:?usage: compare_pages.sh <old exporter> <new exporter>}")
NEW=$(realpath "${2:?usage: compare_pages.sh <old exporter> <new exporter>}")
ROOTS=$(realpath "$(dirname "$0")/../fixtures/roots")
WORK=$(mktemp -d); PIDS=()
trap 'rc=$?; set +e; for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$WORK"; exit $rc' EXIT
command -v promtool >/dev/null || { echo "missing promtool: run scripts/install-deps.sh test" >&2; exit 2; }

# Starts $1 on root $2, writes two scrapes' second page to $3 (the second comes from the caches).
scrape() {
  local bin=$1 r=$2 out=$3 addr= pid debugfs=$2/debug kmsg=$2/kmsg
  [ -d "$debugfs" ] || debugfs=$WORK/no-debugfs
  [ -e "$kmsg" ] || kmsg=$WORK/no-kmsg
  local state=$WORK/state  # the same path for both: it is a label value
  rm -rf "$state"; mkdir -p "$state"
  printf 'probes: {state_directory: %s}\n' "$state" >"$state.yml"
  "$bin" --web.listen-address=127.0.0.1:0 --config.file="$state.yml" --path.sysfs="$r/sys" \
    --path.procfs="$r/proc" --path.rootfs="$r" --path.debugfs="$debugfs" --path.kmsg="$kmsg" \
    2>"$out.log" & pid=$!; PIDS+=("$pid")
  for _ in $(seq 1 100); do
    addr=$(sed -n 's/.*msg=listening address=\([^ ]*\).*/\1/p' "$out.log")
    [ -n "$addr" ] && break; sleep 0.05
  done
  [ -n "$addr" ] || { cat "$out.log" >&2; exit 2; }
  curl -sf -o /dev/null "http://$addr/metrics"
  curl -sf "http://$addr/metrics" >"$out"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

mask() {
  sed -E \
    -e 's/^(diskprobe_collector_duration_seconds\{[^}]*\}) .*/\1 MASKED/' \
    -e 's/^(diskprobe_config_last_reload_success_timestamp_seconds) .*/\1 MASKED/' \
    -e 's/^(diskprobe_probe_last_(run_timestamp_seconds|duration_seconds|throughput_bytes_per_second|iops)\{[^}]*\}) .*/\1 MASKED/' \
    -e 's/^(diskprobe_build_info\{revision=")[^"]*/\1MASKED/' "$1"
}

# One line per family: its block (HELP, TYPE, samples) joined, sorted: equal when only the order differs.
blocks() { awk '/^# HELP /{ if (b != "") print b; b = $0; next } { b = b "\\n" $0 } END { if (b != "") print b }' "$1" | sort; }
order() { sed -n 's/^# HELP \([^ ]*\) .*/\1/p' "$1"; }

status=0
for r in "$ROOTS"/*/; do
  r=${r%/}; name=$(basename "$r")
  scrape "$OLD" "$r" "$WORK/$name.old"
  scrape "$NEW" "$r" "$WORK/$name.new"
  mask "$WORK/$name.old" >"$WORK/$name.old.m"; mask "$WORK/$name.new" >"$WORK/$name.new.m"
  lint=$(promtool check metrics <"$WORK/$name.new" 2>&1) || true
  families=$(grep -c '^# HELP ' "$WORK/$name.new")
  if cmp -s "$WORK/$name.old.m" "$WORK/$name.new.m"; then
    echo "$name: identical ($families families, $(wc -l <"$WORK/$name.new") lines)"
  elif cmp -s <(blocks "$WORK/$name.old.m") <(blocks "$WORK/$name.new.m"); then
    echo "$name: same families, order differs; order old -> new:"
    diff <(order "$WORK/$name.old.m") <(order "$WORK/$name.new.m") | sed 's/^/    /' || true
    [ "${ALLOW_ORDER:-0}" = 1 ] || status=1
  else
    echo "$name: DIFFERS"
    diff "$WORK/$name.old.m" "$WORK/$name.new.m" | head -40 | sed 's/^/    /' || true
    status=1
  fi
  [ -z "${KEEP_DIR:-}" ] || { mkdir -p "$KEEP_DIR"; cp "$WORK/$name".{old,new,old.log,new.log} "$KEEP_DIR/"; }
  if [ -n "$lint" ]; then echo "$name: promtool: $lint"; status=1; else echo "$name: promtool check metrics clean"; fi
done
exit $status
