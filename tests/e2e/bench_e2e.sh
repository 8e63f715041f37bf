#!/usr/bin/env bash
# End-to-end: `diskprobe_exporter bench` on this machine's disk (--dir a temporary directory,
# --device the disk holding it): finishes inside its bound, prints the table; --format json
# validates against docs/bench-schema.json; --push lands in a real Pushgateway.
# Usage: bench_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
for tool in prometheus-pushgateway python3 curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
python3 -c 'import jsonschema' || { echo "missing python3-jsonschema: run scripts/install-deps.sh test" >&2; exit 1; }
cd "$E2E_WORK"
mkdir -p dir locks
disk=$(basename "$(realpath "/sys/dev/block/$(mountpoint -d "$(df --output=target dir | tail -1)")")")
[ -e "/sys/block/$disk/partition" ] && disk=$(basename "$(dirname "$(realpath "/sys/block/$disk")")")
# A partition's sysfs directory sits inside its disk's.
[ -e "/sys/class/block/$disk/partition" ] && disk=$(basename "$(dirname "$(realpath "/sys/class/block/$disk")")")
log "this disk: /dev/$disk holds $E2E_WORK"

t0=$(date +%s.%N)
"$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --duration 10s --max-bytes 256MiB --file-size 16MiB \
  --lock-dir "$E2E_WORK/locks" | tee table.txt
rc=${PIPESTATUS[0]}
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
check "bench exits 0 (rc $rc) and finishes inside its 10 s bound (wall $wall s, 0.5 s allowed for start-up and output)" \
  awk -v w="$wall" -v r="$rc" 'BEGIN { exit !(r == 0 && w <= 10.5) }'
check "the table has a row per test" bash -c "[ \$(grep -cE '^(seqread|seqwrite|randread_qd1|randwrite_qd1|randread_qd32|randwrite_qd32|fdatasync) ' table.txt) = 7 ]"
check "the table has the verdict" grep -q '^  A1: ' table.txt
if grep -q '^seqread .*unavailable' table.txt; then
  check "an unreadable device is reported with its reason" grep -q 'unavailable: cannot open /dev/' table.txt
fi
check "no progress bar when stdout is not a terminal" bash -c "! grep -q $'\r' table.txt"
check "the probe file is gone" test -z "$(ls -A dir)"

# A bound no test fits in (300 ms, all of it the reserve kept for closing and output): every test,
# the io_uring ones included (they used to run a first batch regardless), is skipped and says why.
"$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --duration 300ms --max-bytes 64MiB --file-size 4MiB \
  --lock-dir "$E2E_WORK/locks" >short.txt && rc=0 || rc=$?
sed 's/^/  /' short.txt
check "--duration 300ms: exit 0 (rc $rc), every test skipped for the bound or unavailable, none ran" \
  bash -c "[ $rc = 0 ] && [ \$(grep -cE '^[a-z0-9_]+ +[0-9]+ +- .* (skipped: no time or bytes left in the run.s bounds|unavailable: .+)\$' short.txt) = 7 ]"
check "--duration 300ms prints its bound as 0.3 s" grep -q '(bound 0.3 s)$' short.txt
check "--duration 300ms: no note on QD1 figures standing in, as no QD1 test ran" \
  bash -c "! grep -q '^note: the verdict.s IOPS come from the QD1 tests' short.txt"

"$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --duration 4s --max-bytes 64MiB --file-size 4MiB \
  --lock-dir "$E2E_WORK/locks" --format json >run.json
check "--format json validates against docs/bench-schema.json" python3 -c '
import json, sys, jsonschema
jsonschema.validate(json.load(open("run.json")), json.load(open(sys.argv[1])))
print("  valid:", len(json.load(open("run.json"))["tests"]), "tests")' "$SRC/docs/bench-schema.json"
# Each test's window (started_unix_seconds, wall_seconds): given exactly for the tests that did I/O,
# inside the run, one after the other in the order they ran, and at least as long as the time the
# test's figures are computed over.
check "the tests' windows: one per test that did I/O, inside the run, in order, each holding its own timed seconds" python3 -c '
import json
d = json.load(open("run.json"))
t0, end = d["started_unix_seconds"], d["started_unix_seconds"] + d["elapsed_seconds"]
prev, windows = t0, 0
for t in d["tests"]:
    s, w = t["started_unix_seconds"], t["wall_seconds"]
    did_io = t["ops"] > 0 or t["status"] == "error"
    assert (s is not None) == did_io and (w is not None) == did_io, (t["name"], t["status"], t["ops"], s, w)
    if s is None: continue
    print("  %-16s starts %+.3f s, wall %.3f s, timed %.3f s" % (t["name"], s - t0, w, t["seconds"]))
    assert prev - 1e-3 <= s and s + w <= end + 1e-3, t["name"]
    assert t["seconds"] <= w + 1e-6, t["name"]
    prev, windows = s + w, windows + 1
