#!/usr/bin/env bash
# deploy/systemd: `systemd-analyze verify` must be clean, `systemd-analyze security --offline=yes`
# exposure is printed and must be <= 3.0; the sysusers.d file makes the diskprobe user in `disk`.
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
echo "systemd-analyze security --offline=yes: exposure $score (target <= 3.0); the items still counted:"
grep -E '^✗' "$work/security.txt" | sed 's/  */ /g' | cut -c1-110 || true
if [ -n "$score" ] && awk -v s="$score" 'BEGIN {exit !(s <= 3.0)}'; then
  echo "ok: exposure $score <= 3.0"
else
  fail "exposure '$score' above 3.0 or not found"; cat "$work/security.txt" >&2
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
