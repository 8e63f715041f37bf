#!/usr/bin/env bash
# The container image (deploy/container/Containerfile), built and run offline:
#  1. a Debian 12 base image made locally from the debootstrap root (no registry here): a slim
#     copy (no docs, man pages, locales, apt lists; dpkg told to skip them too, like the official
#     slim image) committed with `buildah from scratch`;
#  2. the amd64 .deb from CPack, the image built from the Containerfile with buildah
#     (--platform linux/amd64, BASE=<that base>); its user, entrypoint, port, OCI labels and the
#     binary's file capabilities checked; its size printed;
#  3. the image run with podman exactly as deploy/kubernetes/base/daemonset.yaml runs it: the init
#     container, then the exporter with the DaemonSet's args, user, privileged flag, read-only root
#     and mounts, all read from the manifest (tests/deploy/kubernetes/check_manifests.py), so the
#     two cannot drift. Only host paths with nothing to show on this machine are swapped: the
#     probe directory is an ext4 filesystem on an emulated card (loop device), /boot is a copy of
#     a Pi 4 fixture, and the ConfigMap's config gets short probe intervals and the card as the
#     only device. Scraping the container's IP (as Prometheus scrapes a pod IP) must show
#     diskprobe_build_info, block series of the card, a successful randread (raw device read as
#     uid 29100 through the device cgroup and the pod's supplementalGroups, i.e. group disk),
#     successful write probes in the probe directory (the init container's chown), the SD bus
#     clock from a debugfs stand-in (root 0700/0400, opened to gid 29100 by the init container, as
#     the unit's ExecStartPre does), the kernel log collector (cap_syslog, with
#     kernel.dmesg_restrict=1 here), the host's mount table, the boot config; the process runs as
#     29100 in group 6 with CAP_SYSLOG as its only capability (no CAP_DAC_READ_SEARCH); its RSS is
#     printed. The documented unprivileged variant is run too: the device cgroup then stops the
#     raw reads and the kernel log, and the write probes still work. Without CAP_SYSLOG in its
#     bounding set the image must refuse to start (the file capability is there and enforced);
#  4. arm64/armhf images from cross packages, where a package exists and qemu-user is registered
#     with binfmt_misc (built, platform checked, --version run under qemu); otherwise the reason
#     is printed (informational: the test does not register binfmt handlers itself).
# Needs root, buildah, podman with runc (crun cannot run containers on this machine's hybrid
# cgroup layout), cpack, losetup/mkfs.ext4, python3-yaml, curl. Storage: <build>/container-storage
# (vfs driver, chroot isolation: no overlay or user namespaces needed), kept between runs for the
# base image; the test's image and containers are removed at the end.
# Missing tools: skip (77) outside CI, fail under CI=true.
# Usage: container.sh <build directory>
set -euo pipefail
BUILD=$(realpath "$1")
SELF=$(realpath "$0")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"

why=""
[ "$(id -u)" -eq 0 ] || why="not root"
for tool in buildah podman cpack losetup mkfs.ext4 python3 curl getcap; do
  command -v "$tool" >/dev/null || why="${why:+$why, }no $tool"
