#!/usr/bin/env bash
# deploy/systemd: `systemd-analyze verify` must be clean, `systemd-analyze security --offline=yes`
# exposure is printed and must be <= 2.1; the only capability is CAP_SYSLOG (a capability that
# overrides file permissions, CAP_DAC_READ_SEARCH above all, fails the test, both by the unit's
# own lines and by systemd-analyze's verdict); every secret location in the list below is in
# InaccessiblePaths; the sysusers.d file makes the diskprobe user in `disk`.
# Usage: systemd_unit.sh <path to diskprobe_exporter>   (ExecStart is pointed at it for verify,
# which checks that the command exists)
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
UNIT=$SRC/deploy/systemd/diskprobe_exporter.service
command -v systemd-analyze >/dev/null || { echo "missing systemd-analyze (package systemd)" >&2; exit 1; }
work=$E2E_WORK

sed "s|^ExecStart=/usr/bin/diskprobe_exporter|ExecStart=$EXPORTER|" "$UNIT" >"$work/diskprobe_exporter.service"
# verify runs `man` for each man: page in Documentation=: ours from docs/, as the package installs it.
mkdir -p "$work/man/man1"
cp "$SRC/docs/diskprobe_exporter.1" "$work/man/man1/"
if out=$(MANPATH="$work/man:" systemd-analyze verify "$work/diskprobe_exporter.service" 2>&1) && [ -z "$out" ]; then
  echo "ok: systemd-analyze verify: clean"
else
  fail "systemd-analyze verify: $out"
fi

systemd-analyze security --offline=yes "$work/diskprobe_exporter.service" >"$work/security.txt" 2>&1 || true
score=$(sed -n 's/.*Overall exposure level for diskprobe_exporter.service: \([0-9.]*\).*/\1/p' "$work/security.txt")
echo "systemd-analyze security --offline=yes: exposure $score (target <= 2.1); the items still counted:"
grep -E '^✗' "$work/security.txt" | sed 's/  */ /g' | cut -c1-110 || true
if [ -n "$score" ] && awk -v s="$score" 'BEGIN {exit !(s <= 2.1)}'; then
  echo "ok: exposure $score <= 2.1"
else
  fail "exposure '$score' above 2.1 or not found"; cat "$work/security.txt" >&2
fi
if grep -q '^✓ CapabilityBoundingSet=~CAP_(DAC_\*|FOWNER|IPC_OWNER)' "$work/security.txt"; then
  echo "ok: systemd-analyze: the service cannot override file permissions (no CAP_DAC_*, CAP_FOWNER)"
else
  fail "systemd-analyze: the service may override file permissions: $(grep 'CAP_(DAC_' "$work/security.txt")"
fi

# Capabilities: exactly CAP_SYSLOG, in the bounding and the ambient set (the last assignment
# counts; an empty one resets the list, as systemd reads it).
caps_of() {  # KEY [FILE...]: the unit, then drop-ins in order
  local k=$1; shift
  awk -F= -v k="$k" '$1 == k { if ($2 == "") v = ""; else v = v " " $2 } END { print v }' "$UNIT" "$@" |
    tr ' ' '\n' | sed '/^$/d' | LC_ALL=C sort -u | tr '\n' ' ' | sed 's/ $//'
}
for k in CapabilityBoundingSet AmbientCapabilities; do
  got=$(caps_of "$k")
  if [ "$got" = CAP_SYSLOG ]; then echo "ok: $k=$got"; else fail "$k is '$got', expected CAP_SYSLOG only"; fi
  # The opt-in SMART drop-in adds exactly CAP_SYS_RAWIO (smartctl's ATA pass-through).
  got=$(caps_of "$k" "$SRC/deploy/systemd/smart.conf")
  if [ "$got" = "CAP_SYSLOG CAP_SYS_RAWIO" ]; then echo "ok: with smart.conf $k=$got"
  else fail "with smart.conf $k is '$got', expected CAP_SYSLOG CAP_SYS_RAWIO"; fi
done
# The opt-in drop-in for SD vendor health (CMD56) adds CAP_SYS_RAWIO and nothing else; systemd
# merges it with the unit's list.
DROPIN=$(dirname "$UNIT")/sd-vendor-health.conf
for k in CapabilityBoundingSet AmbientCapabilities; do
  got=$(UNIT=$DROPIN caps_of "$k")
  if [ "$got" = CAP_SYS_RAWIO ]; then echo "ok: sd-vendor-health.conf $k=$got"
  else fail "sd-vendor-health.conf: $k is '$got', expected CAP_SYS_RAWIO only"; fi
done
# Secrets a capability or a loose file mode must never reach (each hidden in the unit).
hidden=$(sed -n 's/^InaccessiblePaths=//p' "$UNIT" | tr ' ' '\n' | sed 's/^-//')
missing=
for p in /etc/shadow /etc/gshadow /etc/ssh /etc/ssl/private /etc/wpa_supplicant /etc/NetworkManager/system-connections \
  /var/lib/iwd /etc/wireguard /etc/rancher /var/lib/rancher /etc/kubernetes /var/lib/kubelet /root /run/credentials \
  /var/lib/private /var/backups; do
  echo "$hidden" | grep -qx "$p" || missing="$missing $p"
done
if [ -z "$missing" ]; then echo "ok: InaccessiblePaths hides every listed secret location"
else fail "InaccessiblePaths lacks:$missing"; fi
grep -q '^ProtectHome=yes$' "$UNIT" && grep -q '^ProtectSystem=strict$' "$UNIT" &&
  echo "ok: ProtectHome=yes, ProtectSystem=strict" || fail "ProtectHome=yes / ProtectSystem=strict missing"
# debugfs: the grant before the start is undone after the stop, and names only the ios files.
pre=$(sed -n 's/^ExecStartPre=+-//p' "$UNIT"); post=$(sed -n 's/^ExecStopPost=+-//p' "$UNIT")
if echo "$pre" | grep -q 'set -- /sys/kernel/debug/mmc\*/ios;' && echo "$pre" | grep -q 'chmod g+r "\$\$@"' &&
   echo "$post" | grep -q 'chmod g-r "\$\$@"' && echo "$post" | grep -q 'chmod g-x /sys/kernel/debug'; then
  echo "ok: debugfs: read on mmc*/ios only, granted at start and taken back at stop"
else
  fail "debugfs grant/revoke lines changed: pre '$pre' post '$post'"
fi

# The user: systemd-sysusers into an empty root that has the `disk` group, as Debian's base-passwd.
mkdir -p "$work/root/etc"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$work/root/etc/passwd"
printf 'root:x:0:\ndisk:x:6:\n' >"$work/root/etc/group"
if command -v systemd-sysusers >/dev/null; then
  systemd-sysusers --root="$work/root" "$SRC/deploy/systemd/diskprobe_exporter.sysusers"
  if grep -q '^diskprobe:x:[0-9]*:[0-9]*:diskprobe_exporter:/var/lib/diskprobe_exporter:/usr/sbin/nologin$' "$work/root/etc/passwd" &&
     grep -q '^disk:x:6:diskprobe$' "$work/root/etc/group"; then
    echo "ok: sysusers.d: $(grep '^diskprobe:' "$work/root/etc/passwd"), $(grep '^disk:' "$work/root/etc/group")"
  else
    fail "sysusers.d did not make the user as expected"; cat "$work/root/etc/passwd" "$work/root/etc/group" >&2
  fi
else
  fail "missing systemd-sysusers"
fi
[ "$FAILURES" -eq 0 ] || exit 1
