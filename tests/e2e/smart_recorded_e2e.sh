#!/usr/bin/env bash
# The smart collector on recorded smartctl replies of real drives (tests/fixtures/samples/smartctl/:
# an SSD through SAT, a failing disk behind a JMicron USB bridge, a JMicron USB-NVMe bridge that
# refused the pass-through, a SCSI disk): a stand-in smartctl prints each recorded JSON with its exit status, the
# real exporter runs it as its child for an sd disk of a fixture sysfs, and every exported value is
# shown side by side with the drive's own report and must equal it; `promtool check metrics` must
# be clean. What is compared follows smartctl's JSON schema, not the examples: the common fields
# (smart_status, temperature, power_on_time, power_cycle_count, the exit status bits), the ATA
# attribute table (ata_smart_attributes), the SCSI grown defect list and error counter log, the
# NVMe health log of a drive behind a USB-NVMe bridge (nvme_smart_health_information_log), and
# for a failed run (exit status bit 0 or 1) the failure counted with no drive series at all. A
# recording of a vendor dialect (device.type usb*, snt*) is run with that type in
# health.smart_device_types, so smartctl gets `-d TYPE`. About 10 s on a loaded machine. The
# same chain on a real kernel path (SG_IO through libata): sata_qemu_e2e.sh.
source "$(dirname "$0")/lib.sh"
EXPORTER=$(readlink -f "$1")
RT=()
FIX=$(cd "$(dirname "$0")/../fixtures/samples/smartctl" && pwd)
# The exporter runs smartctl only when the child would hold CAP_SYS_RAWIO: root here.
if [[ $(id -u) != 0 ]]; then [[ "${CI:-}" == true ]] && { echo "FAIL: needs root"; exit 1; }; echo "SKIP: needs root"; exit 77; fi
command -v promtool >/dev/null || { [[ "${CI:-}" == true ]] && { echo "FAIL: promtool missing"; exit 1; }; echo "SKIP: promtool"; exit 77; }

