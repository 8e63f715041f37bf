#!/usr/bin/env bash
# The nvme collector on a real kernel NVMe driver: QEMU's emulated NVMe controller
# (`-device nvme`, which implements the SMART / Health Information log page) in a guest booted
# with Debian's amd64 kernel and a small initramfs (busybox, nvme-cli, the exporter). Checks:
#  1. the exporter's page values equal the guest's own `nvme smart-log -o json`, field by field;
#  2. setting the controller's critical warning from the host (QMP qom-set smart_critical_warning)
#     shows in diskprobe_nvme_critical_warning{kind=...} at the next read, as nvme-cli sees it.
# Usage: nvme_qemu_e2e.sh BINARY. Needs qemu-system-x86_64 (qemu-system-x86), nvme-cli and
# apt-get download access for linux-image-amd64 and busybox-static (cached in
# ${DISKPROBE_E2E_CACHE:-$HOME/.cache/diskprobe-e2e}). No KVM needed (TCG): about a minute here.
# Not in `make test` (CI's time budget): `make test-nvme-qemu`. Exits 77 (skip) when QEMU or
# nvme-cli is missing, except under CI=true.
source "$(dirname "$0")/lib.sh"
BIN=$(readlink -f "$1")

source "$(dirname "$0")/qemu_lib.sh"
command -v qemu-system-x86_64 >/dev/null || qemu_skip "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
command -v nvme >/dev/null || qemu_skip "nvme-cli missing (apt-get install nvme-cli)"
qemu_amd64_kernel

# The initramfs: busybox, the two NVMe modules, nvme-cli and the exporter with their libraries.
R="$E2E_WORK/root"
mkdir -p "$R"/{bin,sbin,lib,proc,sys,dev,tmp,etc}
cp "$BUSYBOX" "$R/bin/busybox"
# The NVMe driver and what it needs (modinfo depends=, in load order; the crc modules ask the
# crypto API for their algorithm at load, so the generic implementations come first).
MODULES="crypto/crct10dif_common crypto/crct10dif_generic lib/crc-t10dif lib/crc64 crypto/crc64_rocksoft_generic
  lib/crc64-rocksoft block/t10-pi drivers/nvme/host/nvme-core drivers/nvme/host/nvme"
