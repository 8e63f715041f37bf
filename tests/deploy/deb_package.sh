#!/usr/bin/env bash
# The Debian package: build it with CPack, check its control data and contents, run lintian (its
# findings are printed), then install it with apt into a clean Debian 12 root made by debootstrap
# (minbase: no libssl-dev, no compiler, nothing of ours) and run the binary from it there: --version,
# ldd, a scrape as the package's diskprobe user, and an HTTPS scrape (the OpenSSL compat libraries
# must work where no libssl.so exists). Finally purge removes the state directory.
# Needs root (chroot, mounts) and network (debootstrap, apt); skips (77) without root outside CI.
# The debootstrap root is cached in <build>/deb-test-root (about 200 MB, made once).
# Usage: deb_package.sh <build directory>
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"

if [ "$(id -u)" -ne 0 ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: needs root (chroot) under CI" >&2; exit 1; }
  echo "SKIP: needs root for the chroot install" >&2; exit 77
fi
for tool in cpack dpkg-deb lintian debootstrap curl openssl htpasswd; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done

log "cpack -G DEB"
(cd "$E2E_WORK" && cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$E2E_WORK/pkg" >cpack.log 2>&1) ||
  { cat "$E2E_WORK/cpack.log" >&2; exit 1; }
DEB=$(ls "$E2E_WORK"/pkg/diskprobe-exporter_*.deb)
printf 'package: %s, %s bytes\n' "$(basename "$DEB")" "$(stat -c %s "$DEB")"
dpkg-deb -I "$DEB" control >control.txt 2>/dev/null || dpkg-deb -f "$DEB" >control.txt
dpkg-deb -f "$DEB" Depends | sed 's/^/Depends: /'
check "Depends (dpkg-shlibdeps) has libssl3, libyaml-cpp0.7, libcrypt1" bash -c \
  "dpkg-deb -f '$DEB' Depends | grep -q libssl3 &&
   dpkg-deb -f '$DEB' Depends | grep -q libyaml-cpp0.7 && dpkg-deb -f '$DEB' Depends | grep -q libcrypt1"
check "conffiles lists /etc/diskprobe_exporter/config.yml and /etc/default/diskprobe_exporter" bash -c \
  "dpkg-deb --ctrl-tarfile '$DEB' | tar -xO ./conffiles | grep -qx /etc/diskprobe_exporter/config.yml &&
   dpkg-deb --ctrl-tarfile '$DEB' | tar -xO ./conffiles | grep -qx /etc/default/diskprobe_exporter"
# The unit reads ARGS from the defaults file, which sets it empty.
check "/etc/default/diskprobe_exporter sets ARGS, the unit appends \$ARGS" bash -c \
  "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./etc/default/diskprobe_exporter | grep -qx 'ARGS=\"\"' &&
   grep -qx 'EnvironmentFile=-/etc/default/diskprobe_exporter' '$SRC/deploy/systemd/diskprobe_exporter.service' &&
   grep -q '^ExecStart=/usr/bin/diskprobe_exporter .* \$ARGS\$' '$SRC/deploy/systemd/diskprobe_exporter.service'"
dpkg-deb -c "$DEB" | awk '{print $6}' >contents.txt
for f in ./usr/bin/diskprobe_exporter ./etc/diskprobe_exporter/config.yml ./lib/systemd/system/diskprobe_exporter.service \
         ./usr/lib/sysusers.d/diskprobe_exporter.conf ./usr/lib/diskprobe_exporter/libssl.so ./usr/lib/diskprobe_exporter/libcrypto.so \
         ./usr/lib/diskprobe_exporter/diskprobe_exporter-bench ./usr/share/man/man1/diskprobe_exporter.1.gz \
         ./usr/share/doc/diskprobe-exporter/copyright ./usr/share/doc/diskprobe-exporter/changelog.gz \
         ./usr/share/doc/diskprobe-exporter/metrics.md.gz ./usr/share/diskprobe-exporter/dashboards/node-detail.json \
         ./usr/share/diskprobe-exporter/prometheus/rules/diskprobe-alerts.rules.yml; do
  check "package contains $f" grep -qx "$f" contents.txt
done
# The CAP_SYS_RAWIO drop-ins are examples, not in force: shipped under the documentation, as the
# files in the source tree, and nowhere systemd reads drop-ins from.
for f in smart.conf sd-vendor-health.conf; do
  check "package contains the opt-in drop-in ./usr/share/doc/diskprobe-exporter/examples/systemd/$f, as deploy/systemd/$f" \
    bash -c "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./usr/share/doc/diskprobe-exporter/examples/systemd/$f |
             cmp -s - '$SRC/deploy/systemd/$f'"
done
check "no drop-in in force: nothing under a systemd directory but the unit ($(grep -E 'systemd/(system|user)/.' contents.txt | tr '\n' ' '))" \
  test "$(grep -E '/systemd/(system|user)/.' contents.txt)" = ./lib/systemd/system/diskprobe_exporter.service
check "Suggests: smartmontools (got '$(dpkg-deb -f "$DEB" Suggests)')" bash -c \
  "dpkg-deb -f '$DEB' Suggests | tr ',' '\n' | sed 's/^ *//' | grep -qx smartmontools"
check "one command in PATH: $(grep -c '^./usr/bin/.' contents.txt) file(s) in /usr/bin" test "$(grep -c '^./usr/bin/.' contents.txt)" = 1
check "the manual page is docs/diskprobe_exporter.1" bash -c \
  "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./usr/share/man/man1/diskprobe_exporter.1.gz | gzip -dc | cmp -s - '$SRC/docs/diskprobe_exporter.1'"
check "the changelog's version is the package's ($(dpkg-deb -f "$DEB" Version))" bash -c \
  "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./usr/share/doc/diskprobe-exporter/changelog.gz | gzip -dc | head -n1 |
   grep -q '^diskprobe-exporter ($(dpkg-deb -f "$DEB" Version)) '"
# Every packaged path the unit's Documentation= and the man page name is in the package (they
# named README.md and metrics.md while the package ships them gzip'ed).
refs=$( (sed -n 's/^Documentation=//p' "$SRC/deploy/systemd/diskprobe_exporter.service" | tr ' ' '\n' | sed -n 's|^file://||p'
         sed 's/\\-/-/g' "$SRC/docs/diskprobe_exporter.1" | grep -oE '(^| )/(usr|etc|lib)/[A-Za-z0-9_./-]+' | sed 's/^ //' | sed 's/[.,]$//') |
       grep -vx /etc/diskprobe_exporter/web-config.yml | sort -u)  # the operator's file, not packaged
missing_refs=$(for r in $refs; do grep -qxE "\.$r/?" contents.txt || echo "$r"; done)
check "the $(echo "$refs" | wc -w) packaged paths named by the unit and the man page exist (missing: ${missing_refs:-none})" \
  test -z "$missing_refs"
check "the conffile is config/default.yml" bash -c \
  "dpkg-deb --fsys-tarfile '$DEB' | tar -xO ./etc/diskprobe_exporter/config.yml | cmp -s - '$SRC/config/default.yml'"

log "lintian"
lintian --no-tag-display-limit "$DEB" >lintian.txt 2>&1 || true
printf 'lintian: %d error(s), %d warning(s), %d info\n' "$(grep -c '^E:' lintian.txt || true)" \
  "$(grep -c '^W:' lintian.txt || true)" "$(grep -c '^I:' lintian.txt || true)"
sed 's/^/  /' lintian.txt
# lintian was clean when this was written (man page, changelog, copyright added): keep it so.
check "lintian: no error, no warning" bash -c "! grep -qE '^(E|W):' lintian.txt"

log "install into a clean Debian 12 root (debootstrap minbase) with apt"
CACHE=$(deb_test_root "$BUILD")
ROOT=$E2E_WORK/root
cp -a "$CACHE" "$ROOT"
mounts=()
umount_all() { local m; for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
safe_cleanup() {
  umount_all
  # Never rm -rf through a mount that is still there (it would be /dev, /sys or /proc).
  if grep -q " $ROOT/" /proc/self/mounts; then echo "mounts remain under $ROOT: not removing $E2E_WORK" >&2; return; fi
  cleanup
}
trap safe_cleanup EXIT
for m in proc sys dev; do mount --rbind "/$m" "$ROOT/$m"; mount --make-rslave "$ROOT/$m"; mounts=("$ROOT/$m" "${mounts[@]}"); done
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
cp "$DEB" "$ROOT/tmp/"
in_root() { chroot "$ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
check "clean root has no libssl.so (no libssl-dev) and no diskprobe user before" bash -c \
  "! ls '$ROOT'/usr/lib/*/libssl.so >/dev/null 2>&1 && ! grep -q '^diskprobe:' '$ROOT/etc/passwd'"
in_root apt-get update -qq >apt.log 2>&1 || true
if in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$DEB")" >>apt.log 2>&1; then
  ok "apt-get install ./$(basename "$DEB") in the clean root (dependencies from the Debian mirror)"
else
  fail "apt-get install in the clean root"; tail -20 apt.log >&2
fi
grep -E '^(Setting up|Unpacking) ' apt.log | sed 's/^/  /' | head -40
check "--version from the installed binary: $(in_root diskprobe_exporter --version 2>&1)" in_root diskprobe_exporter --version
check "'diskprobe_exporter bench' runs the installed bench program: $(in_root diskprobe_exporter bench --help 2>&1 | head -n1 | cut -c1-60)..." \
  bash -c "chroot '$ROOT' diskprobe_exporter bench --help | grep -q -- '--queue-depth'"
in_root ldd /usr/bin/diskprobe_exporter /usr/lib/diskprobe_exporter/libssl.so /usr/lib/diskprobe_exporter/libcrypto.so >ldd.txt 2>&1 || true
check "ldd: every library found ($(grep -c '=>' ldd.txt) entries)" bash -c "! grep -q 'not found' ldd.txt"
check "user diskprobe made, member of disk: $(grep '^diskprobe:' "$ROOT/etc/passwd")" bash -c \
  "grep -q '^diskprobe:' '$ROOT/etc/passwd' && grep -qE '^disk:x:6:(.*,)?diskprobe(,|$)' '$ROOT/etc/group'"
check "state directory /var/lib/diskprobe_exporter: diskprobe 700" bash -c \
  "[ \"\$(chroot '$ROOT' stat -c '%U %a' /var/lib/diskprobe_exporter)\" = 'diskprobe 700' ]"
check "installed: the drop-ins are examples only, no diskprobe_exporter.service.d anywhere" bash -c \
  "[ -f '$ROOT/usr/share/doc/diskprobe-exporter/examples/systemd/smart.conf' ] &&
   [ -z \"\$(find '$ROOT/etc/systemd' '$ROOT/lib/systemd' '$ROOT/usr/lib/systemd' -name 'diskprobe_exporter.service.d' 2>/dev/null)\" ]"
check "dpkg registers the conffile" bash -c \
  "chroot '$ROOT' dpkg-query -W -f='\${Conffiles}' diskprobe-exporter | grep -q /etc/diskprobe_exporter/config.yml"

log "run the installed binary in the root as the diskprobe user, scrape it"
PORT=$(free_port)
chroot --userspec=diskprobe:diskprobe --groups=disk "$ROOT" /usr/bin/diskprobe_exporter \
  --config.file=/etc/diskprobe_exporter/config.yml --web.listen-address="127.0.0.1:$PORT" 2>"$E2E_WORK/root-exporter.log" &
RPID=$!; E2E_PIDS+=("$RPID")
wait_http "http://127.0.0.1:$PORT/-/ready" 5 || true
curl -sS --max-time 5 "http://127.0.0.1:$PORT/metrics" >root-metrics.txt || true
check "scrape of the installed binary: $(grep -c '^diskprobe_' root-metrics.txt) diskprobe_ samples, build_info present" \
  grep -q '^diskprobe_build_info' root-metrics.txt
kill "$RPID"; wait "$RPID" 2>/dev/null || true

log "HTTPS from the installed binary in a root without libssl.so"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$ROOT/etc/diskprobe_exporter/server.key" \
  -out "$ROOT/etc/diskprobe_exporter/server.crt" 2>/dev/null
chown diskprobe "$ROOT/etc/diskprobe_exporter/server.key" 2>/dev/null ||
  chroot "$ROOT" chown diskprobe /etc/diskprobe_exporter/server.key
PW=$(openssl rand -hex 8)
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$(htpasswd -nbBC 10 prometheus "$PW" | cut -d: -f2)" >"$ROOT/etc/diskprobe_exporter/web-config.yml"
PORT=$(free_port)
chroot --userspec=diskprobe:diskprobe --groups=disk "$ROOT" /usr/bin/diskprobe_exporter \
  --web.config.file=/etc/diskprobe_exporter/web-config.yml --web.listen-address="127.0.0.1:$PORT" \
  2>"$E2E_WORK/root-tls.log" &
RPID=$!; E2E_PIDS+=("$RPID")
listen_address "$E2E_WORK/root-tls.log" "$RPID" >/dev/null || true
c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$ROOT/etc/diskprobe_exporter/server.crt" \
  -u "prometheus:$PW" "https://127.0.0.1:$PORT/metrics" || true)
check "HTTPS + basic auth from the installed package: 200 (got $c)" test "$c" = 200
check "still alive after the HTTPS request" kill -0 "$RPID"
kill "$RPID" 2>/dev/null; wait "$RPID" 2>/dev/null || true
[ "$c" = 200 ] || cat "$E2E_WORK/root-tls.log" >&2

log "remove, then install again: the service is enabled and not masked"
in_root apt-get remove -y -qq diskprobe-exporter >>apt.log 2>&1 || fail "apt-get remove"
mask=$ROOT/etc/systemd/system/diskprobe_exporter.service
echo "  after remove: $(readlink "$mask" || echo 'no mask')"
in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$DEB")" >>apt.log 2>&1 || fail "apt-get install again"
check "reinstalled after remove: no mask left ($(readlink "$mask" || echo none))" test ! -L "$mask"
check "reinstalled after remove: enabled (wants symlink)" \
  test -L "$ROOT/etc/systemd/system/multi-user.target.wants/diskprobe_exporter.service"
check "Description has no CMake list separators" bash -c "! dpkg-deb -f '$DEB' Description | grep -q ';'"

log "purge"
in_root apt-get purge -y -qq diskprobe-exporter >>apt.log 2>&1 || fail "apt-get purge"
check "purge removes /var/lib/diskprobe_exporter and the conffile" bash -c \
  "[ ! -e '$ROOT/var/lib/diskprobe_exporter' ] && [ ! -e '$ROOT/etc/diskprobe_exporter/config.yml' ]"

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all package checks passed"
