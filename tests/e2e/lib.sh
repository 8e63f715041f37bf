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

# Starts the exporter in the background on 127.0.0.1:0; sets EXPORTER_PID and EXPORTER_ADDR
# (the port the kernel chose, read from the "listening" log line).
start_exporter() {
  local logf=$E2E_WORK/exporter.log
  : >"$logf"
  "$EXPORTER" --web.listen-address=127.0.0.1:0 "$@" 2>"$logf" &
  EXPORTER_PID=$!
  E2E_PIDS+=("$EXPORTER_PID")
  local i
  for i in $(seq 1 100); do
    EXPORTER_ADDR=$(sed -n 's/.*msg=listening address=\([0-9.:]*\).*/\1/p' "$logf" | head -n1)
    [ -n "$EXPORTER_ADDR" ] && return 0
    kill -0 "$EXPORTER_PID" 2>/dev/null || { cat "$logf" >&2; return 1; }
    sleep 0.05
  done
  cat "$logf" >&2
  return 1
}

scrape() { curl -sS --max-time 5 "http://$EXPORTER_ADDR${1:-/metrics}"; }

# Value of the first sample of `family` with label device="$2" in exposition text on stdin.
# These helpers read all of stdin: an early exit would make `scrape | ...` fail with EPIPE under
# pipefail once the exposition outgrows the pipe buffer (64 KiB).
sample_value() {
  awk -v f="$1" -v d="device=\"$2\"" '!done && $1 ~ "^"f"\\{" && index($1, d) { printf "%.0f\n", $2; done = 1 }'
}

# --- emulated SD card with known latency and faults: nbdkit memory plugin behind filters, exposed
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

CARDS=()   # "loopdev fusedir pid mountpoint" per card, for cleanup
# card_start NAME SIZE [--filter=F ...] [key=value ...]: sets CARD_DEV (/dev/loopN) and CARD_NAME.
# nbdkit wants filters before the plugin and every parameter (the plugin's and the filters') after.
card_start() {
  local name=$1 size=$2; shift 2
  local dir=$E2E_WORK/card-$name filters=() params=() a
  for a in "$@"; do
    case $a in --filter=*) filters+=("$a") ;; *) params+=("$a") ;; esac
  done
  mkdir -p "$dir"
  nbdfuse "$dir" --command nbdkit -s "${filters[@]}" memory size="$size" "${params[@]}" \
    >"$E2E_WORK/nbdfuse-$name.log" 2>&1 &
  local pid=$!
  local i
  for i in $(seq 1 100); do [ -e "$dir/nbd" ] && break; sleep 0.05; done
  [ -e "$dir/nbd" ] || { cat "$E2E_WORK/nbdfuse-$name.log" >&2; return 1; }
  CARD_DEV=$(losetup -f --show --direct-io=on "$dir/nbd")
  CARD_NAME=${CARD_DEV#/dev/}
  CARDS+=("$CARD_DEV $dir $pid -")
}

# card_mkfs_mount : ext4 on the last card, mounted; sets CARD_MNT.
card_mkfs_mount() {
  CARD_MNT=$E2E_WORK/mnt-$CARD_NAME
  mkdir -p "$CARD_MNT"
  mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$CARD_DEV"
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

# The value of the first sample matching an anchored extended regex on stdin.
metric() { awk -v re="^$1 " '!found && $0 ~ re { print $NF; found = 1 } END { if (!found) print "" }'; }
