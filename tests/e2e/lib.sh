# Shared helpers for the end-to-end tests (sourced). Each test gets its own work directory and
# cleans up every process it started.
set -euo pipefail

E2E_WORK=$(mktemp -d "${TMPDIR:-/tmp}/diskprobe-e2e.XXXXXX")
E2E_PIDS=()
FAILURES=0

cleanup() {
  local p
  for p in "${E2E_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${E2E_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  declare -F cards_cleanup >/dev/null && cards_cleanup
  rm -rf "$E2E_WORK"
}
trap cleanup EXIT

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; FAILURES=$((FAILURES + 1)); }
ok() { printf 'ok: %s\n' "$*"; }
check() {  # check "description" command...
  local what=$1; shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}

# deb_test_root BUILD: prints the path of the Debian 12 minbase root the deploy tests copy
# (<BUILD>/deb-test-root, about 200 MB, made once with debootstrap: network needed). Made under a
# lock: ctest runs the deploy tests two at a time, and two of them may find it missing at once.
deb_test_root() {
  local root=$1/deb-test-root
  (
    flock 9
    if [ ! -x "$root/bin/sh" ]; then
      command -v debootstrap >/dev/null || { echo "FAIL: no $root and no debootstrap" >&2; exit 1; }
      rm -rf "$root.tmp"
      debootstrap --variant=minbase bookworm "$root.tmp" http://deb.debian.org/debian >"$E2E_WORK/debootstrap.log" 2>&1 ||
        { tail -20 "$E2E_WORK/debootstrap.log" >&2; exit 1; }
      mv "$root.tmp" "$root"
    fi
  ) 9>"$root.lock" >&2 || return 1
  echo "$root"
}

# A TCP port nobody listens on right now.
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

# Starts Prometheus on a free port with CONFIG (extra flags after it), waits for /-/ready; sets
# PROM_PORT, PROM (base URL) and PROM_PID. A port taken between free_port and the bind (another
# test's listener on an ephemeral port) made Prometheus exit at once: then it tries again on
# another port, up to three times, and prints Prometheus' own last lines each time.
start_prometheus() {
  local cfg=$1 try
  shift
  for try in 1 2 3; do
    PROM_PORT=$(free_port)
    PROM=http://127.0.0.1:$PROM_PORT
    prometheus --config.file="$cfg" --storage.tsdb.path="$E2E_WORK/tsdb-$try" \
      --web.listen-address="127.0.0.1:$PROM_PORT" "$@" >"$E2E_WORK/prometheus.log" 2>&1 &
    PROM_PID=$!
    E2E_PIDS+=("$PROM_PID")
    local i
    for i in $(seq 1 150); do
      curl -sf --max-time 1 "$PROM/-/ready" >/dev/null 2>&1 && return 0
      kill -0 "$PROM_PID" 2>/dev/null || break
      sleep 0.1
    done
    echo "prometheus did not become ready on port $PROM_PORT (attempt $try):" >&2
    tail -5 "$E2E_WORK/prometheus.log" >&2
    kill "$PROM_PID" 2>/dev/null || true
  done
  return 1
}

# query EXPR: the instant query's JSON from the Prometheus start_prometheus started.
query() { curl -sS --max-time 5 "$PROM/api/v1/query" --data-urlencode "query=$1"; }
# query_value EXPR: the first result's value, empty when there is none (or Prometheus is not up).
query_value() { query "$1" 2>/dev/null | jq -r '.data.result[0].value[1] // empty' 2>/dev/null || true; }
# query_count EXPR: how many series the query returns (0 on any error).
query_count() { query "$1" 2>/dev/null | jq -r '.data.result | length' 2>/dev/null || echo 0; }

# wait_for_up JOB TARGETS [SECONDS]: until Prometheus has scraped all TARGETS of JOB successfully
# (sum(up) == TARGETS), polled every second, default 60 s. UP holds the last sum seen.
wait_for_up() {
  local i
  UP=""
  for i in $(seq 1 "${3:-60}"); do
    UP=$(query_value "sum(up{job=\"$1\"})")
    [ "$UP" = "$2" ] && return 0
    sleep 1
  done
  return 1
}

