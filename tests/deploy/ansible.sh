#!/usr/bin/env bash
# deploy/ansible: the role and playbook, checked and then applied for real.
#  1. `ansible-playbook --syntax-check` and `ansible-lint` (profile production, the strictest of
#     ansible-lint 6.13; its findings are printed) must be clean; the same lint on a copy with one
#     planted defect must fail (so the lint really reads the role).
#  2. The config template rendered from the role's defaults equals config/default.yml (the
#     variables mirror the exporter's built-in defaults) and passes --config.check.
#  3. A real run of site.yml on three Debian 12 roots (copies of <build>/deb-test-root with
#     python3, python3-apt and systemd added by apt: Ansible's modules need python3 on the
#     target, as Raspberry Pi OS has; no procps, so the unit's reload must work without
#     /bin/kill) and a "monitoring" host (local connection, a directory here) for the file_sd
#     targets:
#       pi-deb.test     chroot (community.general.chroot); the amd64 .deb made by cpack, from a
#                       package directory on the controller;
#       pi-repo.test    chroot; the same package from an apt repository (a flat file: repository
#                       in the root), TLS + basic auth, another port, an extra flag (drop-in);
#       pi-systemd.test booted by systemd-nspawn with systemd as PID 1 (private network, so the
#                       package's dependencies are put in beforehand); reached by the chroot
#                       connection through an nsenter wrapper: the service really starts,
#                       restarts and reloads; a second write directory outside
#                       /var/lib/diskprobe_exporter (ReadWritePaths= in the drop-in).
#     Asserted: package installed (dpkg-query), config.yml = the variables and --config.check
#     passes there, service enabled (the multi-user.target.wants symlink); in the chroots not
#     started (no systemd running: the role's `auto` start mode), under systemd active with the
#     drop-in's port and answering; file_sd JSON lists every inventory host of `pis` (also one
#     left out with --limit) with port and labels and passes `promtool check config`; the
#     drop-in's ExecStart answers HTTPS + basic auth (200, wrong password 401). --check before
#     the first run changes nothing; a second run and a --check run report changed=0 (no
#     restart: same MainPID); a changed variable changes the file and reloads (SIGHUP: same
#     MainPID, newer reload timestamp, journal line); a bad variable fails at the validate step,
#     leaves the old config.yml and the running service alone; the second write directory is
#     created (diskprobe, 0700), gets its probe file, directory_up 1, rising write ok runs and no
#     EROFS (and without the ReadWritePaths= the same directory fails: the control); web config:
#     basic auth switched on restarts, a new password reloads (same MainPID, new password 200, old
#     401), a missing certificate fails at the validate step (--config.check --web.config.file)
#     with the old file kept; armv6l on an amd64 dpkg and other architectures, an empty package
#     directory and one with two versions fail with their messages; a host refused for its
#     architecture (setarch i686) is left out of file_sd.
#  4. (no root) The role's tasks/arch.yml on localhost with faked facts (ansible_architecture,
#     ansible_userspace_bits) and a fake dpkg answering the matching architecture: the Debian
#     architecture, the package name and the .deb picked from a directory holding the amd64,
#     arm64, armhf and ARMv6 packages: armv6l -> armhf, diskprobe-exporter-armv6 (local .deb and
#     repository), armv7l and aarch64 with a 32-bit userland -> armhf, diskprobe-exporter.
# Needs: ansible (ansible-core 2.14, community.general), ansible-lint, promtool, dpkg-scanpackages,
# openssl, htpasswd, curl, nsenter, systemd-nspawn (package systemd-container); root (chroot,
# mounts, nspawn) and the Debian mirror (apt in the roots). Skips (77) without root or
# systemd-nspawn outside CI, after the lint part; under CI=true that fails.
# Usage: ansible.sh <build directory>
set -euo pipefail
# The targets are chroots and a container of another root: a TMPDIR of this host does not exist
# there (dpkg-deb and the maintainer scripts Ansible runs in them would fail). The system default.
unset TMPDIR
BUILD=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"
ANS=$SRC/deploy/ansible
ROLE=$ANS/roles/diskprobe_exporter
T0=$(date +%s)
# quiet cmd...: runs it, shows its output only when it fails.
quiet() { "$@" >"$E2E_WORK/quiet.out" 2>&1 || { sed 's/^/  | /' "$E2E_WORK/quiet.out" >&2; return 1; }; }

for tool in ansible-playbook ansible-lint promtool cpack dpkg-deb dpkg-scanpackages openssl htpasswd curl python3 nsenter; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
export ANSIBLE_CONFIG=$E2E_WORK/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ANSIBLE_RETRY_FILES_ENABLED=0 \
  ANSIBLE_LOCAL_TEMP=$E2E_WORK/ansible-tmp ANSIBLE_HOME=$E2E_WORK/ansible-home NO_COLOR=1
: >"$ANSIBLE_CONFIG"   # no ~/.ansible.cfg or /etc/ansible/ansible.cfg of this machine
echo "$(ansible --version 2>/dev/null | sed -n 1p), $(ansible-lint --nocolor --version 2>/dev/null | sed -n 1p)"

log "syntax check and ansible-lint"
printf 'all:\n  children:\n    pis:\n      hosts: {pi.test: {}}\n    monitoring:\n      hosts: {prom.test: {}}\n' >syntax-inv.yml
check "ansible-playbook --syntax-check site.yml" quiet ansible-playbook -i syntax-inv.yml --syntax-check "$ANS/site.yml"
check "ansible-playbook --syntax-check with inventory.example.yml" \
  quiet ansible-playbook -i "$ANS/inventory.example.yml" --syntax-check "$ANS/site.yml"
lint_rc=0
(cd "$ANS" && ansible-lint --nocolor -c "$ANS/.ansible-lint" -f pep8) >lint.txt 2>&1 || lint_rc=$?
echo "ansible-lint (profile production, offline), findings and summary:"
sed 's/^/  /' lint.txt
check "ansible-lint clean with the production profile (rc $lint_rc)" \
  bash -c "[ $lint_rc = 0 ] && grep -q 'Passed with production profile: 0 failure(s), 0 warning(s)' lint.txt"
# The lint must see the role: plant one defect (a task without a name, short module name, no
# changed_when) in a copy and expect findings.
cp -a "$ANS" planted
printf -- '- command: ls\n' >>planted/roles/diskprobe_exporter/tasks/file_sd.yml
planted_rc=0
(cd planted && ansible-lint --nocolor -c .ansible-lint -f pep8) >lint-planted.txt 2>&1 || planted_rc=$?
check "ansible-lint finds the planted defect ($(grep -c 'file_sd.yml:' lint-planted.txt || true) findings: $(grep -o '\[[a-z-]*\[*[a-z-]*\]*\]' lint-planted.txt | sort -u | tr '\n' ' '))" \
  bash -c "[ $planted_rc != 0 ] && grep -q 'tasks/file_sd.yml' lint-planted.txt"

