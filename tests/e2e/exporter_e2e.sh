#!/usr/bin/env bash
# End-to-end: the real binary on a free local port, its /metrics against the kernel's own
# /sys/block/<dev>/stat, promtool, a real Prometheus scraping it, SIGHUP reloads, clean SIGTERM.
# Usage: exporter_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"

for tool in curl promtool prometheus jq; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done

cat >good.yml <<'YML'
devices:
  discovery_interval: 2s
YML

log "config check"
check "--config.check accepts a valid file" "$EXPORTER" --config.check --config.file=good.yml
printf 'devices:\n  discovery_interval: 30\n  bogus: 1\n' >bad.yml
if "$EXPORTER" --config.check --config.file=bad.yml 2>check.err; then fail "--config.check rejects a bad file"; else
  check "--config.check prints every error with file:line:col" \
    grep -qx 'bad.yml:2:23: devices.discovery_interval: invalid duration "30": want an integer and a unit (ms, s, m, h, d, w), largest first, e.g. 30s, 5m, 1h30m' check.err
  check "--config.check prints the second error too" grep -q '^bad.yml:3:3: devices.bogus: unknown key' check.err
fi
if "$EXPORTER" --config.file=bad.yml --web.listen-address=127.0.0.1:0 2>start.err; then
  fail "an invalid config at start-up exits 1"
else
  check "an invalid config at start-up exits 1 with the errors, nothing started" \
    bash -c '[ "$(grep -c "^bad.yml:" start.err)" = 2 ] && ! grep -q "msg=listening" start.err'
fi

log "start the exporter with no config file"
start_exporter
log "exporter on $EXPORTER_ADDR (pid $EXPORTER_PID)"
check "landing page names the exporter" bash -c "curl -sS http://$EXPORTER_ADDR/ | grep -q '<h1>diskprobe_exporter</h1>'"
check "/-/healthy is 200" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://$EXPORTER_ADDR/-/healthy) = 200 ]"
check "/-/ready is 200" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://$EXPORTER_ADDR/-/ready) = 200 ]"
check "unknown path is 404" bash -c "[ \$(curl -s -o /dev/null -w '%{http_code}' http://$EXPORTER_ADDR/metricz) = 404 ]"
# Memory: OpenSSL (1.7 MiB on x86-64) is loaded only with --web.config.file.
check "no OpenSSL mapped without a web config ($(grep -cE 'libssl|libcrypto\.so' /proc/$EXPORTER_PID/maps) mappings)" \
  bash -c "! grep -qE 'libssl|libcrypto\\.so' /proc/$EXPORTER_PID/maps"

