#!/usr/bin/env bash
# The smart collector on a real kernel SATA path: QEMU's emulated AHCI controller with an IDE
# hard disk (`-device ahci` + `ide-hd`, which answers SMART READ DATA, READ THRESHOLDS and
# RETURN STATUS) in a guest booted with Debian's amd64 kernel (ahci, libata's SCSI-ATA
# translation, sd): the exporter runs the guest's smartctl (smartmontools from Debian) through
# SG_IO ATA PASS-THROUGH exactly as on a Pi with a SATA or USB-SAT disk. Checks:
#  1. every exported value equals the drive's own report, side by side with the guest's
#     `smartctl --json -a` and its text attribute table (`smartctl -A`, smartctl's other
#     printer): verdict, temperature, power-on hours, power cycles, reallocated sectors, the
#     model/firmware identity and each attribute's value, worst, threshold and raw;
#  2. least privilege: an exporter running as an unprivileged user in the device's group with
#     only CAP_SYS_RAWIO (ambient, as the opt-in systemd drop-in grants it) reads the disk; the
#     same user without it gets reason "permission" and no drive series;
#  3. the cost of one read (smartctl's CPU time, file input, wall time) from the exporter's own
#     counters, and the disk's /sys/block/sda/stat before and after (pass-through is not I/O of
#     the block layer's statistics, and no read or write of the medium happens).
# Usage: sata_qemu_e2e.sh BINARY. Needs qemu-system-x86_64 (qemu-system-x86), smartmontools and
# util-linux's setpriv on the host (copied into the guest), and apt-get download access for
# linux-image-amd64 and busybox-static (cached in ${DISKPROBE_E2E_CACHE:-$HOME/.cache/diskprobe-e2e},
# shared with nvme_qemu_e2e.sh). No KVM needed (TCG): a few minutes here, up to 15 on a loaded machine.
# Not in `make test` (CI's time budget): `make test-sata-qemu`. Exits 77 (skip) when QEMU or
# smartctl is missing, except under CI=true.
source "$(dirname "$0")/lib.sh"
BIN=$(readlink -f "$1")

source "$(dirname "$0")/qemu_lib.sh"
command -v qemu-system-x86_64 >/dev/null || qemu_skip "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
SMARTCTL=$(command -v smartctl || true)
[[ -n "$SMARTCTL" ]] || qemu_skip "smartctl missing (apt-get install smartmontools)"
SETPRIV=$(command -v setpriv || true)
[[ -n "$SETPRIV" ]] || qemu_skip "setpriv missing (util-linux)"

qemu_amd64_kernel

R="$E2E_WORK/root"
mkdir -p "$R"/{bin,sbin,lib,proc,sys,dev,tmp,etc,usr/sbin,usr/share}
cp "$BUSYBOX" "$R/bin/busybox"
# The SATA path and what it needs (modinfo depends=, in load order; sd_mod needs t10-pi, whose
# crc modules ask the crypto API for their generic implementations at load).
MODULES="crypto/crct10dif_common crypto/crct10dif_generic lib/crc-t10dif lib/crc64 crypto/crc64_rocksoft_generic
  lib/crc64-rocksoft block/t10-pi drivers/scsi/scsi_common drivers/scsi/scsi_mod drivers/scsi/sd_mod
  drivers/ata/libata drivers/ata/libahci drivers/ata/ahci"
