#!/usr/bin/env bash
# End-to-end: scrapes are served whatever other clients do. On the real binary, plain HTTP and
# then HTTPS with basic auth: 64 idle, 64 slowloris, 64 half-open TLS and 8 pipelining-no-read
# connections held open (tests/reliability/hostile_clients.py) while 100 scrapes are timed; their
# p50/p99 and the exporter's RSS before/under the attack are printed. Pass/fail: every scrape 200
# and p99 < 1 s (the target, 100 ms, is printed beside it: this may run on a loaded 2-core box).
# Then the same with every kind of hostile connection from a single address, where the per-client
# cap refuses most of them. Usage: hostile_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"
HOSTILE=$SRC/tests/reliability/hostile_clients.py
for tool in curl openssl htpasswd python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done

log "plain HTTP: 64 idle, 64 slowloris, 64 half-open TLS, 8 pipelining without reading; 100 scrapes"
start_exporter --no-collector.probes
rc=0; python3 "$HOSTILE" "$EXPORTER_ADDR" --pid "$EXPORTER_PID" --max-p99 1.0 | tee plain.out || rc=$?
check "plain HTTP under attack: every scrape 200, p99 < 1 s (exit $rc)" test "$rc" = 0
check "the exporter is alive" kill -0 "$EXPORTER_PID"

log "the same from one address per kind: the per-client cap (32) refuses the rest"
rc=0; python3 "$HOSTILE" "$EXPORTER_ADDR" --spread 1 --scrapes 50 --pid "$EXPORTER_PID" --max-p99 1.0 |
  tee capped.out || rc=$?
check "one address per kind: every scrape 200, p99 < 1 s (exit $rc)" test "$rc" = 0
kill "$EXPORTER_PID"; wait "$EXPORTER_PID" 2>/dev/null || true

log "HTTPS with basic auth under the same attack"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout server.key -out server.crt 2>/dev/null
PASSWORD=$(openssl rand -hex 12)
HASH=$(htpasswd -nbBC 10 prometheus "$PASSWORD" | cut -d: -f2)
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$HASH" >web.yml
start_exporter --no-collector.probes --web.config.file=web.yml
rc=0; python3 "$HOSTILE" "$EXPORTER_ADDR" --ca server.crt --auth "prometheus:$PASSWORD" --pid "$EXPORTER_PID" \
  --max-p99 1.0 | tee tls.out || rc=$?
check "HTTPS + basic auth under attack: every scrape 200, p99 < 1 s (exit $rc)" test "$rc" = 0
check "the exporter is alive" kill -0 "$EXPORTER_PID"
kill "$EXPORTER_PID"; wait "$EXPORTER_PID" 2>/dev/null || true

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all hostile-client checks passed"
