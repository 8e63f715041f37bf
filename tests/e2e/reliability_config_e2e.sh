#!/usr/bin/env bash
# End-to-end: hostile configuration files cannot take the exporter down. For each one (a stray
# ',' that sent yaml-cpp's LoadAll into an endless allocating loop, nesting 60,000 deep, an alias
# bomb, too many nodes, a huge file, regexes of 20,000 nested groups or 40 KB, a FIFO, a
# directory, /dev/zero), as --config.file and as --web.config.file:
#   - --config.check exits 1 with the message, within an address-space limit and a time limit;
#   - start-up exits 1, the same way, and nothing listens;
#   - a running exporter given it on SIGHUP stays up, keeps serving /metrics with the old
#     configuration in effect and says diskprobe_config_last_reload_successful 0;
# and with the file replaced by a FIFO, SIGHUP then SIGTERM still stops the exporter within 2 s.
# The limits only keep a regression from hurting the machine; the times printed are not compared
# against tight bounds. Usage: reliability_config_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"

for tool in curl prlimit timeout python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done

# 512 MiB of address space: the exporter with its threads maps about 90 MiB; the old loader used
# 2.8 GB within 10 s on a stray ','. 20 s: every case takes well under a second here.
AS_LIMIT=$((512 << 20))
TIME_LIMIT=20
# Under AddressSanitizer (make test-asan) the address-space limit is left off: ASan maps terabytes
# of shadow at start. The sanitizer stage still runs every case for crashes, errors and the time
# limit; the release stage keeps the memory bound.
AS=(prlimit --as=$AS_LIMIT)
if sanitized_build "$EXPORTER"; then
  AS=()
  log "sanitized build: no address-space limit (ASan reserves its shadow memory at start)"
fi
# A fixture root with two disks (mmcblk0, sda): the good configuration selects sda alone, so a
# reload that lost it would show mmcblk0's series again.
ROOT=$SRC/tests/fixtures/roots/pi4-usb
ROOT_FLAGS=(--no-collector.probes --no-collector.mounts --no-collector.kmsg --path.sysfs="$ROOT/sys"
  --path.procfs="$ROOT/proc" --path.rootfs="$ROOT" --path.debugfs="$ROOT/debug")
printf 'devices:\n  include: [sda]\n' >good.yml
: >good-web.yml  # empty: plain HTTP, no authentication

mkdir hostile
printf ',\n' >hostile/comma.yml
printf -- '---\n,\n' >hostile/dash-comma.yml
printf '# c\n,\n' >hostile/comment-comma.yml
python3 - <<'PY'
w = lambda name, text: open("hostile/" + name, "w").write(text)
w("deep.yml", "[" * 60000 + "\n")
w("deep-100k.yml", "[" * 100000 + "\n")
lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
for i in range(1, 12):
    lines.append("l%d: &l%d [%s]" % (i, i, ", ".join(["*l%d" % (i - 1)] * 10)))
w("aliases.yml", "\n".join(lines) + "\ndevices: {include: *l11}\n")
w("nodes.yml", "- a\n" * 16000)
w("huge.yml", "# padding\n" * 200000)
w("regex-nested.yml", "devices:\n  include: ['" + "(" * 20000 + "a" + ")" * 20000 + "']\n")
w("regex-long.yml", "devices:\n  include: ['" + "a" * 40000 + "']\n")
w("regex-device-key.yml", "probes:\n  devices:\n    ? '" + "(" * 20000 + "a" + ")" * 20000 + "'\n    : {}\n")
PY
mkfifo hostile/fifo.yml
mkdir hostile/dir.yml