log "the config template with the role's defaults equals config/default.yml"
cat >render.yml <<EOF
- name: Render the config template with the role's defaults
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["$ROLE/defaults/main.yml"]
  tasks:
    - name: Render
      ansible.builtin.template: {src: "$ROLE/templates/config.yml.j2", dest: "$E2E_WORK/rendered-defaults.yml", mode: "0644"}
EOF
ansible-playbook -i localhost, -e ansible_remote_tmp="$E2E_WORK/remote-tmp" render.yml >render.log 2>&1 || { cat render.log >&2; fail "render the defaults"; }
check "rendered defaults: $("$BUILD/diskprobe_exporter" --config.check --config.file=rendered-defaults.yml 2>&1)" \
  quiet "$BUILD/diskprobe_exporter" --config.check --config.file=rendered-defaults.yml
cmp_out=$(python3 - "$SRC/config/default.yml" rendered-defaults.yml <<'EOF'
import sys, yaml
ref, got = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
# probes.defaults: the role writes only what differs from the built-in per-probe settings ({}).
ref_defaults = ref["probes"].pop("defaults")
got_defaults = got["probes"].pop("defaults")
diff = [f"{s}.{k}: default.yml {ref[s].get(k)!r}, role {got[s].get(k)!r}"
        for s in ref for k in sorted(set(ref[s]) | set(got[s])) if ref[s].get(k) != got[s].get(k)]
if set(ref) != set(got): diff.append(f"sections {sorted(ref)} vs {sorted(got)}")
if got_defaults != {}: diff.append(f"probes.defaults should be {{}}, is {got_defaults!r}")
print(f"{sum(len(v) for v in ref.values()) + 0} keys compared ({len(ref_defaults)} probe kinds left to the built-in defaults)")
for d in diff: print("DIFF", d)
sys.exit(1 if diff else 0)
EOF
) && ok "role defaults = config/default.yml: $cmp_out" || fail "role defaults differ from config/default.yml: $cmp_out"

log "the package for each architecture: tasks/arch.yml with faked facts and a fake dpkg"
mkdir -p arch-debs fake-dpkg
for f in diskprobe-exporter_0.1.0-1~deb12_amd64.deb diskprobe-exporter_0.1.0-1~deb12_arm64.deb \
         diskprobe-exporter_0.1.0-1~deb12_armhf.deb diskprobe-exporter-armv6_0.1.0-1~deb12_armhf.deb; do : >"arch-debs/$f"; done
# dpkg --print-architecture as the faked host would answer (the command task runs locally).
printf '#!/bin/sh\n[ "$1" = --print-architecture ] && exec echo "$FAKE_DPKG_ARCH"\nexit 2\n' >fake-dpkg/dpkg
chmod +x fake-dpkg/dpkg
cat >arch-eval.yml <<EOF
- name: The role's architecture and package choice for faked facts
  hosts: localhost
  connection: local
  gather_facts: false
  vars_files: ["$ROLE/defaults/main.yml", "$ROLE/vars/main.yml"]
  tasks:
    - name: Architecture and package source
      ansible.builtin.import_tasks: $ROLE/tasks/arch.yml
    - name: Record the choice
      ansible.builtin.copy:
        content: "{{ _diskprobe_exporter_arch }} {{ _diskprobe_exporter_package }} {{ _diskprobe_exporter_from_repo }} {{ _diskprobe_exporter_debs | map('basename') | join(',') }}\n"
        dest: "{{ choice_file }}"
        mode: "0644"
EOF
# arch_choice <machine> <userspace bits> <dpkg arch> [extra -e]: "<arch> <package> <from repo> <debs>"
arch_choice() {
  local out=$E2E_WORK/choice-$1-$2.txt
  rm -f "$out"
  FAKE_DPKG_ARCH=$3 PATH=$E2E_WORK/fake-dpkg:$PATH ansible-playbook -i localhost, -e ansible_remote_tmp="$E2E_WORK/remote-tmp" \
    -e ansible_architecture="$1" -e ansible_userspace_bits="$2" -e diskprobe_exporter_deb_dir="$E2E_WORK/arch-debs" \
    -e choice_file="$out" "${@:4}" arch-eval.yml >"arch-$1-$2.log" 2>&1 || { tail -20 "arch-$1-$2.log" >&2; echo "playbook failed"; return; }
  cat "$out"
}
for c in "armv6l 32 armhf|armhf diskprobe-exporter-armv6 False diskprobe-exporter-armv6_0.1.0-1~deb12_armhf.deb" \
         "armv7l 32 armhf|armhf diskprobe-exporter False diskprobe-exporter_0.1.0-1~deb12_armhf.deb" \
         "aarch64 32 armhf|armhf diskprobe-exporter False diskprobe-exporter_0.1.0-1~deb12_armhf.deb" \
         "aarch64 64 arm64|arm64 diskprobe-exporter False diskprobe-exporter_0.1.0-1~deb12_arm64.deb" \
         "x86_64 64 amd64|amd64 diskprobe-exporter False diskprobe-exporter_0.1.0-1~deb12_amd64.deb"; do
  read -r m b d <<<"${c%%|*}"
  got=$(arch_choice "$m" "$b" "$d")
  check "$m, $b-bit userland, dpkg $d: $got" test "$got" = "${c#*|}"
done
got=$(arch_choice armv6l 32 armhf -e 'diskprobe_exporter_apt_repository="deb http://apt.example.net/diskprobe trixie main"')
check "armv6l with diskprobe_exporter_apt_repository: $got (install.yml: apt name = the package)" \
  test "$got" = "armhf diskprobe-exporter-armv6 True "
check "install.yml installs the chosen package from the repository" \
  grep -q 'name: "{{ _diskprobe_exporter_package }}"' "$ROLE/tasks/install.yml"

