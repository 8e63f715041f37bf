#!/usr/bin/env bash
# End-to-end: what the exporter keeps and serves is bounded by the machine, not by its inputs. On
# a copy of the faults fixture root, one exporter per input, each with the other collectors off:
#   kmsg    a kernel log (a file) of N records, each naming a new device, then one line of 8 MiB
#           without a newline: the kernel-message series stay those of the two fixture disks, the
#           N messages are counted in diskprobe_kernel_messages_unattributed_total, the long line
#           in diskprobe_kernel_log_skipped_records_total{reason="oversized"} once it ends;
#   mounts  a mount table with 10,000 bind mounts of a directory on mmcblk0p2: one series per root
#           mount, the binds counted; then 50,001 mounts (11 MB) with /boot/firmware last: it is
#           seen (the table was cut at 4 MiB before, silently);
#   boot    config.txt including 9 files of 6 includes each: 64 includes followed, the limit in
#           diskprobe_boot_config_problems{kind="include_limit"}.
# For each: series count, page size, scrape time and RSS (VmHWM) are printed, so the same script
# run on an older binary shows the figures before the bounds. Pass/fail is on counts only; the
# times and memory are printed, with generous ceilings that only catch a return of the blow-up.
# Usage: bounds_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"
for tool in curl python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
N=${BOUNDS_KMSG_RECORDS:-100000}

cp -r "$SRC/tests/fixtures/roots/faults" root
ROOT=$E2E_WORK/root
ALL_OFF=(--no-collector.probes --no-collector.block_stat --no-collector.mmc_ios --no-collector.mmc_card
  --no-collector.boot_config --no-collector.board --no-collector.mounts --no-collector.kmsg)
PATHS=(--path.sysfs="$ROOT/sys" --path.procfs="$ROOT/proc" --path.rootfs="$ROOT" --path.debugfs="$ROOT/debug"
  --path.kmsg="$ROOT/kmsg")

# only COLLECTOR: the flags that leave just that collector on.
only() {
  local f out=()
  for f in "${ALL_OFF[@]}"; do [ "$f" = "--no-collector.$1" ] || out+=("$f"); done
  printf '%s\n' "${out[@]}"
}
hwm_kb() { awk '/^VmHWM:/ { print $2 }' "/proc/$EXPORTER_PID/status"; }
# timed_scrape FILE: the page into FILE, the seconds it took on stdout.
timed_scrape() { curl -sS --max-time 120 -o "$1" -w '%{time_total}\n' "http://$EXPORTER_ADDR/metrics"; }
series() { grep -c "^$1[{ ]" "$2" || true; }
value() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
report() {  # report NAME PAGE SECONDS
  printf 'figures %s: page %s bytes, scrape %s s, VmHWM %s kB\n' "$1" "$(stat -c %s "$2")" "$3" "$(hwm_kb)"
}

# --- kmsg --------------------------------------------------------------------------------------
python3 - "$ROOT/kmsg" "$N" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "a") as f:
    for i in range(n):
        f.write("3,%d,%d,-;I/O error, dev fake%dq, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0\n"
                % (10000 + i, 2000000 + i, i))
    f.write("3,%d,0,-;" % (10000 + n) + "x" * (8 << 20))  # no newline yet
PY
log "kmsg: $N records naming $N devices, then an 8 MiB line without a newline"
mapfile -t FLAGS < <(only kmsg)
start_exporter "${FLAGS[@]}" "${PATHS[@]}"
want=$((N + 36))  # the fixture's 36 records
for _ in $(seq 1 600); do
  timed_scrape page >/dev/null
  [ "$(value diskprobe_kernel_log_records_total page)" = "$want" ] && break
  sleep 0.2
done
printf '\n' >>"$ROOT/kmsg"  # the long line ends
sleep 1.5                    # a regular file is polled once a second
t=$(timed_scrape page)
report kmsg page "$t"
s=$(series diskprobe_kernel_messages_total page)
printf 'figures kmsg: %s diskprobe_kernel_messages_total series, records %s\n' "$s" \
  "$(value diskprobe_kernel_log_records_total page)"
check "kmsg: every record read ($want)" test "$(value diskprobe_kernel_log_records_total page)" = "$want"
# Two disks x 10 kinds, under_voltage, and nothing per fake name.
check "kmsg: series of the monitored disks only ($s <= 21)" test "$s" -le 21
check "kmsg: no series per unknown name" test "$(grep -c 'device="fake' page || true)" = 0
# The fixture's own log names loop7 (gone) and others: N more than the fixture alone gives.
u=$(value 'diskprobe_kernel_messages_unattributed_total{kind="io_error",reason="unmonitored"}' page)
check "kmsg: the $N messages counted without a name ($u)" awk -v u="${u:-0}" -v n="$N" 'BEGIN { exit !(u >= n && u <= n + 36) }'
check "kmsg: the 8 MiB line skipped and counted" \
  test "$(value 'diskprobe_kernel_log_skipped_records_total{reason="oversized"}' page)" = 1