# name|path|the message after "path:", as --config.check prints it (the web config's differs only
# where the main configuration's keys are named: those are main-configuration-only cases).
CASES=(
  "comma|hostile/comma.yml|1:1: YAML syntax error: unexpected ','"
  "dash-comma|hostile/dash-comma.yml|2:1: YAML syntax error: unexpected ','"
  "comment-comma|hostile/comment-comma.yml|2:1: YAML syntax error: unexpected ','"
  "deep|hostile/deep.yml|1:33: lists and mappings nested more than 32 deep"
  "deep-100k|hostile/deep-100k.yml|0:0: file is larger than 65536 bytes"
  "aliases|hostile/aliases.yml|12:12: more than 100 aliases"
  "nodes|hostile/nodes.yml|10000:3: more than 10000 YAML nodes"
  "huge|hostile/huge.yml|0:0: file is larger than 65536 bytes"
  "regex-nested|hostile/regex-nested.yml|2:13: devices.include[0]: invalid regular expression \"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((...\" (40001 characters): is 40001 characters long"
  "regex-long|hostile/regex-long.yml|2:13: devices.include[0]: invalid regular expression"
  "regex-device-key|hostile/regex-device-key.yml|3:7: probes.devices.((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((...: invalid regular expression"
  "fifo|hostile/fifo.yml|0:0: not a regular file (fifo)"
  "directory|hostile/dir.yml|0:0: not a regular file (directory)"
  "dev-zero|/dev/zero|0:0: not a regular file (character device)"
)
WEB_CASES=(comma dash-comma comment-comma deep deep-100k aliases nodes huge fifo directory dev-zero)

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
bounded() { "${AS[@]}" timeout $TIME_LIMIT "$@"; }

# check_refused NAME FLAG PATH MESSAGE: --config.check, then start-up, with FLAG=PATH.
check_refused() {
  local name=$1 flag=$2 path=$3 msg=$4 t rc
  t=$(date +%s%N); rc=0
  bounded "$EXPORTER" --config.check "$flag=$path" >check.out 2>check.err || rc=$?
  check "$name: $flag --config.check exits 1 (got $rc) in $(ms_since "$t") ms with '$path:${msg:0:60}...'" \
    bash -c "[ $rc = 1 ] && grep -qF -- \"\$1\" check.err" _ "$path:$msg"
  t=$(date +%s%N); rc=0
  bounded "$EXPORTER" --web.listen-address=127.0.0.1:0 "${ROOT_FLAGS[@]}" "$flag=$path" >start.out 2>start.err || rc=$?
  check "$name: $flag at start-up exits 1 (got $rc) in $(ms_since "$t") ms, the message logged, nothing listening" \
    bash -c "[ $rc = 1 ] && grep -qF -- \"\$1\" start.err && ! grep -q msg=listening start.err" _ "$path:$msg"
}