if [ "$(id -u)" -ne 0 ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: needs root (chroot) under CI" >&2; exit 1; }
  [ "$FAILURES" -gt 0 ] && { echo "$FAILURES check(s) failed" >&2; exit 1; }
  echo "SKIP: the real run needs root for the chroots" >&2; exit 77
fi

log "cpack -G DEB (amd64)"
cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$E2E_WORK/pkg" >cpack.log 2>&1 || { cat cpack.log >&2; exit 1; }
rm -rf "$E2E_WORK/pkg/_CPack_Packages"
DEB=$(ls "$E2E_WORK"/pkg/diskprobe-exporter_*_amd64.deb)
VERSION=$(dpkg-deb -f "$DEB" Version)
printf 'package: %s (%s bytes)\n' "$(basename "$DEB")" "$(stat -c %s "$DEB")"

log "three Debian 12 roots with python3 (copies of $BUILD/deb-test-root)"
CACHE=$(deb_test_root "$BUILD")
R1=$E2E_WORK/root-deb R2=$E2E_WORK/root-repo R3=$E2E_WORK/root-systemd
mounts=()
umount_all() { local m; for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; mounts=(); }
NSPAWN_PID=
MACHINE=diskprobe-ansible-$$
had_nspawn_dir=$([ -d /run/systemd/nspawn ] && echo yes || echo no)
stop_container() {
  [ -n "$NSPAWN_PID" ] || return 0
  # SIGTERM to systemd-nspawn shuts the container's systemd down cleanly.
  kill "$NSPAWN_PID" 2>/dev/null || true
  local i; for i in $(seq 1 100); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$NSPAWN_PID" 2>/dev/null || true
  wait "$NSPAWN_PID" 2>/dev/null || true
  NSPAWN_PID=
  # nspawn cannot remove its propagation directory where /run is no tmpfs; it is ours.
  rmdir "/run/systemd/nspawn/propagate/$MACHINE" 2>/dev/null || true
  [ "$had_nspawn_dir" = no ] && rm -rf /run/systemd/nspawn
  return 0
}
safe_cleanup() {
  stop_container
  umount_all
  # Never rm -rf through a mount that is still there (it would be /dev, /sys or /proc).
  if grep -q " $E2E_WORK/" /proc/self/mounts; then echo "mounts remain under $E2E_WORK: not removing it" >&2; return; fi
  cleanup
}
trap safe_cleanup EXIT
mount_root() { local m; for m in proc sys dev; do mount --rbind "/$m" "$1/$m"; mount --make-rslave "$1/$m"; mounts=("$1/$m" "${mounts[@]}"); done; }
in_root() { local r=$1; shift; chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
t=$(date +%s)
cp -a "$CACHE" "$R1"
cp /etc/resolv.conf "$R1/etc/resolv.conf"
mount_root "$R1"
check "clean root has no python3 and no diskprobe-exporter before" bash -c \
  "[ ! -e '$R1/usr/bin/python3' ] && ! chroot '$R1' dpkg-query -W diskprobe-exporter >/dev/null 2>&1"
# python3 (+ python3-apt): Ansible's modules; systemd: systemctl for the service tasks, and the
# init of the booted container. No procps: the unit's ExecReload uses the shell's kill, and a
# Debian minbase root (and the package's dependencies) have no /bin/kill.
if in_root "$R1" sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 python3-apt systemd' >apt.log 2>&1; then
  ok "apt-get install python3 python3-apt systemd in the root ($(grep -c '^Setting up' apt.log) packages, $(( $(date +%s) - t )) s)"
else
  tail -20 apt.log >&2; echo "FAIL: cannot prepare the root" >&2; exit 1
fi
check "no /bin/kill in the root (procps absent): the reload must do without it" test ! -e "$R1/bin/kill" -a ! -e "$R1/usr/bin/kill"
umount_all
cp -a "$R1" "$R2"
cp -a "$R1" "$R3"
# The booted root has a private network (no mirror): the package's dependencies go in beforehand.
deps=$(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g' | grep -v '^$' | tr '\n' ' ')
mount_root "$R3"
in_root "$R3" apt-get install -y -qq --no-install-recommends $deps >>apt.log 2>&1 ||
  { tail -20 apt.log >&2; echo "FAIL: cannot install the dependencies into the systemd root" >&2; exit 1; }
umount_all
echo "systemd root: dependencies installed beforehand: $deps"
mount_root "$R1"; mount_root "$R2"

# The third root boots: systemd-nspawn runs its systemd as PID 1 (private network: only loopback,
# no port clash with this machine). Ansible reaches it through the chroot connection with
# chroot_exe = a wrapper that nsenters the container's namespaces, so /run/systemd/system exists
# there and the role starts, restarts and reloads the service for real.
if ! command -v systemd-nspawn >/dev/null; then
  [ "${CI:-}" = true ] && { echo "FAIL: systemd-nspawn missing (package systemd-container) under CI" >&2; exit 1; }
  echo "SKIP: systemd-nspawn missing (package systemd-container): cannot boot the systemd root" >&2; exit 77
fi
systemd-nspawn -q --register=no --keep-unit --private-network --machine="$MACHINE" -D "$R3" --boot >nspawn.log 2>&1 &
NSPAWN_PID=$!
source "$SRC/tests/e2e/nspawn_lib.sh"
LEADER=$(nspawn_leader "$NSPAWN_PID")
echo "$LEADER" >leader.pid
cat >nsx <<EOF
#!/bin/sh
# "nsx <root> cmd...": cmd in the booted container (the root argument of chroot is not needed).
shift
exec nsenter --target "\$(cat '$E2E_WORK/leader.pid')" --mount --uts --ipc --net --pid --root --wd -- "\$@"
EOF
chmod +x nsx
in_ct() { "$E2E_WORK/nsx" - "$@"; }
t=$(date +%s%N)
state=
for i in $(seq 1 100); do
  state=$(in_ct systemctl is-system-running 2>/dev/null || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.2
done
check "the systemd root booted: is-system-running $state after $(( ($(date +%s%N) - t) / 1000000 )) ms (PID 1 in it: $(in_ct cat /proc/1/comm 2>/dev/null))" \
  bash -c "[ '$state' = running ] || [ '$state' = degraded ]"
[ "$state" = degraded ] && in_ct systemctl --failed --no-legend | sed 's/^/  failed unit: /'
case "$state" in running|degraded) ;; *) tail -30 nspawn.log >&2; echo "FAIL: the systemd root did not boot" >&2; exit 1 ;; esac
ct_scrape() {  # ct_scrape <port>: /metrics from inside the container (its own loopback)
  in_ct python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$1/metrics', timeout=5).read().decode())"
}
ct_pid() { in_ct systemctl show -p MainPID --value diskprobe_exporter.service 2>/dev/null; }
PORT3=29101
# The repository host: a flat apt repository inside its root (apt reads it through file:).
mkdir -p "$R2/srv/diskprobe-repo"
cp "$DEB" "$R2/srv/diskprobe-repo/"
(cd "$R2/srv/diskprobe-repo" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null)

# TLS and basic auth for the repository host, from the controller.
mkdir -p files
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout files/server.key -out files/server.crt 2>/dev/null
PW=$(openssl rand -hex 8)
HASH=$(htpasswd -nbBC 10 prometheus "$PW" | cut -d: -f2)
PORT2=$(free_port)
FILE_SD=$E2E_WORK/prometheus/file_sd/diskprobe-ansible.yml
USBDIR=/mnt/usb/diskprobe_exporter

cat >inventory.yml <<EOF
# tests/deploy/ansible.sh: two chroots and a booted container as Pis, the local machine as the
# monitoring host.
all:
  vars:
    diskprobe_exporter_deb_dir: $E2E_WORK/pkg
    diskprobe_exporter_file_sd_path: $FILE_SD
  children:
    pis:
      vars:
        ansible_connection: community.general.chroot
        # root already; the minimal roots have no sudo
        ansible_become: false
        ansible_python_interpreter: /usr/bin/python3
        diskprobe_exporter_devices_include: ["vd[a-z]+", "mmcblk[0-9]+"]
        diskprobe_exporter_write_budget_per_day: 64MiB
        diskprobe_exporter_probe_defaults:
          randread: {interval: 30s}
          seqwrite: {enabled: true, interval: 12h}
        diskprobe_exporter_probe_devices:
          "sd[a-z]+": {seqread: {enabled: false}}
        diskprobe_exporter_file_sd_labels: {site: test}
      hosts:
        pi-deb.test:
          ansible_host: $R1
        pi-repo.test:
          ansible_host: $R2
          diskprobe_exporter_apt_repository: "deb [trusted=yes] file:/srv/diskprobe-repo ./"
          diskprobe_exporter_apt_state: latest
          diskprobe_exporter_port: $PORT2
          diskprobe_exporter_extra_args: ["--no-collector.kmsg"]
          diskprobe_exporter_scrape_host: pi-repo.example.net
          diskprobe_exporter_file_sd_labels: {site: lab}
          diskprobe_exporter_devices_exclude: ["ram[0-9]+", "zram[0-9]+", "loop[0-9]+"]
          diskprobe_exporter_web_files:
            - {src: $E2E_WORK/files/server.crt, dest: server.crt}
            - {src: $E2E_WORK/files/server.key, dest: server.key}
          diskprobe_exporter_web_config:
            tls_server_config: {cert_file: server.crt, key_file: server.key, min_version: TLS12}
            basic_auth_users: {prometheus: "$HASH"}
        # Booted with systemd as PID 1 (systemd-nspawn): start, restart and reload for real.
        pi-systemd.test:
          ansible_host: $R3
          ansible_chroot_exe: $E2E_WORK/nsx
          diskprobe_exporter_port: $PORT3
          # A second write directory outside the StateDirectory (ReadWritePaths= in the drop-in),
          # probed every 2 s with small probe files, busy check off (the test machine is shared).
          diskprobe_exporter_write_directories: [/var/lib/diskprobe_exporter, $USBDIR]
          diskprobe_exporter_probe_file_size: 1MiB
          diskprobe_exporter_busy_threshold: 1
          diskprobe_exporter_probe_defaults:
            randread: {interval: 30s}
            write: {interval: 2s}
        # In the inventory but not in this run (--limit): its target must be in file_sd all the same.
        pi-later.test:
          ansible_host: /nonexistent
          diskprobe_exporter_file_sd_labels: {site: test}
        # (extra hosts)
    monitoring:
      hosts:
        prom.test:
          ansible_connection: local
          ansible_become: false
          ansible_python_interpreter: $(command -v python3)
EOF

INV=inventory.yml
RUN=-1
# play <log name> <expect rc 0|fail> [ansible-playbook args...]: runs site.yml, prints the recap and
# the time; sets RECAP_<host> variables as "ok changed failed skipped".
play() {
  local name=$1 expect=$2; shift 2
  RUN=$((RUN + 1))
  local t0 ms rc=0
  t0=$(date +%s%N)
  ansible-playbook -i "$INV" --limit '!pi-later.test' "$ANS/site.yml" "$@" >"$name.log" 2>&1 || rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf 'run %d (%s): rc %d, %d.%01d s, %d task results, recap:\n' "$RUN" "$name" "$rc" $((ms / 1000)) $((ms % 1000 / 100)) \
    "$(grep -cE '^(ok|changed|skipping|failed|fatal): ' "$name.log" || true)"
  sed -n '/^PLAY RECAP/,$p' "$name.log" | grep -E '^[a-z]' | sed 's/  */ /g; s/^/  /'
  if [ "$expect" = 0 ] && [ "$rc" != 0 ]; then fail "run $name: rc $rc"; tail -40 "$name.log" >&2; fi
  if [ "$expect" = fail ] && [ "$rc" = 0 ]; then fail "run $name should have failed"; fi
  return 0
}
recap() {  # recap <log> <host> <field>: a number from the PLAY RECAP line
  sed -n "s/^$2 *:.* $3=\([0-9]*\).*/\1/p" "$1" | tail -n1
}

HOSTS="pi-deb.test pi-repo.test pi-systemd.test"
root_of() { case $1 in pi-deb.test) echo "$R1" ;; pi-repo.test) echo "$R2" ;; pi-systemd.test) echo "$R3" ;; esac; }
# The handler results of a run for one host: "skipping", "changed" ... one word per handler run.
handler_results() {
  awk -v h="$2" '/^RUNNING HANDLER/ { inh = 1; next } /^(TASK|PLAY)/ { inh = 0 }
    inh && index($0, "[" h "]") { sub(/:.*/, ""); print }' "$1" | tr '\n' ' '
}
scrape_value() { awk -v f="$1" '$1 == f { print $2; exit }'; }
# metric_sum <family> [label=value...] < metrics: the sum of the matching samples (0 when none).
metric_sum() {
  python3 -c '
import re, sys
fam, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
total = 0.0
for line in sys.stdin:
    m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line.strip())
    if not m or m.group(1) != fam: continue
    labels = dict(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\]|\\.)*)\"", m.group(2) or ""))
    if all(labels.get(k) == v for k, v in want.items()): total += float(m.group(3))