done
python3 -c 'import yaml' 2>/dev/null || why="${why:+$why, }no python3-yaml"
RUNTIME=$(command -v runc || true)
[ -n "$RUNTIME" ] || why="${why:+$why, }no runc"
if [ -n "$why" ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: container test impossible under CI: $why" >&2; exit 1; }
  echo "SKIP: $why"; exit 77
fi

CS=$BUILD/container-storage
mkdir -p "$CS/tmp"
B() { buildah --root "$CS/root" --runroot "$CS/run" --storage-driver vfs "$@"; }
P() { podman --root "$CS/root" --runroot "$CS/run" --storage-driver vfs --tmpdir "$CS/tmp" \
        --runtime "$RUNTIME" --cgroup-manager cgroupfs --events-backend file "$@"; }
# podman asks for RLIMIT_NOFILE/NPROC above this machine's hard limits unless told (and podman
# runs itself with NPROC 32768, whatever the shell has).
ULIMITS=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit "nproc=4096:4096")
IMAGE=localhost/diskprobe-exporter:test-$$
CTRS=()
LOOP=""
container_cleanup() {
  local c
  for c in "${CTRS[@]}"; do P rm -f -t 2 "$c" >/dev/null 2>&1 || true; done
  B rmi -f "$IMAGE" "$IMAGE-arm64" "$IMAGE-armhf" >/dev/null 2>&1 || true
  B rm --all >/dev/null 2>&1 || true
  B rmi --prune >/dev/null 2>&1 || true   # earlier base images, replaced when the root changed
  if [ -n "$LOOP" ]; then
    umount "$E2E_WORK/probe" 2>/dev/null || true
    losetup -d "$LOOP" 2>/dev/null || true
  fi
  cleanup
}
trap container_cleanup EXIT