# listen_address LOG PID: the address an exporter logged ("msg=listening address=..."), waited
# for up to 5 s while PID lives; prints the log and fails when none comes.
listen_address() {
  local logf=$1 pid=$2 i addr
  for i in $(seq 1 100); do
    addr=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$logf" | head -n1)
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  cat "$logf" >&2
  return 1
}

# Starts the exporter in the background on 127.0.0.1:0; sets EXPORTER_PID and EXPORTER_ADDR
# (the port the kernel chose, read from the "listening" log line).
start_exporter() {
  local logf=$E2E_WORK/exporter.log
  : >"$logf"
  "${RT[@]}" "$EXPORTER" --web.listen-address=127.0.0.1:0 "$@" 2>"$logf" &
  EXPORTER_PID=$!
  E2E_PIDS+=("$EXPORTER_PID")
  EXPORTER_ADDR=$(listen_address "$logf" "$EXPORTER_PID") || return 1
}

# Stops the exporter start_exporter started (SIGTERM) and reaps it.
stop_exporter() { kill "$EXPORTER_PID" 2>/dev/null || true; wait "$EXPORTER_PID" 2>/dev/null || true; }

# wait_http URL [SECONDS]: until URL answers 2xx (a /-/ready endpoint), polled every 0.1 s; default 10 s.
wait_http() {
  local i
  for i in $(seq 1 $(( ${2:-10} * 10 ))); do
    curl -sf --max-time 1 -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

scrape() { curl -sS --max-time 5 "http://$EXPORTER_ADDR${1:-/metrics}"; }

# Value of the first sample of `family` with label device="$2" in exposition text on stdin.
# These helpers read all of stdin: an early exit would make `scrape | ...` fail with EPIPE under
# pipefail once the exposition outgrows the pipe buffer (64 KiB).
sample_value() {
  awk -v f="$1" -v d="device=\"$2\"" '!done && $1 ~ "^"f"\\{" && index($1, d) { printf "%.0f\n", $2; done = 1 }'
}

# --- emulated SD card: nbdkit memory plugin behind filters (delay, rate, error, pause), exposed
# through nbdfuse as a file, attached as a loop device with direct I/O. Needs root, FUSE, loop.

# Skips the test (exit 77, ctest's SKIP) outside CI when root, FUSE or loop devices are missing;
# under CI=true the same condition fails the test.
require_card_support() {
  local why=""
  [ "$(id -u)" = 0 ] || why="not root"
  [ -e /dev/fuse ] || why="${why:+$why, }no /dev/fuse"
  command -v nbdfuse >/dev/null && command -v nbdkit >/dev/null || why="${why:+$why, }nbdkit/nbdfuse missing"
  losetup -f >/dev/null 2>&1 || why="${why:+$why, }no free loop device"
  if [ -n "$why" ]; then
    if [ "${CI:-}" = true ]; then echo "FAIL: emulated card impossible under CI: $why" >&2; exit 1; fi
    echo "SKIP: emulated card needs root, FUSE and loop devices: $why"; exit 77
  fi
}

# rt_prefix: prints "chrt -f 10" where the kernel lets this process use SCHED_FIFO (root, an RT
# budget in its cgroup), nothing otherwise. For measurements that compare two tools on an emulated
# card: on a 2-core machine busy with other work every hop of an I/O (loop worker, FUSE, nbdfuse,
# nbdkit, the tool) waits for a CPU, and nice does not help against other cgroups' builds.
# Measured here under a load of 22: fio's 4 KiB QD1 read of a card with a 1 ms read delay took
# 4.5-20 ms at normal priority (nice -20 no better), 1.5-1.8 ms under SCHED_FIFO. Only for commands
# that wait on the card most of the time: a CPU-bound one under SCHED_FIFO holds the CPUs from
# everyone else (the kernel leaves others 5 %).
# use_rt: from here on RT holds that prefix (empty where SCHED_FIFO is refused), and card_start
# and start_exporter run their processes under it; a script puts "${RT[@]}" before the fio or
# bench it compares them with. no_rt: back to normal priority.
RT=()
rt_prefix() { if chrt -f 10 true 2>/dev/null; then echo "chrt -f 10"; fi; }
use_rt() { read -r -a RT <<<"$(rt_prefix)"; log "measurements under ${RT[*]:-normal priority (SCHED_FIFO refused)}"; }
no_rt() { RT=(); }

CARDS=()   # "loopdev fusedir pid mountpoint" per card, for cleanup
# card_start NAME SIZE [--filter=F ...] [key=value ...]: sets CARD_DEV (/dev/loopN) and CARD_NAME.
# nbdkit wants filters before the plugin and every parameter (the plugin's and the filters') after.
# After use_rt the card (nbdfuse and nbdkit) runs under SCHED_FIFO.
card_start() {
  local name=$1 size=$2; shift 2
  local filters=() params=() a
  for a in "$@"; do
    case $a in --filter=*) filters+=("$a") ;; *) params+=("$a") ;; esac
  done
  card_attach "$name" "${filters[@]}" memory size="$size" "${params[@]}"
}