print("%g" % total)' "$@"
}

log "run 0: --check --diff on the fresh hosts changes nothing"
play precheck 0 --check --diff
for h in $HOSTS; do
  check "$h: check mode predicts changed=$(recap precheck.log $h changed)" test "$(recap precheck.log $h changed)" -gt 0
done
check "nothing installed by check mode" bash -c \
  "! chroot '$R1' dpkg-query -W diskprobe-exporter >/dev/null 2>&1 && ! chroot '$R2' dpkg-query -W diskprobe-exporter >/dev/null 2>&1 &&
   ! chroot '$R3' dpkg-query -W diskprobe-exporter >/dev/null 2>&1 && [ ! -e '$R1/etc/diskprobe_exporter' ] && [ ! -e '$FILE_SD' ]"

log "run 1: install"
play install 0
for h in $HOSTS; do
  r=$(root_of $h)
  v=$(chroot "$r" dpkg-query -W -f='${Status} ${Version}' diskprobe-exporter 2>/dev/null || true)
  check "$h: dpkg-query: diskprobe-exporter $v" test "$v" = "install ok installed $VERSION"
  check "$h: config.yml passes --config.check there: $(in_root "$r" diskprobe_exporter --config.check --config.file=/etc/diskprobe_exporter/config.yml 2>&1)" \
    quiet in_root "$r" diskprobe_exporter --config.check --config.file=/etc/diskprobe_exporter/config.yml
  check "$h: enabled: multi-user.target.wants/diskprobe_exporter.service -> the package's unit" bash -c \
    "[ \"\$(readlink '$r/etc/systemd/system/multi-user.target.wants/diskprobe_exporter.service')\" = /lib/systemd/system/diskprobe_exporter.service ]"
done
check "pi-repo.test: installed from the repository (apt source file written, no .deb copied)" bash -c \
  "grep -qx 'deb \[trusted=yes\] file:/srv/diskprobe-repo ./' '$R2/etc/apt/sources.list.d/diskprobe_exporter.list' &&
   [ ! -d '$R2/var/cache/diskprobe_exporter-deb' ] && [ -f '$R1/var/cache/diskprobe_exporter-deb/$(basename "$DEB")' ]"