scrape >m1.txt
check "promtool check metrics reports nothing" bash -c 'out=$(promtool check metrics <m1.txt 2>&1); echo -n "$out"; [ -z "$out" ]'
check "build info is exported" grep -q '^diskprobe_build_info{revision="[^"]*",version="[0-9.]*"} 1$' m1.txt
# gzip, as Prometheus asks for it: Content-Encoding set, the body a gzip stream whose text is a
# valid exposition (the unit tests check the negotiation rules).
curl -sS -H 'Accept-Encoding: gzip' -D gz-head.txt -o m1.gz "http://$EXPORTER_ADDR/metrics"
check "gzip when asked: $(tr -d '\r' <gz-head.txt | grep -iE '^(content-encoding|vary):' | tr '\n' ' ')$(stat -c %s m1.gz) bytes on the wire, $(gzip -dc m1.gz | wc -c) of text" \
  bash -c "tr -d '\r' <gz-head.txt | grep -qix 'content-encoding: gzip' && gzip -dc m1.gz >m1-gz.txt &&
           [ -z \"\$(promtool check metrics <m1-gz.txt 2>&1)\" ] && grep -q '^diskprobe_build_info{' m1-gz.txt"
check "no gzip unless asked (curl without --compressed got identity)" bash -c "! grep -qi '^content-encoding' <(curl -sS -D - -o /dev/null http://$EXPORTER_ADDR/metrics)"

# Every whole disk the default config selects, from sysfs itself.
devices=()
for d in /sys/block/*; do
  n=$(basename "$d")
  case $n in ram[0-9]*|zram[0-9]*|loop[0-9]*|sr[0-9]*) continue ;; esac  # loop/sr: only when included
  [ "$(cat "$d/removable" 2>/dev/null)" = 1 ] && [ "$(cat "$d/size")" = 0 ] && continue  # no medium
  devices+=("$n")
done
log "devices in sysfs: ${devices[*]}"
check "at least one real disk" test ${#devices[@]} -gt 0

# Counters equal the kernel's at the same moment: stat read before <= exported <= stat read after.
fields=(diskprobe_block_reads_completed_total:1:1 diskprobe_block_reads_merged_total:2:1
        diskprobe_block_read_bytes_total:3:512 diskprobe_block_writes_completed_total:5:1
        diskprobe_block_writes_merged_total:6:1 diskprobe_block_written_bytes_total:7:512
        diskprobe_block_io_time_seconds_total:10:0.001 diskprobe_block_read_time_seconds_total:4:0.001
        diskprobe_block_write_time_seconds_total:8:0.001 diskprobe_block_io_time_weighted_seconds_total:11:0.001)
for dev in "${devices[@]}"; do
  before=$(cat "/sys/block/$dev/stat"); scrape >cmp.txt; after=$(cat "/sys/block/$dev/stat")
  nf=$(echo "$before" | wc -w)
  for spec in "${fields[@]}"; do
    IFS=: read -r fam idx scale <<<"$spec"
    lo=$(echo "$before" | awk -v i="$idx" -v s="$scale" '{ printf "%.0f", $i * s * 1000 }')
    hi=$(echo "$after" | awk -v i="$idx" -v s="$scale" '{ printf "%.0f", $i * s * 1000 }')
    got=$(awk -v f="$fam" -v d="device=\"$dev\"" '$1 ~ "^"f"\\{" && index($1, d) { printf "%.0f", $2 * 1000; exit }' cmp.txt)
    if [ -z "$got" ] || [ "$got" -lt "$lo" ] || [ "$got" -gt "$hi" ]; then
      fail "$dev $fam: exported $got/1000 not within kernel [$lo, $hi]/1000"
    fi
  done
  extra=()
  [ "$nf" -ge 15 ] && extra+=(diskprobe_block_discards_completed_total:12:1 diskprobe_block_discards_merged_total:13:1
                               diskprobe_block_discarded_bytes_total:14:512 diskprobe_block_discard_time_seconds_total:15:0.001)
  [ "$nf" -ge 17 ] && extra+=(diskprobe_block_flushes_completed_total:16:1 diskprobe_block_flush_time_seconds_total:17:0.001)
  for spec in "${extra[@]}"; do
    IFS=: read -r fam idx scale <<<"$spec"
    lo=$(echo "$before" | awk -v i="$idx" -v s="$scale" '{ printf "%.0f", $i * s * 1000 }')
    hi=$(echo "$after" | awk -v i="$idx" -v s="$scale" '{ printf "%.0f", $i * s * 1000 }')
    got=$(awk -v f="$fam" -v d="device=\"$dev\"" '$1 ~ "^"f"\\{" && index($1, d) { printf "%.0f", $2 * 1000; exit }' cmp.txt)
    if [ -z "$got" ] || [ "$got" -lt "$lo" ] || [ "$got" -gt "$hi" ]; then
      fail "$dev $fam: exported $got/1000 not within kernel [$lo, $hi]/1000"
    fi
  done
  if [ "$nf" -ge 17 ]; then
    check "$dev: 17-field kernel exports flush counters" grep -q "^diskprobe_block_flushes_completed_total{device=\"$dev\"}" cmp.txt
  else
    check "$dev: no flush series on a $nf-field kernel" bash -c "! grep -q '^diskprobe_block_flushes_completed_total{device=\"$dev\"}' cmp.txt"
  fi
  size=$(( $(cat "/sys/block/$dev/size") * 512 ))
  got_size=$(sample_value diskprobe_block_size_bytes "$dev" <cmp.txt)
  check "$dev: size_bytes $got_size = sysfs size x 512 = $size" test "$got_size" = "$size"
done
ok "counters of ${devices[*]} equal /sys/block/<dev>/stat read at the same moment (x units)"

# Counters increase after I/O: write and fdatasync 4 MiB in the work directory, and look at the
# disk that holds it (its st_dev through /sys/dev/block, a partition's parent being its disk).
devno=$(stat -c '%Hd:%Ld' "$E2E_WORK")
wdisk=$(basename "$(readlink -f "/sys/dev/block/$devno")")
[ -e "/sys/dev/block/$devno/partition" ] && wdisk=$(basename "$(dirname "$(readlink -f "/sys/dev/block/$devno")")")
w1=$(scrape | sample_value diskprobe_block_written_bytes_total "$wdisk")
dd if=/dev/urandom of="$E2E_WORK/io.bin" bs=1M count=4 conv=fdatasync status=none
w2=$(scrape | sample_value diskprobe_block_written_bytes_total "$wdisk")
check "$wdisk (holds the work directory): written bytes increase by >= 4 MiB after a 4 MiB synced write ($w1 -> $w2)" \
  bash -c "[ -n '$w1' ] && [ -n '$w2' ] && [ $w2 -ge $((w1 + 4 * 1048576)) ]"

log "real Prometheus scrapes the exporter"
PROM_PORT=$(free_port)
cat >prometheus.yml <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: diskprobe
    static_configs:
      - targets: ['$EXPORTER_ADDR']
YML
check "Prometheus started" start_prometheus prometheus.yml --log.level=warn
wait_for_up diskprobe 1 || true
series=$(query_count 'diskprobe_block_read_bytes_total')
check "Prometheus: up{job=\"diskprobe\"} == 1 (got '$UP')" test "$UP" = 1
check "Prometheus: diskprobe_block_read_bytes_total has $series series" test "${series:-0}" -gt 0

log "SIGHUP reloads"
"$EXPORTER" --version >/dev/null
start_exporter_with_config() { cp good.yml live.yml; start_exporter --config.file=live.yml --log.level=debug; }
stop_exporter
start_exporter_with_config
devs_before=$(scrape | sed -n 's/^diskprobe_block_read_bytes_total{device="\([^"]*\)".*/\1/p' | sort | xargs)
printf 'devices:\n  include: ["mmcblk[0-9"]\n' >live.yml
kill -HUP "$EXPORTER_PID"
for i in $(seq 1 50); do scrape >hup.txt && grep -q '^diskprobe_config_last_reload_successful 0$' hup.txt && break; sleep 0.1; done
check "a broken file on SIGHUP: reload metric flips to 0" grep -q '^diskprobe_config_last_reload_successful 0$' hup.txt
devs_after=$(sed -n 's/^diskprobe_block_read_bytes_total{device="\([^"]*\)".*/\1/p' hup.txt | sort | xargs)
check "  ... and the exporter keeps serving the old device set [$devs_after]" \
  bash -c "[ -n '$devs_before' ] && [ '$devs_before' = '$devs_after' ]"
check "  ... and logs the error with file:line:col" grep -q 'live.yml:2:13: devices.include\[0\]: invalid regular expression' "$E2E_WORK/exporter.log"
ts_before=$(grep '^diskprobe_config_last_reload_success_timestamp_seconds' hup.txt | awk '{print $2}')
sleep 1.1
printf 'devices:\n  include: ["nomatch[0-9]+"]\n' >live.yml
kill -HUP "$EXPORTER_PID"
for i in $(seq 1 50); do scrape >hup2.txt && grep -q '^diskprobe_config_last_reload_successful 1$' hup2.txt && break; sleep 0.1; done
check "a good file on SIGHUP: reload metric back to 1" grep -q '^diskprobe_config_last_reload_successful 1$' hup2.txt
check "  ... and the new device filter applies (no device matches)" bash -c "! grep -q '^diskprobe_block_read_bytes_total{' hup2.txt"
ts_after=$(grep '^diskprobe_config_last_reload_success_timestamp_seconds' hup2.txt | awk '{print $2}')
check "  ... and the success timestamp moved ($ts_before -> $ts_after)" awk -v a="$ts_before" -v b="$ts_after" 'BEGIN { exit !(b > a) }'
check "--log.level=debug logs each scrape: $(grep -m1 'level=debug msg=scrape' "$E2E_WORK/exporter.log" | cut -d' ' -f2-)" \
  grep -q 'level=debug msg=scrape bytes=[0-9]* collectors_seconds=' "$E2E_WORK/exporter.log"

log "SIGTERM stops within 2 s"
start_ns=$(date +%s%N)
kill -TERM "$EXPORTER_PID"
rc=0; wait "$EXPORTER_PID" || rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
check "SIGTERM: exit code 0 (got $rc) after ${elapsed_ms} ms" test "$rc" = 0
check "SIGTERM: stopped within 2000 ms" test "$elapsed_ms" -lt 2000

# The same with a client that opened a connection and sends nothing.
start_exporter
port=${EXPORTER_ADDR##*:}
exec 7<>"/dev/tcp/127.0.0.1/$port"
sleep 0.2
start_ns=$(date +%s%N)
kill -TERM "$EXPORTER_PID"
rc=0; wait "$EXPORTER_PID" || rc=$?
elapsed_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
exec 7>&-
check "SIGTERM with an idle client connection: exit 0 (got $rc) within 2000 ms (took ${elapsed_ms} ms)" \
  bash -c "[ $rc = 0 ] && [ $elapsed_ms -lt 2000 ]"

# As many idle connections as there are workers (8): they hold none, and a scrape finishes within
# Prometheus' default scrape timeout (10 s); tests/reliability holds hundreds of such clients.
start_exporter --no-collector.probes
port=${EXPORTER_ADDR##*:}
for fd in 20 21 22 23 24 25 26 27; do eval "exec $fd<>/dev/tcp/127.0.0.1/$port"; done
sleep 0.3
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 12 "http://$EXPORTER_ADDR/metrics" || true)
idle_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
for fd in 20 21 22 23 24 25 26 27; do eval "exec $fd>&-"; done
check "8 idle connections: the scrape still answers $code within 10 s (took ${idle_ms} ms)" \
  bash -c "[ '$code' = 200 ] && [ $idle_ms -lt 10000 ]"
stop_exporter

# --no-collector.probes stops the probes' I/O, not only their series (the default config enables
# them): no probe thread logs, no probe file is opened.
start_exporter --no-collector.probes
sleep 2
scrape >np.txt
check "--no-collector.probes: said so, no probe series, no probe activity logged" bash -c \
  "grep -q 'probes not run: the probes collector is disabled' '$E2E_WORK/exporter.log' &&
   ! grep -q '^diskprobe_probe_' np.txt && ! grep -qE 'msg=\"probe (file|failed)' '$E2E_WORK/exporter.log'"
stop_exporter

# docs/metrics.md lists every family the exporter serves.
docs=$SRC/docs/metrics.md
if [ -f "$docs" ]; then
  missing=$(grep -h '^# TYPE ' m1.txt cmp.txt | awk '{print $3}' | sort -u | while read -r fam; do
    grep -q "\`$fam\`" "$docs" || echo "$fam"; done)
  check "docs/metrics.md documents every served family${missing:+ (missing: $missing)}" test -z "$missing"
else
  fail "docs/metrics.md is missing"
fi

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all end-to-end checks passed"