qemu_modules "$R" "$KDIR/lib/modules/$KVER/kernel" "$MODULES"
qemu_copy_with_libs "$R" "$SMARTCTL" usr/sbin/smartctl
mkdir -p "$R/opt"
# Not in /bin: busybox --install puts its own setpriv applet there (no --reuid, no --bounding-set).
qemu_copy_with_libs "$R" "$SETPRIV" opt/setpriv
qemu_copy_with_libs "$R" "$BIN" bin/diskprobe_exporter
# smartctl's drive database (it has a built-in copy too; the packaged file is what a Pi uses).
[[ -d /usr/share/smartmontools ]] && cp -r /usr/share/smartmontools "$R/usr/share/"
echo 'root:x:0:0::/:/bin/sh' > "$R/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\n' > "$R/etc/group"
cat > "$R/etc/exporter.yml" <<'YML'
probes: {enabled: false}
health: {smart_interval: 1s, smartctl_timeout: 60s, smartctl_path: /usr/sbin/smartctl}
YML
cat > "$R/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /etc/modules); do insmod /lib/$m.ko || echo "=== insmod $m failed"; done
i=0; while [ ! -e /sys/block/sda ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
[ -e /sys/block/sda ] || { echo "=== no sda"; echo "=== done"; poweroff -f; }
ip link set lo up
chgrp 6 /dev/sda; chmod 0660 /dev/sda
metrics() { wget -qO- http://127.0.0.1:$1/metrics | grep '^diskprobe_smart'; }
wait_for() {  # PORT PATTERN: about three minutes at most (each scrape is slow under TCG)
  i=0; while ! metrics $1 2>/dev/null | grep -- "$2" >/dev/null && [ $i -lt 180 ]; do sleep 1; i=$((i+1)); done
  echo "=== waited $i s for $2"
}
echo "=== sysfs"; readlink /sys/block/sda/device; cat /sys/block/sda/device/vendor /sys/block/sda/device/model; echo "=== end"
echo "=== smartjson"; smartctl --json -a /dev/sda; echo "=== end"
echo "=== smarttext"; smartctl -H -A /dev/sda; echo "=== end"
echo "=== stat-before"; cat /sys/block/sda/stat; echo "=== end"
# 1: as root (every right), the comparison's run.
/bin/diskprobe_exporter --config.file=/etc/exporter.yml --web.listen-address=127.0.0.1:29100 \
  --no-collector.kmsg --no-collector.probes --log.level=warn 2>/tmp/exporter.log &
wait_for 29100 '^diskprobe_smart_reads_total{device="sda"} [2-9]'
echo "=== stat-after"; cat /sys/block/sda/stat; echo "=== end"
echo "=== metrics"; metrics 29100; echo "=== end"
kill $!
# 2a: unprivileged user (65534) in the disk group with CAP_SYS_RAWIO ambient (the drop-in's
# grant); 2b: the same user without it (the packaged unit's default). Both at once.
echo "=== setpriv-check"; /opt/setpriv --reuid=65534 --regid=65534 --groups=6 --inh-caps=-all,+sys_rawio \
  --ambient-caps=-all,+sys_rawio --bounding-set=-all,+sys_rawio grep Cap /proc/self/status 2>&1; echo "=== end"
/opt/setpriv --reuid=65534 --regid=65534 --groups=6 --inh-caps=-all,+sys_rawio --ambient-caps=-all,+sys_rawio \
  --bounding-set=-all,+sys_rawio /bin/diskprobe_exporter --config.file=/etc/exporter.yml \
  --web.listen-address=127.0.0.1:29101 --no-collector.kmsg --no-collector.probes --log.level=warn 2>/tmp/exporter-rawio.log &
RAWIO=$!
/opt/setpriv --reuid=65534 --regid=65534 --groups=6 --inh-caps=-all --ambient-caps=-all --bounding-set=-all \
  /bin/diskprobe_exporter --config.file=/etc/exporter.yml \
  --web.listen-address=127.0.0.1:29102 --no-collector.kmsg --no-collector.probes --log.level=warn 2>/tmp/exporter-nocap.log &
wait_for 29101 '^diskprobe_smart_up{device="sda"} 1'
echo "=== caps"; grep Cap /proc/$RAWIO/status; echo "=== end"
echo "=== metrics-rawio"; metrics 29101; echo "=== end"
wait_for 29102 '^diskprobe_smart_up{device="sda"} 0'
echo "=== metrics-nocap"; metrics 29102; echo "=== end"
echo "=== exporter-log"; cat /tmp/exporter.log /tmp/exporter-rawio.log /tmp/exporter-nocap.log; echo "=== end"
echo "=== done"
poweroff -f
INIT
chmod +x "$R/init"
qemu_initrd "$R" "$E2E_WORK/initrd.gz"
truncate -s 64M "$E2E_WORK/sata.img"

CONSOLE="$E2E_WORK/console.log"
# no_timer_check: on a loaded host the emulated CPU can be too slow for the kernel's IO-APIC
# timer check ("IO-APIC + timer doesn't work!" panic, seen here at a load of 15 on 2 cores).
log "booting $KPKG under QEMU (TCG) with an AHCI SATA disk"
qemu-system-x86_64 -m 512 -smp 1 -nographic -no-reboot -nodefaults -serial "file:$CONSOLE" \
  -kernel "$KDIR/boot/vmlinuz-$KVER" -initrd "$E2E_WORK/initrd.gz" \
  -append "console=ttyS0 rdinit=/init quiet panic=-1 no_timer_check" \
  -drive file="$E2E_WORK/sata.img",if=none,id=d0,format=raw \
  -device ahci,id=ahci0 -device ide-hd,drive=d0,bus=ahci0.0,serial=diskprobe01,model=DISKPROBE-SATA &
QEMU_PID=$!
E2E_PIDS+=("$QEMU_PID")
START=$SECONDS
until grep -q '=== done' "$CONSOLE" 2>/dev/null; do
  if ! kill -0 "$QEMU_PID" 2>/dev/null || (( SECONDS - START > 1200 )); then
    tail -40 "$CONSOLE" >&2; echo "FAIL: the guest did not finish" >&2; exit 1
  fi
  sleep 1
done
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
        m = re.match(r'(\w+)(?:\{([^}]*)\})? (\S+)$', line)
        if m: out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out
fails = 0
def row(name, want, have):
    global fails
    ok = have is not None and want is not None and float(want) == float(have)
    if not ok: fails += 1
    print("  %-34s %18s %18s  %s" % (name, want, have, "ok" if ok else "MISMATCH"))
j = json.loads(section("smartjson"))
got = metrics("metrics")
D = 'device="sda"'
g = lambda n, l=D: got.get((n, l))
print("SATA disk (QEMU ide-hd on AHCI)        guest smartctl --json   exporter")
row("smart_up", 1, g("diskprobe_smart_up"))
row("health passed", 1 if j["smart_status"]["passed"] else 0, g("diskprobe_smart_health_passed"))
row("temperature (C)", j["temperature"]["current"], g("diskprobe_smart_temperature_celsius"))
row("power-on hours", j["power_on_time"]["hours"], g("diskprobe_smart_power_on_seconds_total") / 3600 if g("diskprobe_smart_power_on_seconds_total") is not None else None)
row("power cycles", j["power_cycle_count"], g("diskprobe_smart_power_cycles_total"))
attrs = {a["id"]: a for a in j["ata_smart_attributes"]["table"]}
if 5 in attrs: row("reallocated sectors (5 raw)", attrs[5]["raw"]["value"], g("diskprobe_smart_reallocated_sectors_total"))
for fam, aid in (("diskprobe_smart_pending_sectors", 197), ("diskprobe_smart_offline_uncorrectable_sectors", 198)):
    if aid not in attrs and g(fam) is not None: print("  %s present but the drive has no attribute %d" % (fam, aid)); fails += 1
info = [k for k in got if k[0] == "diskprobe_smart_info"]
want_info = 'device="sda",firmware="%s",model="%s",model_family="%s",protocol="%s",type="%s"' % (
    j["firmware_version"], j["model_name"], j.get("model_family", ""), j["device"]["protocol"], j["device"]["type"])
print("  info: %s  %s" % (info[0][1] if info else None, "ok" if info and info[0][1] == want_info else "MISMATCH (want %s)" % want_info))
if not (info and info[0][1] == want_info): fails += 1
# The attribute table: JSON and the text printer's columns, against the exporter.
text_rows = {}
for line in section("smarttext").splitlines():
    m = re.match(r'\s*(\d+)\s+(\S+)\s+0x[0-9a-f]+\s+(\d+)\s+(\d+)\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(.+?)\s*$', line)
    if m: text_rows[int(m.group(1))] = (m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5)), m.group(6))