for h in pi-deb.test pi-repo.test; do
  hr=$(handler_results install.log $h)
  check "$h: not started (systemd is not running in a chroot): handlers notified, all skipped: $hr" \
    test -n "$hr" -a -z "${hr//skipping /}"
done
hr=$(handler_results install.log pi-systemd.test)
check "pi-systemd.test: systemd is PID 1, the handlers ran: $hr(restart: new package and drop-in; reload: config)" \
  test "$hr" = "changed changed "
PID1=$(ct_pid)
check "pi-systemd.test: systemctl is-active $(in_ct systemctl is-active diskprobe_exporter.service), is-enabled $(in_ct systemctl is-enabled diskprobe_exporter.service), MainPID $PID1" \
  bash -c "[ \"\$('$E2E_WORK/nsx' - systemctl is-active diskprobe_exporter.service)\" = active ] && [ '${PID1:-0}' -gt 0 ]"
ct_scrape "$PORT3" >systemd-metrics-1.txt 2>&1 || true
check "pi-systemd.test: the service answers on the drop-in's port $PORT3: $(grep -c '^diskprobe_' systemd-metrics-1.txt) diskprobe_ samples, build_info present" \
  grep -q '^diskprobe_build_info' systemd-metrics-1.txt
in_ct systemctl show -p User,ExecMainStartTimestamp,NRestarts diskprobe_exporter.service | sed 's/^/  /'

# The second write directory: outside /var/lib/diskprobe_exporter, so ProtectSystem=strict makes
# it read-only to the service unless the drop-in lists it in ReadWritePaths=.
DROPIN3=$R3/etc/systemd/system/diskprobe_exporter.service.d/ansible.conf
check "pi-systemd.test: the drop-in makes $USBDIR writable: $(grep '^ReadWritePaths=' "$DROPIN3" 2>/dev/null | tr '\n' ' ')" \
  bash -c "[ \"\$(grep '^ReadWritePaths=' '$DROPIN3')\" = 'ReadWritePaths=-$USBDIR' ]"
check "pi-systemd.test: $USBDIR created by the role: $(chroot "$R3" stat -c '%U:%G %a' "$USBDIR" 2>&1)" \
  test "$(chroot "$R3" stat -c '%U:%G %a' "$USBDIR" 2>&1)" = "diskprobe:diskprobe 700"
# wait_write_runs <file prefix>: scrapes until the write probe's ok runs rose by 2 after the first
# scrape that shows the second directory (up to 30 s); leaves <prefix>-a.txt and <prefix>-b.txt.
wait_write_runs() {
  local a b i
  for i in $(seq 1 60); do
    ct_scrape "$PORT3" >"$1-a.txt" 2>/dev/null || true
    grep -q "^diskprobe_probe_directory_up{.*$USBDIR" "$1-a.txt" && break
    sleep 0.5
  done
  a=$(metric_sum diskprobe_probe_runs_total probe=write result=ok <"$1-a.txt")
  for i in $(seq 1 60); do
    sleep 0.5
    ct_scrape "$PORT3" >"$1-b.txt" 2>/dev/null || true
    b=$(metric_sum diskprobe_probe_runs_total probe=write result=ok <"$1-b.txt")
    awk -v a="$a" -v b="$b" 'BEGIN { exit !(b >= a + 2) }' && break
  done
}
t=$(date +%s%N)
wait_write_runs usb
ms=$(( ($(date +%s%N) - t) / 1000000 ))
grep -E "^diskprobe_probe_directory_up" usb-b.txt | sed 's/^/  /'
grep -E '^diskprobe_probe_runs_total\{.*probe="write"' usb-b.txt | grep -v ' 0$' | sed 's/^/  /'
# Errors of every probe are printed, but only the write probe's count here: the random-read probe
# of the container's disk runs on its own 30 s schedule and may fail where systemd-nspawn does not
# pass the block device through (a CI run counted one such error inside this window).
grep -E '^diskprobe_probe_errors_total\{' usb-b.txt | grep -v ' 0$' | sed 's/^/  /' || true
wa=$(metric_sum diskprobe_probe_runs_total probe=write result=ok <usb-a.txt)
wb=$(metric_sum diskprobe_probe_runs_total probe=write result=ok <usb-b.txt)
werr=$(metric_sum diskprobe_probe_errors_total probe=write <usb-b.txt)
werofs=$(metric_sum diskprobe_probe_errors_total probe=write reason=erofs <usb-b.txt)
up=$(metric_sum diskprobe_probe_directory_up directory="$USBDIR" <usb-b.txt)
check "pi-systemd.test: diskprobe_probe_directory_up{directory=\"$USBDIR\"} $up" test "$up" = 1
# Under the packaged unit (ProtectSystem=strict) the mounts collector must report the host's mount
# table, not the sandbox's, where / is a read-only mount (a review found every packaged node
# reporting its root filesystem read-only, and the unit's private mounts as filesystems).
ro_root=$(grep -E '^diskprobe_filesystem_read_only\{.*mountpoint="/"[,}]' usb-b.txt | awk '{print $2}' | head -n1)
check "pi-systemd.test under the unit: / not read-only (diskprobe_filesystem_read_only '$ro_root'), no series for the unit's private /var/tmp" \
  bash -c "[ '$ro_root' = 0 ] && ! grep -q 'filesystem_read_only{.*mountpoint=\"/var/tmp\"' usb-b.txt"
check "pi-systemd.test: write probe ok runs $wa -> $wb in $ms ms (two directories, every 2 s), write probe errors $werr (erofs $werofs)" \
  bash -c "awk 'BEGIN { exit !($wb >= $wa + 2) }' && [ '$werr' = 0 ] && [ '$werofs' = 0 ]"
check "pi-systemd.test: the probe file in $USBDIR: $(chroot "$R3" stat -c '%n %U %s bytes' "$USBDIR/diskprobe_exporter.probe" 2>&1)" \
  test "$(chroot "$R3" stat -c '%U %s' "$USBDIR/diskprobe_exporter.probe" 2>&1)" = "diskprobe 1048576"