log "1. base image from the debootstrap root"
ROOT=$(deb_test_root "$BUILD")
# make_base <debootstrap root> <tag> <oci arch> [variant]: a slim base image from a root, remade
# only when the root (its dpkg status) or this script changed.
make_base() {
  local root=$1 tag=$2 arch=$3 variant=${4:-} stamp have ctr mnt t0
  stamp=$(stat -c %Y "$root/var/lib/dpkg/status")-$(sha256sum "$SELF" | cut -c1-12)
  have=$(B inspect --type image --format '{{index .ImageAnnotations "diskprobe.test.stamp"}}' "$tag" 2>/dev/null || true)
  if [ "$have" = "$stamp" ]; then ok "base image $tag reused (root unchanged)"; return 0; fi
  t0=$(date +%s)
  ctr=$(B from scratch)
  mnt=$(B mount "$ctr")
  # What the official debian:bookworm-slim leaves out, and the state of the chroot tests.
  tar -C "$root" --numeric-owner \
    --exclude='./usr/share/doc/*' --exclude='./usr/share/man/*' --exclude='./usr/share/info/*' \
    --exclude='./usr/share/locale/*' --exclude='./usr/share/lintian/*' --exclude='./var/lib/apt/lists/*' \
    --exclude='./var/cache/apt/*' --exclude='./var/log/*' --exclude='./tmp/*' --exclude='./proc/*' \
    --exclude='./sys/*' --exclude='./dev/*' --exclude='./run/*' --exclude='./etc/resolv.conf' -cf - . |
    tar -C "$mnt" --numeric-owner -xpf -
  mkdir -p "$mnt/etc/dpkg/dpkg.cfg.d"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/lintian/*' >"$mnt/etc/dpkg/dpkg.cfg.d/slim"
  B umount "$ctr" >/dev/null
  B config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd /bin/bash \
    --os linux --arch "$arch" ${variant:+--variant "$variant"} \
    --annotation "diskprobe.test.stamp=$stamp" "$ctr"
  B commit -q --rm "$ctr" "$tag" >/dev/null
  ok "base image $tag ($arch${variant:+/$variant}) made in $(( $(date +%s) - t0 )) s"
}
BASE=localhost/diskprobe-test-base:bookworm-slim
make_base "$ROOT" "$BASE" amd64

log "2. build the image from deploy/container/Containerfile (linux/amd64)"
mkdir -p ctx
(cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$E2E_WORK/pkg" >cpack.log 2>&1) || { cat cpack.log >&2; exit 1; }
cp "$E2E_WORK"/pkg/diskprobe-exporter_*_amd64.deb ctx/
printf 'package: %s\n' "$(basename ctx/*.deb)"
# The revision the packaged binary was built from (the label describes the image's contents).
REVISION=$("$BUILD/diskprobe_exporter" --version | sed -n 's/.*(revision \([^)]*\)).*/\1/p')
VERSION=$(sed -n 's/^project(diskprobe_exporter VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
t0=$(date +%s)
if B build --isolation chroot --pull=never --platform linux/amd64 \
     --build-arg "BASE=$BASE" --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
     -f "$SRC/deploy/container/Containerfile" -t "$IMAGE" ctx >build.log 2>&1; then
  ok "buildah build in $(( $(date +%s) - t0 )) s"
else
  fail "buildah build"; tail -30 build.log >&2; exit 1
fi
grep -E '^(/usr/bin/diskprobe_exporter cap_|diskprobe_exporter )' build.log | sed 's/^/  /'
SIZE=$(P image inspect --format '{{.Size}}' "$IMAGE")
printf 'image %s: %s bytes (%s MiB), base %s MiB\n' "$IMAGE" "$SIZE" "$(( SIZE / 1048576 ))" \
  "$(( $(P image inspect --format '{{.Size}}' "$BASE") / 1048576 ))"
B inspect --type image "$IMAGE" >inspect.json
python3 - inspect.json "$VERSION" "$REVISION" >inspect.txt <<'EOF' || true
import json, sys
d = json.load(open(sys.argv[1]))
c = d["OCIv1"]["config"]
labels = c.get("Labels") or {}
checks = [
    ("user is 29100:29100", c.get("User") == "29100:29100"),
    ("entrypoint is the exporter", c.get("Entrypoint") == ["/usr/bin/diskprobe_exporter"]),
    ("exposes 29100/tcp", "29100/tcp" in (c.get("ExposedPorts") or {})),
    ("architecture amd64", d["OCIv1"].get("architecture") == "amd64"),
    (f"OCI labels version={labels.get('org.opencontainers.image.version')} revision={labels.get('org.opencontainers.image.revision')}",
     labels.get("org.opencontainers.image.version") == sys.argv[2] and labels.get("org.opencontainers.image.revision") == sys.argv[3]
     and labels.get("org.opencontainers.image.title") == "diskprobe_exporter"),
]
for what, good in checks:
    print(("ok " if good else "FAIL ") + what)
EOF
while read -r verdict what; do
  if [ "$verdict" = ok ]; then ok "image config: $what"; else fail "image config: $what"; fi
done <inspect.txt
ctr=$(B from --pull=never "$IMAGE")
mnt=$(B mount "$ctr")
CAPS=$(getcap "$mnt/usr/bin/diskprobe_exporter" | sed 's/.* //')
check "binary file capabilities: $CAPS (CAP_SYSLOG alone, no cap_dac_read_search)" test "$CAPS" = "cap_syslog=ep"
check "no apt lists, no .deb and no libcap2-bin left in the image" bash -c \
  "[ -z \"\$(ls -A '$mnt/var/lib/apt/lists' 2>/dev/null | grep -v '^partial$' | grep -v '^lock$')\" ] &&
   ! ls '$mnt'/tmp/debs >/dev/null 2>&1 && [ ! -e '$mnt/sbin/setcap' ] && [ ! -e '$mnt/usr/sbin/setcap' ]"
check "user diskprobe is 29100, in group disk (gid 6): $(grep '^disk:' "$mnt/etc/group")" bash -c \
  "grep -q '^diskprobe:x:29100:29100:' '$mnt/etc/passwd' && grep -qE '^disk:x:6:(.*,)?diskprobe(,|\$)' '$mnt/etc/group'"
B umount "$ctr" >/dev/null; B rm "$ctr" >/dev/null

log "2b. the file capabilities' contract"
# Without CAP_SYSLOG in the bounding set the kernel refuses to exec the binary (its file
# capability has the effective bit); with it alone, as the plain non-root user, it runs.
if P run --rm "${ULIMITS[@]}" "$IMAGE" --version >nocaps.log 2>&1; then
  fail "the image ran without CAP_SYSLOG in the bounding set (file capability lost?)"
else
  ok "default capabilities: exec refused: $(grep -o 'operation not permitted' nocaps.log | head -n1)"
fi
if P run --rm "${ULIMITS[@]}" --cap-drop ALL --cap-add SYSLOG "$IMAGE" --version >caps.log 2>&1; then
  ok "--cap-drop ALL --cap-add SYSLOG: $(head -n1 caps.log)"
else
  fail "--cap-drop ALL --cap-add SYSLOG: $(tail -n1 caps.log)"
fi

log "3. run it as deploy/kubernetes/base/daemonset.yaml does"
# An emulated card: its ext4 filesystem is the probe directory (the one writable host path).
truncate -s 96M card.img
LOOP=$(losetup -f --show --direct-io=on card.img)
CARD=${LOOP#/dev/}
mkfs.ext4 -q -F "$LOOP"
mkdir -p probe && mount -o noatime "$LOOP" probe
mkdir -p boot && cp -r "$SRC/tests/fixtures/roots/pi4/boot/." boot/
# debugfs as a Pi 4 has it (a CM4's mmc0/ios), with debugfs' modes: the mount point root 0700,
# its directories 0755 (debugfs_create_dir), the ios file root 0400.
mkdir -p debugfs/mmc0 && cp "$SRC/tests/fixtures/roots/cm4/debug/mmc0/ios" debugfs/mmc0/ios
chown -R 0:0 debugfs && chmod 0700 debugfs && chmod 0755 debugfs/mmc0 && chmod 0400 debugfs/mmc0/ios
# The DaemonSet's container spec, with the host paths this machine cannot offer swapped.
python3 - "$SRC" "$E2E_WORK" "$CARD" >spec.sh <<'EOF'
import shlex, sys, yaml
src, work, card = sys.argv[1:4]
sys.path.insert(0, f"{src}/tests/deploy/kubernetes")
import check_manifests as cm
k8s = f"{src}/deploy/kubernetes"
args, binds, tmpfs, (uid, gid), privileged, port = cm.container_run_spec(k8s)
objs = cm.load_all(k8s)
ds = objs["DaemonSet"][0]
init = ds["spec"]["template"]["spec"]["initContainers"][0]
swap = {"/var/lib/diskprobe_exporter": f"{work}/probe", "/boot": f"{work}/boot", "/sys/kernel/debug": f"{work}/debugfs"}
cfg = yaml.safe_load(cm.config_text(k8s))
cfg["devices"]["include"] = [card]
for probe, s in cfg["probes"]["defaults"].items():
    s["interval"] = "2s"
cfg["probes"]["defaults"]["seqread"].update(size="1MiB")
with open(f"{work}/config.yml", "w") as fh:
    yaml.safe_dump(cfg, fh)
vols = []
for host, ctr, ro in binds:
    if host.startswith("configMap:"):
        host = f"{work}/configmap"
        import os
        os.makedirs(host, exist_ok=True)
        os.replace(f"{work}/config.yml", f"{host}/config.yml")
    host = swap.get(host, host)
    vols += ["-v", f"{host}:{ctr}" + (":ro" if ro else "")]
run = ["--user", f"{uid}:{gid}", "--read-only"] + (["--privileged"] if privileged else [])
# The pod's supplementalGroups (disk), as the kubelet passes them.
groups = ds["spec"]["template"]["spec"].get("securityContext", {}).get("supplementalGroups", [])
for g in groups:
    run += ["--group-add", str(g)]
for t in tmpfs:
    run += ["--tmpfs", f"{t}:rw,mode=1777,size=1m"]
isc = init["securityContext"]
initrun = ["--user", f"{isc['runAsUser']}:{isc['runAsGroup']}", "--read-only", "--cap-drop", "ALL",
           "--security-opt", "no-new-privileges", "--security-opt", "seccomp=/usr/share/containers/seccomp.json"]
for c in isc["capabilities"].get("add", []):
    initrun += ["--cap-add", c]
vols_by_name = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
for m in init["volumeMounts"]:
    host = vols_by_name[m["name"]]["hostPath"]["path"]
    initrun += ["-v", f"{swap.get(host, host)}:{m['mountPath']}" + (":ro" if m.get("readOnly") else "")]
for g in groups:
    initrun += ["--group-add", str(g)]
initrun += ["--entrypoint", init["command"][0]]
print("RUN_OPTS=(" + " ".join(map(shlex.quote, run + vols)) + ")")
print("EXPORTER_ARGS=(" + " ".join(map(shlex.quote, args)) + ")")
print("INIT_OPTS=(" + " ".join(map(shlex.quote, initrun)) + ")")
print("INIT_ARGS=(" + " ".join(map(shlex.quote, init["command"][1:])) + ")")
print(f"PORT={port}")
print("GROUPS_ADDED=(" + " ".join(str(g) for g in groups) + ")")
EOF
source spec.sh
[ -f /usr/share/containers/seccomp.json ] || INIT_OPTS=("${INIT_OPTS[@]/seccomp=*/seccomp=unconfined}")
printf '  init:     podman run %s IMAGE %s\n' "${INIT_OPTS[*]}" "${INIT_ARGS[*]}"
printf '  exporter: podman run %s IMAGE %s\n' "${RUN_OPTS[*]}" "${EXPORTER_ARGS[*]}"

if P run --rm "${ULIMITS[@]}" "${INIT_OPTS[@]}" "$IMAGE" "${INIT_ARGS[@]}" >init.log 2>&1; then
  ok "init container: probe directory now $(stat -c '%u:%g %a' probe)"
else
  fail "init container"; cat init.log >&2
fi
check "probe directory owned by 29100:29100, mode 700" test "$(stat -c '%u:%g %a' probe)" = "29100:29100 700"
check "debugfs stand-in: mount point $(stat -c '%u:%g %a' debugfs) (g+x), ios $(stat -c '%u:%g %a' debugfs/mmc0/ios) (g+r), for gid 29100 only" \
  test "$(stat -c '%u:%g %a' debugfs) $(stat -c '%u:%g %a' debugfs/mmc0/ios)" = "0:29100 710 0:29100 440"

NAME=diskprobe-test-$$
CTRS+=("$NAME")
if ! P run -d --name "$NAME" "${ULIMITS[@]}" "${RUN_OPTS[@]}" "$IMAGE" "${EXPORTER_ARGS[@]}" >run.log 2>&1; then
  fail "podman run"; cat run.log >&2; exit 1
fi
IP=$(P inspect --format '{{.NetworkSettings.IPAddress}}' "$NAME")
URL=http://$IP:$PORT
wait_http "$URL/-/ready" || true
check "GET $URL/-/healthy: 200" curl -sf -o /dev/null --max-time 5 "$URL/-/healthy"
check "GET $URL/-/ready: 200" curl -sf -o /dev/null --max-time 5 "$URL/-/ready"
# Every probe runs every 2 s from a random start within one interval; a run is skipped while the
# card is busy. Scrape until each probe kind has an ok run (or 30 s passed).
all_probes_ran() {
  local p
  for p in randread seqread write fsync verify; do
    grep -q "^diskprobe_probe_runs_total{device=\"$CARD\",probe=\"$p\",result=\"ok\"} [1-9]" "$1" || return 1
  done
}
t0=$(date +%s)
for i in $(seq 1 30); do
  sleep 1
  curl -sS --max-time 5 "$URL/metrics" >metrics.txt || true
  all_probes_ran metrics.txt && break
done
printf 'every probe kind had an ok run after %s s\n' "$(( $(date +%s) - t0 ))"
P logs "$NAME" >exporter.log 2>&1 || true
val() { awk -v re="^$1 " '$0 ~ re { print $NF; exit }' metrics.txt; }
check "diskprobe_build_info: $(grep '^diskprobe_build_info' metrics.txt | head -n1)" grep -q '^diskprobe_build_info{' metrics.txt
check "block series of the card $CARD: $(grep -c "^diskprobe_block_.*device=\"$CARD\"" metrics.txt) samples" \
  grep -q "^diskprobe_block_reads_completed_total{device=\"$CARD\"}" metrics.txt
for probe in randread seqread write fsync verify; do
  n=$(val "diskprobe_probe_runs_total\\{device=\"$CARD\",probe=\"$probe\",result=\"ok\"\\}")
  check "$probe probe ok runs on $CARD: ${n:-none}" test "${n:-0}" -ge 1 2>/dev/null
done
for c in block_stat kmsg mounts boot_config probes; do
  v=$(val "diskprobe_collector_success\\{collector=\"$c\"\\}")
  check "collector $c success: ${v:-absent}" test "${v:-0}" = 1
done
# (The mmc_ios collector finds its hosts in sysfs, and this machine's has none: the exporter's
# user reading the file shows the grant instead.)
check "the exporter's user reads /host/debugfs/mmc0/ios through the grant: $(P exec "$NAME" head -n1 /host/debugfs/mmc0/ios 2>&1 | tr '\t' ' ')" \
  P exec "$NAME" grep -q '^clock:' /host/debugfs/mmc0/ios
if P exec "$NAME" ls /host/debugfs >ls.out 2>&1; then fail "the exporter's user can list debugfs (search only was granted)"; else
  ok "... but cannot list debugfs (search only): $(head -n1 ls.out)"; fi
check "boot config read from the mounted /boot: $(grep -m1 '^diskprobe_boot_sd_config_info' metrics.txt | cut -c1-120)" \
  grep -q '^diskprobe_boot_sd_config_info' metrics.txt
check "no probe errors: sum of diskprobe_probe_errors_total = $(awk '/^diskprobe_probe_errors_total/ {s += $NF} END {print s + 0}' metrics.txt)" \
  bash -c "! grep -q '^diskprobe_probe_errors_total.* [1-9]' metrics.txt"
# The host's mount table (/host/proc/1/mountinfo, no hostPID): the card's filesystem appears at its
# host mount point, not at the pod's /var/lib/diskprobe_exporter.
check "host mount table: $(grep -m1 "^diskprobe_filesystem_read_only{device=\"$CARD\"" metrics.txt)" \
  grep -q "^diskprobe_filesystem_read_only{device=\"$CARD\".*mountpoint=\"$E2E_WORK/probe\"" metrics.txt

PID=$(P inspect --format '{{.State.Pid}}' "$NAME")
STATUS=$(cat "/proc/$PID/status")
UIDS=$(awk '/^Uid:/ {print $2, $3, $4, $5}' <<<"$STATUS")
CAPEFF=$(awk '/^CapEff:/ {print $2}' <<<"$STATUS")
CAPPRM=$(awk '/^CapPrm:/ {print $2}' <<<"$STATUS")
PGROUPS=$(awk '/^Groups:/ {$1 = ""; print}' <<<"$STATUS")
# cap_syslog = bit 34; cap_dac_read_search = bit 2 (must not be there).
check "exporter runs as uid 29100 (Uid: $UIDS)" test "$UIDS" = "29100 29100 29100 29100"
check "effective and permitted capabilities are exactly CAP_SYSLOG (CapEff $CAPEFF, CapPrm $CAPPRM): no CAP_DAC_READ_SEARCH" \
  test "$((16#$CAPEFF)):$((16#$CAPPRM))" = "$((1 << 34)):$((1 << 34))"
check "supplementary groups:$PGROUPS (the pod's supplementalGroups: ${GROUPS_ADDED[*]})" \
  bash -c "for g in ${GROUPS_ADDED[*]}; do grep -qw \"\$g\" <<<'$PGROUPS' || exit 1; done; [ -n '${GROUPS_ADDED[*]}' ]"
if P exec "$NAME" /bin/sh -c ': >/x' 2>ro.err; then fail "root filesystem is writable"; else
  ok "root filesystem is read-only: $(head -n1 ro.err)"; fi
# Group disk may open the disks for writing, and a privileged container has no device cgroup to
# narrow that (the unit's DeviceAllow=... r): what the pod allows is printed, the exporter itself
# opens them read-only.
if P exec "$NAME" /bin/sh -c ": >>/dev/$CARD" 2>wr.err; then
  echo "note: /dev/$CARD ($(stat -c '%U:%G %a' "$LOOP")) can be opened for writing by uid 29100 in group disk in the privileged pod"
else
  echo "note: /dev/$CARD cannot be opened for writing as uid 29100: $(head -n1 wr.err)"; fi
RSS=$(awk '/^VmRSS:/ {print $2}' <<<"$STATUS")
printf 'exporter RSS in the container after the probe runs and a scrape: %s KiB (DaemonSet requests 16Mi, limit 64Mi)\n' "$RSS"
check "RSS under the DaemonSet's memory request (16 MiB): $RSS KiB" test "$RSS" -lt 16384
if [ "$FAILURES" -gt 0 ]; then
  echo "--- exporter log"; tail -30 exporter.log
  echo "--- metrics (diskprobe_probe_runs_total, collector_success)"
  grep -E '^diskprobe_(probe_runs_total|collector_success|probe_errors_total)' metrics.txt | head -40
fi
P stop -t 5 "$NAME" >/dev/null 2>&1 || true
P logs "$NAME" >exporter.log 2>&1 || true
check "SIGTERM: exporter stopped cleanly (exit code $(P inspect --format '{{.State.ExitCode}}' "$NAME"))" bash -c \
  "grep -q 'msg=stopped' exporter.log && [ '$(P inspect --format '{{.State.ExitCode}}' "$NAME")' = 0 ]"

log "3b. the documented alternative without privileged: what the device cgroup stops"
NAME2=diskprobe-test-unpriv-$$
CTRS+=("$NAME2")
UNPRIV=()
for o in "${RUN_OPTS[@]}"; do [ "$o" = --privileged ] || UNPRIV+=("$o"); done
if P run -d --name "$NAME2" "${ULIMITS[@]}" "${UNPRIV[@]}" --cap-drop ALL \
     --cap-add SYSLOG "$IMAGE" "${EXPORTER_ARGS[@]}" >run2.log 2>&1; then
  URL2=http://$(P inspect --format '{{.NetworkSettings.IPAddress}}' "$NAME2"):$PORT
  wait_http "$URL2/-/ready" || true
  for i in $(seq 1 30); do
    sleep 1
    curl -sS --max-time 5 "$URL2/metrics" >metrics2.txt || true
    grep -q "^diskprobe_probe_runs_total{device=\"$CARD\",probe=\"write\",result=\"ok\"} [1-9]" metrics2.txt &&
      grep -q "^diskprobe_probe_errors_total{device=\"$CARD\",probe=\"randread\",reason=\"eacces\"} [1-9]" metrics2.txt &&
      break
  done
  e=$(awk -v re="^diskprobe_probe_errors_total\\{device=\"$CARD\",probe=\"randread\",reason=\"eacces\"\\} " '$0 ~ re {print $NF}' metrics2.txt)
  w=$(awk -v re="^diskprobe_probe_runs_total\\{device=\"$CARD\",probe=\"write\",result=\"ok\"\\} " '$0 ~ re {print $NF}' metrics2.txt)
  k=$(awk '/^diskprobe_collector_success\{collector="kmsg"\}/ {print $NF}' metrics2.txt)
  check "unprivileged: randread refused by the device cgroup (eacces errors: ${e:-none})" test "${e:-0}" -ge 1
  check "unprivileged: kmsg collector fails (success ${k:-absent})" test "${k:-1}" = 0
  check "unprivileged: write probes still work (ok runs: ${w:-none})" test "${w:-0}" -ge 1
else
  fail "podman run without privileged"; cat run2.log >&2
fi

log "4. arm64 and armhf images (a cross package and qemu-user registered with binfmt_misc)"
# Informational where either is missing (CI runs the cross builds after this test, and this test
# does not register binfmt handlers on the machine): the reason is printed. Packages are looked for
# in $DISKPROBE_CROSS_DEBS, else in build-<arch>/package (scripts/cross-package.sh).
for arch in arm64 armhf; do
  case $arch in
    arm64) qemu=qemu-aarch64; platform=linux/arm64; ociarch=arm64; variant= ;;
    armhf) qemu=qemu-arm; platform=linux/arm/v7; ociarch=arm; variant=v7 ;;
  esac
  deb=$(ls "${DISKPROBE_CROSS_DEBS:-$SRC/build-$arch/package}"/diskprobe-exporter_*_"$arch".deb 2>/dev/null | head -n1 || true)
  if [ -z "$deb" ]; then
    echo "$arch image: not built: no diskprobe-exporter_*_$arch.deb (scripts/cross-test.sh $arch makes it)"; continue
  fi
  if ! grep -qx enabled "/proc/sys/fs/binfmt_misc/$qemu" 2>/dev/null; then
    echo "$arch image: not built: $qemu is not registered with binfmt_misc (deploy/container/README.md says how)"; continue
  fi
  aroot=$BUILD/container-root-$arch
  if [ ! -x "$aroot/bin/sh" ]; then
    t0=$(date +%s)
    rm -rf "$aroot.tmp"
    if ! debootstrap --variant=minbase --arch="$arch" bookworm "$aroot.tmp" http://deb.debian.org/debian \
         >"debootstrap-$arch.log" 2>&1; then
      fail "$arch: debootstrap"; tail -5 "debootstrap-$arch.log" >&2; continue
    fi
    mv "$aroot.tmp" "$aroot"
    ok "$arch: debootstrap root under qemu in $(( $(date +%s) - t0 )) s"
  fi
  abase=localhost/diskprobe-test-base-$arch:bookworm-slim
  make_base "$aroot" "$abase" "$ociarch" "$variant"
  mkdir -p "ctx-$arch" && cp "$deb" "ctx-$arch/"
  t0=$(date +%s)
  if B build --isolation chroot --pull=never --platform "$platform" \
       --build-arg "BASE=$abase" --build-arg "VERSION=$VERSION" --build-arg "REVISION=$REVISION" \
       -f "$SRC/deploy/container/Containerfile" -t "$IMAGE-$arch" "ctx-$arch" >"build-$arch.log" 2>&1; then
    ok "$arch: buildah build --platform $platform from $(basename "$deb") in $(( $(date +%s) - t0 )) s"
  else
    fail "$arch: buildah build --platform $platform"; tail -20 "build-$arch.log" >&2; continue
  fi
  got=$(P image inspect --format '{{.Architecture}}/{{.Os}}' "$IMAGE-$arch")
  check "$arch: image platform $got" test "$got" = "$ociarch/linux"
  out=$(P run --rm "${ULIMITS[@]}" --cap-drop ALL --cap-add SYSLOG "$IMAGE-$arch" --version 2>&1 |
        grep -v 'does not match the expected platform' || true)
  check "$arch: the image runs under qemu: $out" grep -q '^diskprobe_exporter ' <<<"$out"
  printf '%s image: %s MiB\n' "$arch" "$(( $(P image inspect --format '{{.Size}}' "$IMAGE-$arch") / 1048576 ))"
  B rmi -f "$IMAGE-$arch" >/dev/null 2>&1 || true
done

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all container checks passed"