# reload_value: diskprobe_config_last_reload_successful from a fresh scrape into reload.txt.
reload_value() { scrape >reload.txt && metric diskprobe_config_last_reload_successful <reload.txt; }
# wait_reload VALUE: until the metric says VALUE (5 s at most: reloads take milliseconds).
wait_reload() {
  local i
  for i in $(seq 1 50); do [ "$(reload_value 2>/dev/null)" = "$1" ] && return 0; sleep 0.1; done
  return 1
}
# replace LIVE SOURCE: LIVE becomes what SOURCE is (a copy of a file, a FIFO, a directory, a link).
replace() {
  rm -rf "$1"
  case $2 in
    hostile/fifo.yml) mkfifo "$1" ;;
    hostile/dir.yml) mkdir "$1" ;;
    /dev/*) ln -s "$2" "$1" ;;
    *) cp "$2" "$1" ;;
  esac
}

# reload_cases FLAG LIVE GOOD NAMES...: with the exporter running on LIVE, each hostile file in
# turn replaces it and SIGHUP is sent; then the good file comes back and SIGHUP restores 1.
reload_cases() {
  local flag=$1 live=$2 good=$3 c name path msg
  shift 3
  for name in "$@"; do
    for c in "${CASES[@]}"; do [ "${c%%|*}" = "$name" ] && break; done
    IFS='|' read -r name path msg <<<"$c"
    replace "$live" "$path"
    kill -HUP "$EXPORTER_PID"
    wait_reload 0 || true
    check "$name: $flag on SIGHUP: alive, /metrics served, reload metric 0, sda alone still selected" \
      bash -c "kill -0 $EXPORTER_PID && grep -q '^diskprobe_config_last_reload_successful 0$' reload.txt &&
               grep -q '^diskprobe_block_read_bytes_total{device=\"sda\"}' reload.txt &&
               ! grep -q '^diskprobe_block_read_bytes_total{device=\"mmcblk0\"}' reload.txt"
    # Up to the first '"', which the log's logfmt escapes.
    check "$name:   ... and the refusal logged with the message" grep -qF -- "$live:${msg%%\"*}" "$E2E_WORK/exporter.log"
    if ! kill -0 "$EXPORTER_PID" 2>/dev/null; then
      fail "$name: the exporter died on SIGHUP; its last lines:"
      tail -3 "$E2E_WORK/exporter.log" >&2
      exit 1
    fi
    cp "$good" "$live.tmp" && rm -rf "$live" && mv "$live.tmp" "$live"
    kill -HUP "$EXPORTER_PID"
    check "$name:   ... and the good file on the next SIGHUP: reload metric 1" wait_reload 1
  done
}

log "hostile files as --config.file"
for c in "${CASES[@]}"; do
  IFS='|' read -r name path msg <<<"$c"
  check_refused "$name" --config.file "$path" "$msg"
done

log "hostile files as --web.config.file"
for name in "${WEB_CASES[@]}"; do
  for c in "${CASES[@]}"; do [ "${c%%|*}" = "$name" ] && break; done
  IFS='|' read -r name path msg <<<"$c"
  check_refused "$name" --web.config.file "$path" "$msg"
done

log "hostile files on SIGHUP, the exporter under ${AS[*]:-no address-space limit}"
cp good.yml live.yml
cp good-web.yml live-web.yml
names=()
for c in "${CASES[@]}"; do names+=("${c%%|*}"); done
start_exporter_bounded() {
  local logf=$E2E_WORK/exporter.log
  : >"$logf"
  "${AS[@]}" "$EXPORTER" --web.listen-address=127.0.0.1:0 "${ROOT_FLAGS[@]}" "$@" 2>"$logf" &
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
start_exporter_bounded --config.file=live.yml --web.config.file=live-web.yml
wait_reload 1 || true
check "the exporter starts with the good files: reload metric 1, sda alone selected" \
  bash -c "grep -q '^diskprobe_config_last_reload_successful 1$' reload.txt && grep -q '^diskprobe_block_read_bytes_total{device=\"sda\"}' reload.txt &&
           ! grep -q '^diskprobe_block_read_bytes_total{device=\"mmcblk0\"}' reload.txt"
reload_cases --config.file live.yml good.yml "${names[@]}"
reload_cases --web.config.file live-web.yml good-web.yml "${WEB_CASES[@]}"
check "still alive after $(( ${#names[@]} + ${#WEB_CASES[@]} )) refused reloads (RSS $(awk '/VmRSS/ {print $2, $3}' /proc/$EXPORTER_PID/status))" \
  kill -0 "$EXPORTER_PID"

log "FIFO + SIGHUP, then SIGTERM"
# Both files FIFOs with no writer: the old loader blocked in open(2) on the main thread, which
# reads the signals, so SIGTERM waited for a writer.
rm -f live.yml live-web.yml
mkfifo live.yml live-web.yml
kill -HUP "$EXPORTER_PID"
wait_reload 0 || true
check "both files FIFOs on SIGHUP: still serving, reload metric 0" \
  grep -q '^diskprobe_config_last_reload_successful 0$' reload.txt
start_ns=$(date +%s%N)
kill -TERM "$EXPORTER_PID"
for i in $(seq 1 50); do kill -0 "$EXPORTER_PID" 2>/dev/null || break; sleep 0.1; done
elapsed=$(ms_since "$start_ns")
if kill -0 "$EXPORTER_PID" 2>/dev/null; then
  fail "SIGTERM after SIGHUP with FIFOs: still running after ${elapsed} ms"
  exec 8<>live-web.yml 9<>live.yml  # a writer ends a blocked open, so the cleanup can stop it
else
  rc=0
  wait "$EXPORTER_PID" || rc=$?
  check "SIGTERM after SIGHUP with FIFOs: exit 0 (got $rc) within 2000 ms (took ${elapsed} ms)" \
    bash -c "[ $rc = 0 ] && [ $elapsed -lt 2000 ]"
fi

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all hostile-configuration checks passed"