# config.yml = the variables: parse it and compare with what the inventory says.
cfg_check=$(python3 - "$R1/etc/diskprobe_exporter/config.yml" "$R2/etc/diskprobe_exporter/config.yml" <<'EOF'
import sys, yaml
a, b = (yaml.safe_load(open(p)) for p in sys.argv[1:3])
want = {
  ("devices", "include"): ["vd[a-z]+", "mmcblk[0-9]+"],
  ("probes", "write_budget_per_day"): "64MiB",
  ("probes", "defaults"): {"randread": {"interval": "30s"}, "seqwrite": {"enabled": True, "interval": "12h"}},
  ("probes", "devices"): {"sd[a-z]+": {"seqread": {"enabled": False}}},
  ("devices", "exclude"): ["ram[0-9]+", "zram[0-9]+"],
  ("probes", "enabled"): True,
}
bad = [f"pi-deb {k}: {a[k[0]][k[1]]!r} != {v!r}" for k, v in want.items() if a[k[0]][k[1]] != v]
if b["devices"]["exclude"] != ["ram[0-9]+", "zram[0-9]+", "loop[0-9]+"]: bad.append(f"pi-repo exclude {b['devices']['exclude']}")
print(f"{len(want) + 1} values checked"); [print("DIFF", x) for x in bad]
sys.exit(1 if bad else 0)
EOF
) && ok "config.yml content = the inventory's variables ($cfg_check)" || fail "config.yml content: $cfg_check"
check "pi-deb.test: no drop-in (port 29100, no web config: the package's ExecStart)" \
  test ! -e "$R1/etc/systemd/system/diskprobe_exporter.service.d/ansible.conf"
DROPIN=$R2/etc/systemd/system/diskprobe_exporter.service.d/ansible.conf
EXEC=$(sed -n 's/^ExecStart=\(.\+\)$/\1/p' "$DROPIN" 2>/dev/null || true)
echo "pi-repo.test drop-in ExecStart: $EXEC"
check "pi-repo.test: drop-in sets the port, the web config and the extra flag" bash -c \
  "grep -q -- '--web.listen-address=:$PORT2' '$DROPIN' && grep -q -- '--web.config.file=/etc/diskprobe_exporter/web-config.yml' '$DROPIN' &&
   grep -q -- '--no-collector.kmsg' '$DROPIN' && grep -qx 'ExecStart=' '$DROPIN'"
check "pi-repo.test: web-config.yml, server.crt, server.key are root:diskprobe 0640: $(chroot "$R2" stat -c '%n %U:%G %a' /etc/diskprobe_exporter/web-config.yml /etc/diskprobe_exporter/server.key | tr '\n' ' ')" \
  bash -c "[ \"\$(chroot '$R2' stat -c '%U:%G %a' /etc/diskprobe_exporter/web-config.yml /etc/diskprobe_exporter/server.crt /etc/diskprobe_exporter/server.key | sort -u)\" = 'root:diskprobe 640' ]"
# promtool runs here, outside the root: the same file with the root's path in front of its files.
sed "s#/etc/diskprobe_exporter/#$R2/etc/diskprobe_exporter/#" "$R2/etc/diskprobe_exporter/web-config.yml" >web-config-host.yml
check "pi-repo.test: web-config.yml passes promtool check web-config" quiet promtool check web-config web-config-host.yml
check "pi-repo.test: web-config.yml has absolute file names (validated from a temporary copy): $(grep -E 'cert_file|key_file' "$R2/etc/diskprobe_exporter/web-config.yml" | tr -s ' ' | tr '\n' ' ')" \
  grep -q 'cert_file: /etc/diskprobe_exporter/server.crt' "$R2/etc/diskprobe_exporter/web-config.yml"
# The drop-in's command line, run in the root as the service user: HTTPS + basic auth answer.
read -r -a argv <<<"$EXEC"
chroot --userspec=diskprobe:diskprobe --groups=disk "$R2" "${argv[@]}" 2>"$E2E_WORK/repo-exporter.log" &
RPID=$!; E2E_PIDS+=("$RPID")
listen_address repo-exporter.log "$RPID" >/dev/null || true
c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert files/server.crt -u "prometheus:$PW" "https://127.0.0.1:$PORT2/metrics" || true)
w=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert files/server.crt -u "prometheus:wrong" "https://127.0.0.1:$PORT2/metrics" || true)
check "pi-repo.test: the drop-in's ExecStart serves HTTPS: right password $c, wrong password $w" test "$c:$w" = 200:401
kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null || true
[ "$c" = 200 ] || cat repo-exporter.log >&2

echo "file_sd written on the monitoring host ($FILE_SD):"
sed 's/^/  /' "$FILE_SD" 2>/dev/null || true
sd_check=$(python3 - "$FILE_SD" "$PORT2" "$PORT3" <<'EOF'
import sys, json
groups = json.load(open(sys.argv[1]))   # JSON: the .yml name is for Prometheus' glob, the content is JSON
got = {t: g["labels"] for g in groups for t in g["targets"]}
want = {"pi-deb.test:29100": {"site": "test"}, "pi-later.test:29100": {"site": "test"},
        f"pi-repo.example.net:{sys.argv[2]}": {"site": "lab"}, f"pi-systemd.test:{sys.argv[3]}": {"site": "test"}}
print(f"{len(groups)} target groups, {len(got)} targets")
sys.exit(0 if got == want else f"got {got}, want {want}")
EOF
) && ok "file_sd: every host of pis (pi-later.test too, left out by --limit) with port and labels: $sd_check" ||
  fail "file_sd: $sd_check"
sed -e "s#/etc/prometheus/file_sd/#$(dirname "$FILE_SD")/#" -e "s#/etc/prometheus/rules/#$SRC/deploy/prometheus/rules/#" \
  "$SRC/deploy/prometheus/prometheus.yml" >prometheus.yml
check "promtool check config with deploy/prometheus/prometheus.yml reads the file_sd file" quiet promtool check config prometheus.yml

log "run 2: the same again (idempotence)"
play again 0
for h in $HOSTS; do
  check "$h: second run changed=$(recap again.log $h changed) (ok=$(recap again.log $h ok))" test "$(recap again.log $h changed)" = 0
done
check "pi-systemd.test: no handler ran, same MainPID $(ct_pid)" bash -c \
  "[ -z '$(handler_results again.log pi-systemd.test)' ] && [ '$(ct_pid)' = '$PID1' ]"

log "run 3: --check --diff on the installed hosts (what an operator runs before a roll-out)"
play check 0 --check --diff
for h in $HOSTS; do
  check "$h: check mode predicts changed=$(recap check.log $h changed)" test "$(recap check.log $h changed)" = 0
done

log "run 4: a changed variable (--diff), and the service disabled behind Ansible's back"
chroot "$R1" systemctl disable diskprobe_exporter.service >/dev/null 2>&1
check "disabled: the wants symlink is gone" test ! -e "$R1/etc/systemd/system/multi-user.target.wants/diskprobe_exporter.service"
reload_ts0=$(ct_scrape "$PORT3" 2>/dev/null | scrape_value diskprobe_config_last_reload_success_timestamp_seconds)
sleep 1   # the reload timestamp has a resolution of seconds
play change 0 --limit pi-deb.test,pi-systemd.test --diff -e diskprobe_exporter_write_budget_per_day=32MiB
echo "the diff Ansible printed for config.yml (per host):"
grep -E '^[-+]  write_budget_per_day' change.log | sed 's/^/  /'
check "pi-deb.test: changed=$(recap change.log pi-deb.test changed) (config and enable)" test "$(recap change.log pi-deb.test changed)" = 2
check "pi-deb.test: config.yml now says 32MiB" grep -qx '  write_budget_per_day: "32MiB"' "$R1/etc/diskprobe_exporter/config.yml"
check "pi-deb.test: enabled again by the role" test -L "$R1/etc/systemd/system/multi-user.target.wants/diskprobe_exporter.service"
check "pi-deb.test: the reload handler was notified and skipped (not started): $(handler_results change.log pi-deb.test)" \
  test "$(handler_results change.log pi-deb.test)" = "skipping "