print("attribute (id name)         json value/worst/thresh/raw  smartctl -A text (raw decoded)  exporter")
for aid, a in sorted(attrs.items()):
    L = D + ',id="%d",name="%s"' % (aid, a["name"])
    mine = tuple(g(f, L) for f in ("diskprobe_smart_attribute_value", "diskprobe_smart_attribute_worst",
                                   "diskprobe_smart_attribute_threshold", "diskprobe_smart_attribute_raw"))
    want = (a["value"], a["worst"], a["thresh"], a["raw"]["value"])
    t = text_rows.get(aid)
    # The text printer shows the raw field decoded (raw.string: "31 (Min/Max 31/31)"); the
    # exporter exports the 48-bit raw.value, as the JSON has it.
    ok = (all(m is not None for m in mine) and tuple(int(m) for m in mine) == want and t is not None
          and t[0] == a["name"] and t[1:4] == want[:3] and t[4] == a["raw"]["string"])
    if not ok: fails += 1
    print("  %3d %-24s %-24s %-24s %-24s %s" % (aid, a["name"], "/".join(map(str, want)), "/".join(map(str, t[1:])) if t else None,
          "/".join(str(int(m)) if m is not None else "-" for m in mine), "ok" if ok else "MISMATCH"))
if len(attrs) == 0: print("  no attributes in the guest's smartctl report"); fails += 1
# 2a: an unprivileged user with only CAP_SYS_RAWIO reads the disk as root does.
rawio = metrics("metrics-rawio")
same = [k for k in got if k[0].startswith("diskprobe_smart_attribute_") or k[0] in (
    "diskprobe_smart_health_passed", "diskprobe_smart_temperature_celsius", "diskprobe_smart_power_on_seconds_total")]