qemu_modules "$R" "$KDIR/lib/modules/$KVER/kernel" "$MODULES"
qemu_copy_with_libs "$R" "$(command -v nvme)" bin/nvme
qemu_copy_with_libs "$R" "$BIN" bin/diskprobe_exporter
cat > "$R/etc/exporter.yml" <<'YML'
probes: {enabled: false}
health: {nvme_interval: 2s}
YML
cat > "$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /etc/modules); do insmod /lib/$m.ko || echo "=== insmod $m failed"; done
i=0; while [ ! -e /sys/block/nvme0n1 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -e /sys/block/nvme0n1 ] || { echo "=== no nvme0n1"; echo "=== phase1-done"; poweroff -f; }
ip link set lo up
metrics() { wget -qO- http://127.0.0.1:29100/metrics | grep '^diskprobe_nvme'; }
echo "=== sysfs"; readlink /sys/block/nvme0n1/device; cat /sys/class/nvme/nvme0/device/power/runtime_status
# Some I/O, so the data unit and command counters are not all zero: 8 MiB written, 16 MiB read.
dd if=/dev/urandom of=/dev/nvme0n1 bs=1M count=8 conv=fsync 2>/dev/null
echo 3 > /proc/sys/vm/drop_caches
dd if=/dev/nvme0n1 of=/dev/null bs=1M count=16 2>/dev/null
echo "=== smartlog1"; nvme smart-log /dev/nvme0 -o json; echo "=== end"
/bin/diskprobe_exporter --config.file=/etc/exporter.yml --web.listen-address=127.0.0.1:29100 \
  --no-collector.kmsg --no-collector.probes --log.level=warn 2>/tmp/exporter.log &
i=0; while ! metrics 2>/dev/null | grep '^diskprobe_nvme_smart_up.* 1$' >/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
echo "=== metrics1"; metrics; echo "=== end"
echo "=== phase1-done"
i=0; while ! metrics | grep 'kind="temperature"} 1$' >/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
echo "=== metrics2"; metrics; echo "=== end"
echo "=== smartlog2"; nvme smart-log /dev/nvme0 -o json; echo "=== end"
echo "=== exporter-log"; cat /tmp/exporter.log; echo "=== end"
echo "=== cost"; metrics | grep -E '^diskprobe_nvme_smart_(reads_total|read_cpu_seconds_total|read_duration_seconds)'; echo "=== end"
poweroff -f
INIT
chmod +x "$R/init"
qemu_initrd "$R" "$E2E_WORK/initrd.gz"
truncate -s 64M "$E2E_WORK/nvme.img"

CONSOLE="$E2E_WORK/console.log"
QMP="$E2E_WORK/qmp.sock"
log "booting $KPKG under QEMU (TCG)"
qemu-system-x86_64 -m 512 -smp 1 -nographic -no-reboot -nodefaults -serial "file:$CONSOLE" \
  -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$E2E_WORK/initrd.gz" \
  -append "console=ttyS0 rdinit=/init quiet panic=-1" \
  -drive file="$E2E_WORK/nvme.img",if=none,id=d0,format=raw \
  -device nvme,id=nv0,serial=diskprobe01,drive=d0 \
  -qmp "unix:$QMP,server=on,wait=off" &
QEMU_PID=$!
E2E_PIDS+=("$QEMU_PID")
START=$SECONDS
until grep -q '=== phase1-done' "$CONSOLE" 2>/dev/null; do
  if ! kill -0 "$QEMU_PID" 2>/dev/null || (( SECONDS - START > 240 )); then
    tail -40 "$CONSOLE" >&2; echo "FAIL: the guest did not reach phase 1" >&2; exit 1
  fi
  sleep 1
done
log "guest reached phase 1 after $((SECONDS - START)) s; setting smart_critical_warning=0x02 (temperature) via QMP"
python3 - "$QMP" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
def cmd(c):
    f.write(json.dumps(c) + "\n"); f.flush()
    while True:
        r = json.loads(f.readline())
        if "return" in r or "error" in r: return r
json.loads(f.readline())
cmd({"execute": "qmp_capabilities"})
r = cmd({"execute": "qom-set", "arguments": {"path": "/machine/peripheral/nv0", "property": "smart_critical_warning", "value": 2}})
print("qom-set:", r); sys.exit(0 if "return" in r else 1)
PY
wait "$QEMU_PID" || true
log "guest done after $((SECONDS - START)) s"

python3 - "$CONSOLE" <<'PY' || FAILURES=$((FAILURES + 1))
import json, re, sys
text = open(sys.argv[1], errors="replace").read().replace("\r", "")
def section(name):
    m = re.search(r"=== %s\n(.*?)=== end" % name, text, re.S)
    if not m: sys.exit("no section %s in the console log" % name)
    return m.group(1)
def metrics(name):
    out = {}
    for line in section(name).splitlines():
        m = re.match(r'(\w+)\{([^}]*)\} (\S+)$', line)
        if m: out[(m.group(1), m.group(2))] = float(m.group(3))
    return out
L = 'controller="nvme0",device="nvme0n1"'
fails = 0
for phase, warn in (("1", 0), ("2", 2)):
    log = json.loads(section("smartlog" + phase))
    got = metrics("metrics" + phase)
    def g(name, labels=L): return got.get((name, labels))
    def k(*names):
        for n in names:
            if n in log: return log[n]
        sys.exit("nvme-cli JSON has none of %s: %s" % (names, sorted(log)))
    temp_k = k("temperature")
    rows = [
        ("critical_warning", k("critical_warning"), sum(int(g("diskprobe_nvme_critical_warning", L + ',kind="%s"' % n) or 0) << b
            for b, n in enumerate(["available_spare", "temperature", "reliability_degraded", "read_only",
                                   "volatile_memory_backup", "persistent_memory_read_only"]))),
        ("temperature (K)", temp_k, round(g("diskprobe_nvme_temperature_celsius") + 273.15, 6)),
        ("available spare %", k("avail_spare"), round(g("diskprobe_nvme_available_spare_ratio") * 100, 6)),
        ("spare threshold %", k("spare_thresh"), round(g("diskprobe_nvme_available_spare_threshold_ratio") * 100, 6)),
        ("percentage used %", k("percent_used", "percentage_used"), round(g("diskprobe_nvme_percentage_used_ratio") * 100, 6)),
        ("data units read", k("data_units_read"), g("diskprobe_nvme_data_read_bytes_total") / 512000),
        ("data units written", k("data_units_written"), g("diskprobe_nvme_data_written_bytes_total") / 512000),
        ("host read commands", k("host_read_commands"), g("diskprobe_nvme_host_read_commands_total")),
        ("host write commands", k("host_write_commands"), g("diskprobe_nvme_host_write_commands_total")),
        ("controller busy minutes", k("controller_busy_time"), g("diskprobe_nvme_controller_busy_seconds_total") / 60),
        ("power cycles", k("power_cycles"), g("diskprobe_nvme_power_cycles_total")),
        ("power-on hours", k("power_on_hours"), g("diskprobe_nvme_power_on_seconds_total") / 3600),
        ("unsafe shutdowns", k("unsafe_shutdowns"), g("diskprobe_nvme_unsafe_shutdowns_total")),
        ("media errors", k("media_errors"), g("diskprobe_nvme_media_errors_total")),
        ("error log entries", k("num_err_log_entries"), g("diskprobe_nvme_error_log_entries_total")),
        ("warning temp minutes", k("warning_temp_time"), g("diskprobe_nvme_warning_temperature_seconds_total") / 60),
        ("critical temp minutes", k("critical_comp_time"), g("diskprobe_nvme_critical_temperature_seconds_total") / 60),
    ]
    print("phase %s (smart_critical_warning set to %d)         nvme smart-log   exporter" % (phase, warn))
    for name, want, have in rows:
        # Counters of I/O may move between nvme-cli's read and the exporter's (the guest is idle:
        # they do not), so equality is required.
        status = "ok" if have is not None and float(want) == float(have) else "MISMATCH"
        if status != "ok": fails += 1
        print("  %-24s %16s %16s  %s" % (name, want, have, status))
    if k("critical_warning") != warn:
        print("  nvme-cli shows critical_warning %s, want %d" % (k("critical_warning"), warn)); fails += 1
sys.exit(1 if fails else 0)
PY
# The cost of a read, from the exporter's own accounting (TCG emulation: a Pi 5 is faster).
sed -n '/=== cost/,/=== end/p' "$CONSOLE" | awk '
  /reads_total/ {n = $2} /read_cpu_seconds_total/ {c = $2} /read_duration_seconds/ {d = $2}
  END { if (n > 0) printf "cost: %d reads, %.3f ms CPU per read, last read %.3f ms wall (TCG guest)\n", n, 1000 * c / n, 1000 * d }' 
if (( FAILURES )); then echo "FAILED: $FAILURES"; tail -60 "$CONSOLE"; exit 1; fi
echo "PASS"