check "pi-systemd.test: changed=$(recap change.log pi-systemd.test changed) (config, and the reload handler: $(handler_results change.log pi-systemd.test))" \
  test "$(recap change.log pi-systemd.test changed):$(handler_results change.log pi-systemd.test)" = "2:changed "
PID2=$(ct_pid)
m=$(ct_scrape "$PORT3" 2>/dev/null || true)
reload_ts1=$(echo "$m" | scrape_value diskprobe_config_last_reload_success_timestamp_seconds)
check "pi-systemd.test: reloaded, not restarted: MainPID $PID1 -> $PID2, last reload success $reload_ts0 -> $reload_ts1, successful $(echo "$m" | scrape_value diskprobe_config_last_reload_successful)" \
  bash -c "[ '$PID2' = '$PID1' ] && awk 'BEGIN { exit !(\"$reload_ts1\" + 0 > \"$reload_ts0\" + 0) }' && [ '$(echo "$m" | scrape_value diskprobe_config_last_reload_successful)' = 1 ]"
in_ct journalctl -u diskprobe_exporter.service -o cat --no-pager | grep -E 'configuration reloaded|SIGHUP|reload' | tail -n 2 | sed 's/^/  journal: /'
check "pi-systemd.test: the journal says the configuration was reloaded" bash -c \
  "'$E2E_WORK/nsx' - journalctl -u diskprobe_exporter.service -o cat --no-pager | grep -q 'configuration reloaded'"

log "run 5: a bad variable"
before1=$(sha256sum <"$R1/etc/diskprobe_exporter/config.yml")
before3=$(sha256sum <"$R3/etc/diskprobe_exporter/config.yml")
play bad fail --limit pi-deb.test,pi-systemd.test -e '{"diskprobe_exporter_probe_defaults": {"randread": {"interval": "fast"}}}'
for h in pi-deb.test pi-systemd.test; do
  failed_task=$(awk -v h="$h" '/^TASK \[/ { t = $0; sub(/^TASK \[/, "", t); sub(/\] \**$/, "", t) } index($0, "fatal: [" h "]") == 1 { print t }' bad.log)
  check "$h: failed at the validate step: task '$failed_task'" test "$failed_task" = "diskprobe_exporter : Install the exporter configuration"
done
check "the validator's message is in the output: $(grep -o 'probes.defaults.randread.interval: invalid duration [^ ]*fast' bad.log | head -n1)" \
  grep -q 'failed to validate.*probes.defaults.randread.interval: invalid duration' bad.log
check "the old config.yml is in place on both (sha256 unchanged)" bash -c \
  "[ \"\$(sha256sum <'$R1/etc/diskprobe_exporter/config.yml')\" = '$before1' ] && [ \"\$(sha256sum <'$R3/etc/diskprobe_exporter/config.yml')\" = '$before3' ]"
check "pi-systemd.test: no handler ran, the service runs on: $(in_ct systemctl is-active diskprobe_exporter.service), MainPID $(ct_pid)" \
  bash -c "[ -z '$(handler_results bad.log pi-systemd.test)' ] && [ '$(ct_pid)' = '$PID1' ]"

log "the control: the same second write directory without ReadWritePaths= (a runtime drop-in resets it)"
in_ct sh -c 'mkdir -p /run/systemd/system/diskprobe_exporter.service.d &&
  printf "[Service]\nReadWritePaths=\n" >/run/systemd/system/diskprobe_exporter.service.d/zz-test.conf &&
  systemctl daemon-reload && systemctl restart diskprobe_exporter.service'
cerofs=0 cup=
for i in $(seq 1 60); do
  sleep 0.5
  ct_scrape "$PORT3" >control.txt 2>/dev/null || continue
  cerofs=$(metric_sum diskprobe_probe_errors_total reason=erofs <control.txt)
  cup=$(metric_sum diskprobe_probe_directory_up directory="$USBDIR" <control.txt)
  [ "$cerofs" != 0 ] && break
done
grep -E "^diskprobe_probe_directory_up|^diskprobe_probe_errors_total.*erofs" control.txt | sed 's/^/  /'
check "without ReadWritePaths= the write probe there fails: erofs errors $cerofs, directory_up{directory=\"$USBDIR\"} $cup" \
  test "$cerofs" != 0
in_ct sh -c 'rm /run/systemd/system/diskprobe_exporter.service.d/zz-test.conf && systemctl daemon-reload && systemctl restart diskprobe_exporter.service'
wait_write_runs usb2
check "with the role's drop-in again: directory_up $(metric_sum diskprobe_probe_directory_up directory="$USBDIR" <usb2-b.txt), erofs $(metric_sum diskprobe_probe_errors_total reason=erofs <usb2-b.txt)" \
  test "$(metric_sum diskprobe_probe_directory_up directory="$USBDIR" <usb2-b.txt):$(metric_sum diskprobe_probe_errors_total reason=erofs <usb2-b.txt)" = 1:0

log "web config on the booted host: basic auth switched on (restart), a new password (reload), a bad certificate (refused)"
ct_code() {  # ct_code <port> <user:password>: the HTTP status of /metrics inside the container
  in_ct python3 -c '
import base64, sys, urllib.error, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/metrics" % sys.argv[1])
if sys.argv[2]: req.add_header("Authorization", "Basic " + base64.b64encode(sys.argv[2].encode()).decode())
try: print(urllib.request.urlopen(req, timeout=5).status)
except urllib.error.HTTPError as e: print(e.code)
except Exception as e: print("none")' "$1" "$2" 2>/dev/null
}
PW3=$(openssl rand -hex 8); HASH3=$(htpasswd -nbBC 10 prometheus "$PW3" | cut -d: -f2)
PW4=$(openssl rand -hex 8); HASH4=$(htpasswd -nbBC 10 prometheus "$PW4" | cut -d: -f2)
printf '{"diskprobe_exporter_web_config": {"basic_auth_users": {"prometheus": "%s"}}}\n' "$HASH3" >web-on.json
printf '{"diskprobe_exporter_web_config": {"basic_auth_users": {"prometheus": "%s"}}}\n' "$HASH4" >web-newpw.json
printf '{"diskprobe_exporter_web_config": {"basic_auth_users": {"prometheus": "%s"}, "tls_server_config": {"cert_file": "missing.crt", "key_file": "missing.key"}}}\n' "$HASH4" >web-bad.json
PIDW0=$(ct_pid)
play webon 0 --limit pi-systemd.test -e @web-on.json
PIDW1=$(ct_pid)
for i in $(seq 1 50); do [ "$(ct_code "$PORT3" "prometheus:$PW3")" = 200 ] && break; sleep 0.1; done
check "auth switched on: restart (MainPID $PIDW0 -> $PIDW1, handlers: $(handler_results webon.log pi-systemd.test)), password $(ct_code "$PORT3" "prometheus:$PW3"), none $(ct_code "$PORT3" "")" \
  test "$([ "$PIDW1" != "$PIDW0" ] && echo new):$(ct_code "$PORT3" "prometheus:$PW3"):$(ct_code "$PORT3" "")" = new:200:401