assert windows >= 4, windows  # the probe file tests at least (the device may be unreadable here)'
check "a broken document fails the schema (the validator can fail)" bash -c "! python3 -c '
import json, sys, jsonschema
d = json.load(open(\"run.json\")); d[\"tests\"][0][\"status\"] = \"fine\"
jsonschema.validate(d, json.load(open(sys.argv[1])))' '$SRC/docs/bench-schema.json' 2>/dev/null"

# A real Pushgateway.
port=$(free_port)
prometheus-pushgateway --web.listen-address="127.0.0.1:$port" >pgw.log 2>&1 &
E2E_PIDS+=($!)
wait_http "http://127.0.0.1:$port/-/ready" || echo "the Pushgateway is not ready after 10 s" >&2
"$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --duration 4s --max-bytes 64MiB --file-size 4MiB \
  --lock-dir "$E2E_WORK/locks" --push "http://127.0.0.1:$port" >/dev/null 2>push.err
rc=$?
cat push.err
check "bench --push exits 0" test "$rc" = 0
curl -sf "http://127.0.0.1:$port/metrics" | grep '^diskprobe_bench_' | grep -v '^#' >pushed.txt || true
sed 's/^/  /' pushed.txt
# Counted for this disk only: a concurrent test run's bench has been seen landing in this gateway.
check "the gateway shows diskprobe_bench_test_success for every test" \
  bash -c "[ \$(grep -c '^diskprobe_bench_test_success{device=\"$disk\",' pushed.txt) = 7 ]"
check "the gateway shows IOPS with job, instance and device" \
  grep -qE "^diskprobe_bench_iops\{device=\"$disk\",instance=\"$(hostname)\",job=\"diskprobe-bench\",test=\"randwrite_qd1\"\} [0-9]" pushed.txt
# A bad URL is a usage error found while parsing: exit 2 before any I/O (no lock taken, no probe
# file), not after a whole run.
mkdir -p locks-bad
for url in notaurl "127.0.0.1:$port"; do
  "$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --duration 10s --lock-dir "$E2E_WORK/locks-bad" \
    --push "$url" >badpush.out 2>badpush.err && rc=0 || rc=$?
  echo "  $(head -n1 badpush.err)"
  check "--push $url: exit 2 (rc $rc), says what is wrong, took no lock and wrote nothing" \
    bash -c "[ $rc = 2 ] && grep -q '^--push: .* is not a Pushgateway' badpush.err && [ ! -s badpush.out ] && [ -z \"\$(ls -A locks-bad)\" ] && [ -z \"\$(ls -A dir)\" ]"
done
# Nonsense bounds, and a file larger than a quarter of --max-bytes (it used to be clamped without a
# word, --max-bytes 0 ran with every test skipped): usage errors, exit 2 before any I/O.
for args in "--file-size 512MiB" "--max-bytes 0" "--file-size 1MiB --max-bytes 8MiB" "--duration 0s" \
  "--lock-wait -1"; do
  # shellcheck disable=SC2086 # $args is several words on purpose
  "$EXPORTER" bench --device "/dev/$disk" --dir "$E2E_WORK/dir" --lock-dir "$E2E_WORK/locks-bad" $args \
    >bad.out 2>bad.err && rc=0 || rc=$?
  echo "  $(head -n1 bad.err)"
  check "$args: exit 2 (rc $rc), names the option, took no lock and wrote nothing" \
    bash -c "[ $rc = 2 ] && grep -q -- '^${args%% *}: ' bad.err && [ ! -s bad.out ] && [ -z \"\$(ls -A locks-bad)\" ] && [ -z \"\$(ls -A dir)\" ]"
done

[ "$FAILURES" = 0 ] || { echo "$FAILURES check(s) failed"; exit 1; }
echo "all checks passed"