# card_attach NAME NBDKIT-ARGS...: a card served by `nbdkit -s NBDKIT-ARGS...` (any plugin, e.g.
# the sh plugin and a script), attached as card_start does; sets CARD_DEV and CARD_NAME.
card_attach() {
  local name=$1; shift
  local dir=$E2E_WORK/card-$name
  mkdir -p "$dir"
  "${RT[@]}" nbdfuse "$dir" --command nbdkit -s "$@" >"$E2E_WORK/nbdfuse-$name.log" 2>&1 &
  local pid=$!
  local i
  for i in $(seq 1 100); do [ -e "$dir/nbd" ] && break; sleep 0.05; done
  [ -e "$dir/nbd" ] || { cat "$E2E_WORK/nbdfuse-$name.log" >&2; return 1; }
  CARD_DEV=$(losetup -f --show --direct-io=on "$dir/nbd")
  CARD_NAME=${CARD_DEV#/dev/}
  CARDS+=("$CARD_DEV $dir $pid -")
}

# card_mkfs_mount [MKFS.EXT4 OPTIONS...]: ext4 on the last card, mounted; sets CARD_MNT. An -E among
# the options replaces the default one (mke2fs keeps the last -E).
card_mkfs_mount() {
  CARD_MNT=$E2E_WORK/mnt-$CARD_NAME
  mkdir -p "$CARD_MNT"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$@" "$CARD_DEV"
  mount -o noatime "$CARD_DEV" "$CARD_MNT"
  local last=$(( ${#CARDS[@]} - 1 ))
  CARDS[$last]="${CARDS[$last]% -} $CARD_MNT"
}

cards_cleanup() {
  local c dev dir pid mnt
  for c in "${CARDS[@]}"; do
    read -r dev dir pid mnt <<<"$c"
    # Runs in the EXIT trap under set -e: one failing step (nbdfuse already gone after the
    # unmount, a device detached by the test) must not abort the cleanup of the other cards.
    if [ "$mnt" != - ]; then umount -l "$mnt" 2>/dev/null || true; fi
    losetup -d "$dev" 2>/dev/null || true
    fusermount3 -u "$dir" 2>/dev/null || umount -l "$dir" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
  done
  CARDS=()
}

# Field 7 (sectors written) of a disk's stat, in bytes.
stat_written_bytes() { awk '{ printf "%.0f\n", $7 * 512 }' "/sys/block/$1/stat"; }

# Figures for the logs and the comparisons with fio.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }  # A/B
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { exit !(b > 0 && a / b >= 1 - p / 100 && a / b <= 1 + p / 100) }'; }  # A B PCT: |A/B - 1| <= PCT %
ms() { awk -v s="$1" -v d="${2:-3}" 'BEGIN { printf "%." d "f", s * 1000 }'; }  # SECONDS [DECIMALS]: milliseconds

# sanitized_build BIN: true when BIN is an AddressSanitizer build (make test-asan). Such a binary
# reserves terabytes of shadow address space, so an address-space limit (prlimit --as) kills it at
# start, and its per-operation CPU cost is not the release build's.
# ldd's whole output is taken before matching: `ldd | grep -q` under pipefail fails when grep
# exits at the match and ldd, still writing, dies of SIGPIPE (an ASan build then passed for a
# release one).
sanitized_build() { local libs; libs=$(ldd "$1" 2>/dev/null) || true; [[ $libs == *libasan* ]]; }

# The value of the first sample matching an anchored extended regex on stdin.
metric() { awk -v re="^$1 " '!found && $0 ~ re { print $NF; found = 1 } END { if (!found) print "" }'; }