# This run wrote file_sd from pi-systemd.test (port $PORT3): the hosts without a port of their
# own must still get 29100, not the port of the host the task ran on.
check "file_sd written from pi-systemd.test: $(python3 -c 'import json,sys; print(" ".join(sorted(t for g in json.load(open(sys.argv[1])) for t in g["targets"])))' "$FILE_SD")" \
  bash -c "grep -q '\"pi-deb.test:29100\"' '$FILE_SD' && grep -q '\"pi-later.test:29100\"' '$FILE_SD' && grep -q '\"pi-systemd.test:$PORT3\"' '$FILE_SD'"
play webpw 0 --limit pi-systemd.test -e @web-newpw.json
PIDW2=$(ct_pid)
for i in $(seq 1 50); do [ "$(ct_code "$PORT3" "prometheus:$PW4")" = 200 ] && break; sleep 0.1; done
check "new password: reload, not restart (MainPID $PIDW1 -> $PIDW2, changed=$(recap webpw.log pi-systemd.test changed), handlers: $(handler_results webpw.log pi-systemd.test)), new password $(ct_code "$PORT3" "prometheus:$PW4"), old $(ct_code "$PORT3" "prometheus:$PW3")" \
  test "$PIDW2:$(ct_code "$PORT3" "prometheus:$PW4"):$(ct_code "$PORT3" "prometheus:$PW3"):$(handler_results webpw.log pi-systemd.test)" = "$PIDW1:200:401:changed "
in_ct journalctl -u diskprobe_exporter.service -o cat --no-pager | grep -iE 'reload' | tail -n 1 | sed 's/^/  journal: /'
in_ct systemctl show -p ExecReload --value diskprobe_exporter.service | sed 's/^/  ExecReload: /'
beforew=$(sha256sum <"$R3/etc/diskprobe_exporter/web-config.yml")
play webbad fail --limit pi-systemd.test -e @web-bad.json
failed_task=$(awk '/^TASK \[/ { t = $0; sub(/^TASK \[/, "", t); sub(/\] \**$/, "", t) } index($0, "fatal: [pi-systemd.test]") == 1 { print t }' webbad.log)
check "a missing certificate fails at the validate step: task '$failed_task': $(grep -o '/etc/diskprobe_exporter/missing\.[a-z]*[^"\\]*' webbad.log | head -n1)" \
  bash -c "[ '$failed_task' = 'diskprobe_exporter : Install the web configuration' ] && grep -q 'failed to validate.*/etc/diskprobe_exporter/missing' webbad.log"
check "the old web-config.yml stays, the service runs on (MainPID $(ct_pid)), the password still works: $(ct_code "$PORT3" "prometheus:$PW4")" \
  test "$(sha256sum <"$R3/etc/diskprobe_exporter/web-config.yml"):$(ct_pid):$(ct_code "$PORT3" "prometheus:$PW4")" = "$beforew:$PIDW2:200"

log "architectures (runs 9-11)"
play armv6 fail --limit pi-deb.test -e ansible_architecture=armv6l
check "armv6l maps to armhf and the ARMv6 package (then dpkg, which says amd64, stops it): $(grep -o 'say armhf ([a-z0-9-]*)' armv6.log | head -n1)" \
  grep -q 'say armhf (diskprobe-exporter-armv6), but dpkg installs amd64' armv6.log
play arm32 fail --limit pi-deb.test -e ansible_architecture=aarch64 -e ansible_userspace_bits=32
check "aarch64 kernel + 32-bit userland maps to armhf (then dpkg, which says amd64, stops it)" \
  grep -q 'say armhf (diskprobe-exporter), but dpkg installs amd64' arm32.log
play riscv fail --limit pi-deb.test -e ansible_architecture=riscv64
check "riscv64 refused: no package for the architecture" grep -q 'no package for the architecture riscv64' riscv.log

log "the package directory (runs 12-13)"
play nodeb fail --limit pi-deb.test -e diskprobe_exporter_deb_dir=$E2E_WORK/empty
check "no package for the architecture in the directory: clear message" \
  grep -q "No diskprobe-exporter_\*_amd64.deb in $E2E_WORK/empty on the controller" nodeb.log
mkdir -p two && cp "$DEB" two/ && cp "$DEB" two/diskprobe-exporter_0.0.1_amd64.deb
play twodebs fail --limit pi-deb.test -e diskprobe_exporter_deb_dir=$E2E_WORK/two
check "two versions in the directory: asks for diskprobe_exporter_version" \
  grep -q 'Several packages match.*Set diskprobe_exporter_version' twodebs.log

log "a host refused for its architecture is left out of file_sd"
# pi-old.test: the pi-repo root (not in this run) seen through `setarch i686`: uname says i686,
# which Ansible reports as i386; no package for it.
printf '#!/bin/sh\nexec setarch i686 chroot "$@"\n' >i686-chroot && chmod +x i686-chroot
sed "s|^        # (extra hosts)\$|        pi-old.test:\\n          ansible_host: $R2\\n          ansible_chroot_exe: $E2E_WORK/i686-chroot\\n          diskprobe_exporter_file_sd_labels: {site: test}|" \
  inventory.yml >inventory-arch.yml
INV=inventory-arch.yml
play refused fail --limit pi-deb.test,pi-old.test
INV=inventory.yml
check "pi-old.test refused: $(grep -o 'no package for the architecture [a-z0-9_]*' refused.log | head -n1); pi-deb.test ok (failed=$(recap refused.log pi-deb.test failed))" \
  bash -c "grep -q 'no package for the architecture i386' refused.log && [ '$(recap refused.log pi-deb.test failed)' = 0 ]"
sed 's/^/  /' "$FILE_SD"
sd_check=$(python3 - "$FILE_SD" "$PORT2" "$PORT3" <<'EOF'
import sys, json
got = {t for g in json.load(open(sys.argv[1])) for t in g["targets"]}
want = {"pi-deb.test:29100", "pi-later.test:29100", f"pi-repo.example.net:{sys.argv[2]}", f"pi-systemd.test:{sys.argv[3]}"}
print(f"{len(got)} targets, pi-old.test {'listed' if 'pi-old.test:29100' in got else 'left out'}")
sys.exit(0 if got == want else f"got {sorted(got)}, want {sorted(want)}")
EOF
) && ok "file_sd after the run with the refused host: $sd_check" || fail "file_sd after the refused host: $sd_check"

echo "total: $(( $(date +%s) - T0 )) s"
if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all Ansible checks passed"