for f in "$FIX"/*.json; do
  name=$(basename "$f" .json)
  W="$E2E_WORK/$name"
  mkdir -p "$W/sys/block/sda" "$W/dev"
  echo 8:0 > "$W/sys/block/sda/dev"
  grep -v '^#' "$f" > "$W/report.json"
  status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["smartctl"]["exit_status"])' "$W/report.json")
  printf '#!/bin/sh\necho "$@" > %s/argv\ncat %s/report.json\nexit %s\n' "$W" "$W" "$status" > "$W/smartctl"
  chmod +x "$W/smartctl"
  type=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("device", {}).get("type", ""))' "$W/report.json")
  dash_d=""
  case $type in usb*|snt*) dash_d="-d $type " ;; esac
  printf 'probes: {enabled: false}\nhealth: {smart_interval: 1h, smartctl_path: %s/smartctl, smart_device_types: {%s}}\n' \
    "$W" "${dash_d:+sda: $type}" > "$W/cfg.yml"
  start_exporter --config.file="$W/cfg.yml" --path.sysfs="$W/sys" --path.devfs="$W/dev" \
    --no-collector.kmsg --no-collector.probes --collector.smart
  for i in $(seq 1 50); do scrape > "$W/metrics.txt"; grep -q '^diskprobe_smart_up{device="sda"}' "$W/metrics.txt" && break; sleep 0.1; done
  stop_exporter
  check "$name: promtool check metrics" bash -c "promtool check metrics < '$W/metrics.txt'"
  check "$name: smartctl run as $(cat "$W/argv")" grep -qx -- "--json=c --info --health --attributes --nocheck=standby,3 $dash_d$W/dev/sda" "$W/argv"
  python3 - "$W/report.json" "$W/metrics.txt" "$name" <<'PY' || FAILURES=$((FAILURES + 1))
import json, re, sys
j = json.load(open(sys.argv[1]))
got = {}
for line in open(sys.argv[2]):
    m = re.match(r'(\w+)(?:\{([^}]*)\})? (\S+)$', line.strip())
    if m: got[(m.group(1), m.group(2) or "")] = float(m.group(3))
D = 'device="sda"'
g = lambda n, l=D: got.get((n, l))
fails = 0
def row(what, want, have):
    global fails
    ok = (want is None and have is None) or (want is not None and have is not None and float(want) == float(have))
    fails += not ok
    print("  %-44s %22s %22s  %s" % (what, want, have, "ok" if ok else "MISMATCH"))
dev = j.get("device", {})
st = j["smartctl"]["exit_status"]
print("%s (%s, %s)                 recorded smartctl JSON      exporter" % (sys.argv[3], dev.get("type"), j.get("model_name", "-")))
if st & 3:
    # smartctl could not reach the drive: the run counts as failed and nothing of the drive is exported.
    msgs = " ".join(m["string"] for m in j["smartctl"].get("messages", []))
    reason = "unknown_usb_bridge" if "Unknown USB bridge" in msgs else (
        ("permission" if "Permission denied" in msgs or "Operation not permitted" in msgs else "open") if st & 2 else "command_line")
    row("smart_up", 0, g("diskprobe_smart_up"))
    row("failures, reason %s" % reason, 1, g("diskprobe_smart_read_failures_total", D + ',reason="%s"' % reason))
    drive = sorted(n for (n, l) in got if D in l and n.startswith("diskprobe_smart_") and n not in (
        "diskprobe_smart_up", "diskprobe_smart_read_failures_total", "diskprobe_smart_reads_total",
        "diskprobe_smart_read_cpu_seconds_total", "diskprobe_smart_read_input_bytes_total"))
    row("drive series exported", 0, len(drive))
    if drive: print("   ", drive)
    sys.exit(1 if fails else 0)
def opt(*path):  # a field smartctl writes only when the drive answered the command behind it
    o = j
    for k in path: o = o.get(k) if isinstance(o, dict) else None
    return o
row("smart_up", 1, g("diskprobe_smart_up"))
passed = opt("smart_status", "passed")
row("health passed", None if passed is None else int(passed), g("diskprobe_smart_health_passed"))
row("temperature (C)", opt("temperature", "current"), g("diskprobe_smart_temperature_celsius"))
h = opt("power_on_time", "hours")
row("power-on seconds", None if h is None else h * 3600, g("diskprobe_smart_power_on_seconds_total"))
row("power cycles", j.get("power_cycle_count"), g("diskprobe_smart_power_cycles_total"))
for b, kind in enumerate(["command_failed", "disk_failing", "prefail_below_threshold", "below_threshold_past", "error_log", "self_test_errors"]):
    row("exit status bit %d (%s)" % (b + 2, kind), (st >> (b + 2)) & 1, g("diskprobe_smart_status_bit", D + ',kind="%s"' % kind))
attrs = {a["id"]: a for a in (opt("ata_smart_attributes", "table") or [])}
for aid, fam in ((5, "diskprobe_smart_reallocated_sectors_total"), (197, "diskprobe_smart_pending_sectors"),
                 (198, "diskprobe_smart_offline_uncorrectable_sectors")):
    row("attribute %d raw" % aid, attrs[aid]["raw"]["value"] if aid in attrs else None, g(fam))
n = 0
for aid, a in attrs.items():
    L = D + ',id="%d",name="%s"' % (aid, a["name"])
    mine = tuple(g(f, L) for f in ("diskprobe_smart_attribute_value", "diskprobe_smart_attribute_worst",
                                   "diskprobe_smart_attribute_threshold", "diskprobe_smart_attribute_raw"))
    want = (a["value"], a["worst"], a["thresh"], a["raw"]["value"])
    if mine != tuple(float(x) for x in want):
        fails += 1; print("  attribute %d %s: %s, exporter %s  MISMATCH" % (aid, a["name"], want, mine))
    else: n += 1
print("  %d of %d attributes: value/worst/threshold/raw equal" % (n, len(attrs)))
row("SCSI grown defect list", j.get("scsi_grown_defect_list"), g("diskprobe_smart_scsi_grown_defects_total"))
for kind in ("read", "write", "verify"):
    row("SCSI %s uncorrected errors" % kind, opt("scsi_error_counter_log", kind, "total_uncorrected_errors"),
        g("diskprobe_smart_scsi_uncorrected_errors_total", D + ',kind="%s"' % kind))
nv = j.get("nvme_smart_health_information_log")
row("NVMe critical warning", None if nv is None else nv["critical_warning"], g("diskprobe_smart_nvme_critical_warning"))
row("NVMe media errors", None if nv is None else nv["media_errors"], g("diskprobe_smart_nvme_media_errors_total"))
if nv is not None and not attrs:
    # Without an ATA table the writes and the wear come from the NVMe log alone.
    row("NVMe data units written x 512000", nv["data_units_written"] * 512000,
        g("diskprobe_smart_written_bytes_total", 'attribute="data_units_written",' + D))
    row("NVMe 1 - percentage used / 100", max(0.0, 1 - nv["percentage_used"] / 100),
        g("diskprobe_smart_life_remaining_ratio", 'attribute="percentage_used",' + D))
sys.exit(1 if fails else 0)
PY
done
if (( FAILURES )); then echo "FAILED: $FAILURES"; exit 1; fi
echo "PASS"