# Under ASan the quarantine keeps freed memory (256 MB by default): the figure is printed only.
if sanitized_build "$EXPORTER"; then
  log "sanitized build: VmHWM $(hwm_kb) kB not checked"
else
  check "kmsg: VmHWM $(hwm_kb) kB < 200 MB" test "$(hwm_kb)" -lt 200000
fi
stop_exporter

# --- mounts ------------------------------------------------------------------------------------
MI=$ROOT/proc/1/mountinfo
cp "$MI" mountinfo.orig
python3 - "$MI" <<'PY'
import sys
with open(sys.argv[1], "a") as f:
    for i in range(10000):
        f.write("%d 27 179:2 /var/lib/kubelet/pods/%d /var/lib/kubelet/pods/%d/volumes/v rw,relatime shared:1"
                " - ext4 /dev/mmcblk0p2 rw\n" % (5000 + i, i, i))
PY
log "mounts: 10,000 bind mounts of a directory on mmcblk0p2"
mapfile -t FLAGS < <(only mounts)
start_exporter "${FLAGS[@]}" "${PATHS[@]}"
t=$(timed_scrape page)
report mounts-bind page "$t"
s=$(series diskprobe_filesystem_read_only page)
printf 'figures mounts-bind: %s diskprobe_filesystem_read_only series\n' "$s"
check "mounts: bind mounts give no series ($s <= 10)" test "$s" -le 10
b=$(value 'diskprobe_filesystem_mounts_omitted{reason="bind"}' page)
check "mounts: the 10,000 binds are counted ($b, the fixture has a few)" awk -v b="${b:-0}" 'BEGIN { exit !(b >= 10000 && b < 10010) }'
check "mounts: success" test "$(value 'diskprobe_collector_success{collector="mounts"}' page)" = 1
stop_exporter

python3 - mountinfo.orig "$MI" <<'PY'
import sys
orig = [l for l in open(sys.argv[1]) if " /boot/firmware " not in l]
boot = [l for l in open(sys.argv[1]) if " /boot/firmware " in l]
with open(sys.argv[2], "w") as f:
    f.writelines(orig)
    for i in range(50000 - len(orig)):
        f.write("%d 27 0:%d / /run/containerd/io.containerd.runtime.v2.task/k8s.io/%064x/rootfs rw,relatime"
                " - overlay overlay rw,lowerdir=/var/lib/x,upperdir=/var/lib/y\n" % (100000 + i, 1000 + i, i))
    f.writelines(boot)
PY
log "mounts: $(wc -l <"$MI") mounts, $(stat -c %s "$MI") bytes, /boot/firmware last"
start_exporter "${FLAGS[@]}" "${PATHS[@]}"
t=$(timed_scrape page)
report mounts-big page "$t"
check "mounts: the last mount of an 11 MB table is seen" grep -q 'mountpoint="/boot/firmware"' page
check "mounts: success" test "$(value 'diskprobe_collector_success{collector="mounts"}' page)" = 1
stop_exporter

# --- boot_config --------------------------------------------------------------------------------
mkdir -p "$ROOT/boot/firmware"
python3 - "$ROOT/boot/firmware" <<'PY'
import sys
d = sys.argv[1]
open(d + "/config.txt", "w").write("".join("include f%d.txt\n" % i for i in range(6)) + "enable_uart=1\n")
for n in range(9):
    open(d + "/f%d.txt" % n, "w").write("".join("include f%d.txt\n" % ((n + k) % 9) for k in range(1, 7)))
PY
log "boot_config: config.txt including 9 files of 6 includes each"
mapfile -t FLAGS < <(only boot_config)
start_exporter "${FLAGS[@]}" "${PATHS[@]}"
first=$(timed_scrape page)
report boot-first page "$first"
t=$(timed_scrape page)
report boot-second page "$t"
check "boot_config: the include limit is reported" \
  test -n "$(value 'diskprobe_boot_config_problems{kind="include_limit"}' page)"
check "boot_config: success" test "$(value 'diskprobe_collector_success{collector="boot_config"}' page)" = 1
check "boot_config: first scrape within 5 s (printed above)" awk -v t="$first" 'BEGIN { exit !(t < 5) }'
stop_exporter

[ "$FAILURES" = 0 ] || { echo "$FAILURES check(s) failed" >&2; exit 1; }
echo "all bounds checks passed"
