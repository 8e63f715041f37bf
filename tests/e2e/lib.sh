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
sample_value() {
  awk -v f="$1" -v d="device=\"$2\"" '$1 ~ "^"f"\\{" && index($1, d) { printf "%.0f\n", $2; exit }'
}