diff = [k for k in same if rawio.get(k) != got[k]]
print("as uid 65534 with only CAP_SYS_RAWIO: smart_up=%s, %d drive series, %d differ from root's" % (
    rawio.get(("diskprobe_smart_up", D)), len(same), len(diff)))
if rawio.get(("diskprobe_smart_up", D)) != 1 or diff or not same: fails += 1
# 2b: without CAP_SYS_RAWIO.
nocap = metrics("metrics-nocap")
perm = nocap.get(("diskprobe_smart_read_failures_total", D + ',reason="permission"'))
up = nocap.get(("diskprobe_smart_up", D))
drive = [k for k in nocap if k[0] in ("diskprobe_smart_temperature_celsius", "diskprobe_smart_info", "diskprobe_smart_attribute_value")]
print("without CAP_SYS_RAWIO: smart_up=%s, failures{reason=permission}=%s, drive series=%d" % (up, perm, len(drive)))
if up != 0 or not perm or drive: fails += 1
caps = section("caps")
print("with the drop-in's grant: " + " ".join(l.split(":")[0] + "=" + l.split()[-1] for l in caps.splitlines()))
sys.exit(1 if fails else 0)
PY
# 3: the cost of a read, from the exporter's own accounting (TCG emulation: a Pi is faster per
# instruction than this guest).
tr -d '\r' < "$CONSOLE" | sed -n '/=== metrics$/,/=== end/p' | awk '
  /^diskprobe_smart_reads_total/ {n = $2} /^diskprobe_smart_read_cpu_seconds_total/ {c = $2}
  /^diskprobe_smart_read_duration_seconds/ {d = $2} /^diskprobe_smart_read_input_bytes_total/ {b = $2}
  END { if (n > 0) printf "cost: %d runs, %.1f ms CPU (smartctl, user+system) and %.0f bytes of file input per run, last run %.1f ms wall (TCG guest)\n", n, 1000 * c / n, b / n, 1000 * d }'
paste <(sed -n '/=== stat-before/{n;p}' "$CONSOLE" | tr -d '\r') <(sed -n '/=== stat-after/{n;p}' "$CONSOLE" | tr -d '\r') |
  awk '{printf "sda stat during the exporter runs: reads %d->%d, sectors read %d->%d, writes %d->%d\n", $1, $18, $3, $20, $5, $22}'
if (( FAILURES )); then echo "FAILED: $FAILURES"; tail -80 "$CONSOLE"; exit 1; fi
echo "PASS"
