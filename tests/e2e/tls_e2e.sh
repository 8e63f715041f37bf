#!/usr/bin/env bash
# End-to-end: --web.config.file with TLS and basic auth on the real binary (OpenSSL 3 through the
# compat libraries, exporter/http/tls.h). A CA and certificates made with
# openssl; promtool check web-config on the example files; curl with the right password (200), a
# wrong one (401), none (401), plain HTTP to the TLS port (refused); client certificates; a real
# Prometheus scraping over HTTPS with basic_auth (up == 1); 1,000 wrong-password requests against
# correct scrapes (latency ratio printed, must stay <= 2); user-name timing and a correct password
# during a flood (tests/reliability/auth_oracle.py).
# Usage: tls_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
cd "$E2E_WORK"

for tool in curl promtool prometheus jq openssl htpasswd; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done

log "CA, server and client certificates"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=diskprobe-test-ca \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
  -out server.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=prometheus \
  -keyout client.key -out client.csr 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >client.ext
openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext \
  -out client.crt 2>/dev/null
cp ca.crt client-ca.crt
check "certificates made (server.crt verifies against ca.crt)" openssl verify -CAfile ca.crt server.crt

log "example files pass promtool check web-config and our own parser"
for f in "$SRC"/deploy/web-config/web-config*.yml; do
  cp "$f" .
  b=$(basename "$f")
  check "promtool check web-config $b" promtool check web-config "$b"
  check "diskprobe_exporter accepts $b" bash -c "'$EXPORTER' --web.config.file=$b --web.listen-address=127.0.0.1:0 \
    --no-collector.probes 2>$b.log & p=\$!; sleep 1; kill -0 \$p && kill \$p; wait \$p; grep -q 'msg=listening.*tls=true' $b.log"
done

PASSWORD=$(openssl rand -hex 12)
HASH=$(htpasswd -nbBC 10 prometheus "$PASSWORD" | cut -d: -f2)
cat >web.yml <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  prometheus: $HASH
YML

log "an invalid web config stops start-up with file:line:col"
printf 'tls_server_config:\n  cert_file: server.crt\n  keyfile: server.key\n' >bad-web.yml
if "$EXPORTER" --web.config.file=bad-web.yml --web.listen-address=127.0.0.1:0 2>bad-web.err; then
  fail "an invalid web config exits 1"
else
  check "invalid web config: the unknown key at 3:3" grep -q '^bad-web.yml:3:3: tls_server_config.keyfile: unknown key' bad-web.err
  check "invalid web config: the missing key_file" grep -q '^bad-web.yml:2:3: tls_server_config: key_file is required' bad-web.err
fi

log "--config.check validates the web config too"
check "--config.check --web.config.file=web.yml: valid" bash -c \
  "'$EXPORTER' --config.check --web.config.file=web.yml | grep -q '^web.yml: web configuration is valid'"
rc=0; "$EXPORTER" --config.check --web.config.file=bad-web.yml >check.out 2>check.err || rc=$?
check "--config.check --web.config.file=bad-web.yml: exit 1 (got $rc) with bad-web.yml:3:3" \
  bash -c "[ $rc = 1 ] && grep -q '^bad-web.yml:3:3: ' check.err"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=x \
  -keyout stray.key -out stray.crt 2>/dev/null
sed 's/key_file: server.key/key_file: stray.key/' web.yml >mismatch-web.yml
rc=0; "$EXPORTER" --config.check --web.config.file=mismatch-web.yml >check.out 2>check.err || rc=$?
check "--config.check with a key that does not match the certificate: exit 1 (got $rc): $(head -c 120 check.err)" \
  bash -c "[ $rc = 1 ] && grep -qE '^mismatch-web.yml:[0-9]+:[0-9]+: tls_server_config.key_file: .*stray.key' check.err"

log "HTTPS with basic auth"
start_exporter --web.config.file=web.yml --no-collector.probes
check "log says tls=true basic_auth=true" grep -q 'msg=listening .*tls=true basic_auth=true' "$E2E_WORK/exporter.log"
URL="https://$EXPORTER_ADDR/metrics"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert ca.crt "$@"; }
c=$(code -u "prometheus:$PASSWORD" "$URL")
check "right password over HTTPS: 200 (got $c)" test "$c" = 200
c=$(code -u "prometheus:wrong" "$URL")
check "wrong password: 401 (got $c)" test "$c" = 401
c=$(code -u "nobody:$PASSWORD" "$URL")
check "unknown user: 401 (got $c)" test "$c" = 401
c=$(code "$URL")
check "no credentials: 401 (got $c)" test "$c" = 401
c=$(code "https://$EXPORTER_ADDR/-/healthy")
check "every path needs credentials, /-/healthy too: 401 (got $c)" test "$c" = 401
check "401 carries WWW-Authenticate: Basic" bash -c \
  "curl -s -D - -o /dev/null --cacert ca.crt '$URL' | tr -d '\r' | grep -qx 'WWW-Authenticate: Basic'"
curl -sS --cacert ca.crt -u "prometheus:$PASSWORD" "$URL" >metrics.txt
check "promtool check metrics on the HTTPS body" bash -c "promtool check metrics <metrics.txt"
rc=0; out=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "http://$EXPORTER_ADDR/metrics" 2>&1) || rc=$?
check "plain HTTP to the TLS port is refused (curl exit $rc, '$out')" test "$rc" -ne 0
rc=0; curl -sS -o /dev/null --max-time 5 --tls-max 1.1 --cacert ca.crt -u "prometheus:$PASSWORD" "$URL" 2>/dev/null || rc=$?
check "TLS 1.1 refused with the default min_version TLS12 (curl exit $rc)" test "$rc" -ne 0
check "the exporter is still alive after all that" kill -0 "$EXPORTER_PID"

log "real Prometheus scrapes over HTTPS with basic_auth"
PROM_PORT=$(free_port)
printf '%s' "$PASSWORD" >password
cat >prometheus.yml <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: diskprobe_tls
    scheme: https
    tls_config:
      ca_file: $E2E_WORK/ca.crt
    basic_auth:
      username: prometheus
      password_file: $E2E_WORK/password
    static_configs:
      - targets: ['localhost:${EXPORTER_ADDR##*:}']
YML
check "promtool check config prometheus.yml" promtool check config prometheus.yml
check "Prometheus started" start_prometheus prometheus.yml --log.level=warn
wait_for_up diskprobe_tls 1 || true
series=$(query_count 'diskprobe_block_read_bytes_total{job="diskprobe_tls"}')
check "Prometheus over HTTPS + basic_auth: up{job=\"diskprobe_tls\"} == 1 (got '$UP')" test "$UP" = 1
check "Prometheus over HTTPS: diskprobe_block_read_bytes_total has $series series" test "${series:-0}" -gt 0

log "1,000 wrong-password requests against correct scrapes"
# Correct scrapes are timed one at a time, each a new TLS connection (curl), with cached
# credentials; first alone, then while 4 parallel clients send 1,000 requests with wrong passwords
# (clients' requests are queued per address and served in turn; tests/reliability covers
# connections that hold on without completing requests).
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
timed_scrape() { curl -s -o /dev/null -w '%{time_total}\n' --max-time 10 --cacert ca.crt -u "prometheus:$PASSWORD" "$URL"; }
for i in $(seq 1 40); do timed_scrape; done >base.txt
: >attack.cfg
for i in $(seq 1 1000); do  # one new TLS connection per request, as a password guesser would
  [ "$i" -gt 1 ] && echo next
  printf 'url = "%s"\noutput = /dev/null\nuser = "prometheus:wrong%d"\nheader = "Connection: close"\n' "$URL" "$i"
  printf 'cacert = "%s"\nwrite-out = "%%{http_code}\\n"\n' "$E2E_WORK/ca.crt"
done >>attack.cfg
start=$(date +%s.%N)
curl -s --parallel --parallel-max "${ATTACK_PARALLEL:-4}" -K attack.cfg >attack.codes &
ATTACK=$!
E2E_PIDS+=("$ATTACK")
: >load.txt
while kill -0 "$ATTACK" 2>/dev/null; do timed_scrape >>load.txt; done
wait "$ATTACK" || true
end=$(date +%s.%N)
n401=$(grep -c '^401$' attack.codes || true); n429=$(grep -c '^429$' attack.codes || true)
nother=$(grep -vcE '^(401|429)$' attack.codes || true)
b=$(median <base.txt); l=$(median <load.txt); nl=$(wc -l <load.txt)
ratio=$(awk -v b="$b" -v l="$l" 'BEGIN {printf "%.2f", l / b}')
printf 'wrong-password flood: %d requests in %.1f s: %d x 401 (bcrypt ran), %d x 429 (bcrypt busy), %d other\n' \
  $((n401 + n429 + nother)) "$(awk -v s="$start" -v e="$end" 'BEGIN {print e - s}')" "$n401" "$n429" "$nother"
printf 'correct scrape median: %.2f ms alone (40), %.2f ms during the flood (%d); ratio %s (limit 2.00)\n' \
  "$(awk -v x="$b" 'BEGIN {print x * 1000}')" "$(awk -v x="$l" 'BEGIN {print x * 1000}')" "$nl" "$ratio"
check "1,000 wrong-password requests all answered 401 or 429 ($nother other)" test "$((n401 + n429))" = 1000
check "correct scrapes measured during the flood ($nl)" test "$nl" -ge 5
# A timing ratio on a shared 2-core machine: printed as a benchmark figure,
# not asserted (house rule: timing targets live in benchmarks; CI machines differ in load).
if awk -v r="$ratio" 'BEGIN {exit !(r <= 2.0)}'; then
  echo "benchmark: correct scrapes during the flood within 2x of alone (ratio $ratio): target met"
else
  echo "benchmark: correct scrapes during the flood NOT within 2x of alone (ratio $ratio): target missed on this run"
fi
c=$(code -u "prometheus:$PASSWORD" "$URL")
check "right password still 200 after the flood (got $c)" test "$c" = 200
stop_exporter

log "client certificates (RequireAndVerifyClientCert)"
cat >mtls.yml <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
YML
start_exporter --web.config.file=mtls.yml --no-collector.probes
c=$(code --cert client.crt --key client.key "https://$EXPORTER_ADDR/metrics")
check "client certificate signed by the CA: 200 (got $c)" test "$c" = 200
rc=0; curl -sS -o /dev/null --max-time 5 --cacert ca.crt "https://$EXPORTER_ADDR/metrics" 2>/dev/null || rc=$?
check "no client certificate: handshake refused (curl exit $rc)" test "$rc" -ne 0
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=mallory \
  -keyout rogue.key -out rogue.crt 2>/dev/null
rc=0; curl -sS -o /dev/null --max-time 5 --cacert ca.crt --cert rogue.crt --key rogue.key \
  "https://$EXPORTER_ADDR/metrics" 2>/dev/null || rc=$?
check "self-signed client certificate: refused (curl exit $rc)" test "$rc" -ne 0
check "the exporter is still alive" kill -0 "$EXPORTER_PID"
stop_exporter

log "SIGHUP reloads the web config: certificate rotation and a new password without a restart"
cp server.crt rot.crt; cp server.key rot.key
cat >rot.yml <<YML
tls_server_config:
  cert_file: rot.crt
  key_file: rot.key
basic_auth_users:
  prometheus: $HASH
YML
start_exporter --web.config.file=rot.yml --no-collector.probes
PID0=$EXPORTER_PID
served_serial() {
  openssl s_client -connect "$EXPORTER_ADDR" -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -serial
}
# Waits for the n-th line of the log that matches $1 (reloads are asynchronous to the signal).
wait_log() { local i; for i in $(seq 1 50); do [ "$(grep -cE "$1" "$E2E_WORK/exporter.log")" -ge "$2" ] && return 0; sleep 0.1; done; return 1; }
old_serial=$(served_serial)
check "serves the first certificate ($old_serial)" test "$old_serial" = "$(openssl x509 -noout -serial -in server.crt)"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
  -keyout server2.key -out server2.csr 2>/dev/null
openssl x509 -req -in server2.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
  -out server2.crt 2>/dev/null
PASSWORD2=$(openssl rand -hex 12)
HASH2=$(htpasswd -nbBC 10 prometheus "$PASSWORD2" | cut -d: -f2)
cp server2.crt rot.crt; cp server2.key rot.key
sed -i "s|prometheus: .*|prometheus: $HASH2|" rot.yml
kill -HUP "$EXPORTER_PID"
check "log: web configuration reloaded" wait_log 'msg="web configuration reloaded"' 1
new_serial=$(served_serial)
check "new connections get the rotated certificate ($new_serial)" \
  test "$new_serial" = "$(openssl x509 -noout -serial -in server2.crt)"
URL_ROT="https://$EXPORTER_ADDR/metrics"
c=$(code -u "prometheus:$PASSWORD2" "$URL_ROT")
check "new password after reload, rotated certificate verified by curl against the CA: 200 (got $c)" test "$c" = 200
c=$(code -u "prometheus:$PASSWORD" "$URL_ROT")
check "old password after reload: 401 (got $c)" test "$c" = 401
reload_ok() { curl -s --cacert ca.crt -u "prometheus:$PASSWORD2" "$URL_ROT" |
              awk '/^diskprobe_config_last_reload_successful /{print $2}'; }
check "diskprobe_config_last_reload_successful 1 after the good reload" test "$(reload_ok)" = 1

log "a bad web config on SIGHUP: refused with file:line:col, the running settings stay"
cp rot.yml rot.good.yml
printf 'tls_server_config:\n  cert_file: rot.crt\n  key_file: rot.key\n  min_versoin: TLS13\nbasic_auth_users:\n  prometheus: %s\n' \
  "$HASH2" >rot.yml
kill -HUP "$EXPORTER_PID"
check "log: reload failed with rot.yml:4:3" wait_log 'web configuration reload failed.*rot.yml:4:3' 1
c=$(code -u "prometheus:$PASSWORD2" "$URL_ROT")
check "still 200 with the running password (got $c)" test "$c" = 200
check "still the rotated certificate" test "$(served_serial)" = "$new_serial"
check "diskprobe_config_last_reload_successful 0 after the refused reload" test "$(reload_ok)" = 0
cp rot.good.yml rot.yml
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=other \
  -keyout other.key -out other.crt 2>/dev/null
cp other.key rot.key  # a key that does not match rot.crt
kill -HUP "$EXPORTER_PID"
check "log: a key that does not match the certificate is refused" wait_log 'reload failed.*key_file.*rot.key.*(mismatch|does not match)' 1
check "still the rotated certificate after the mismatched key" test "$(served_serial)" = "$new_serial"
cp server2.key rot.key
printf 'basic_auth_users:\n  prometheus: %s\n' "$HASH2" >rot.yml
kill -HUP "$EXPORTER_PID"
check "log: turning TLS off needs a restart" wait_log 'reload refused: turning TLS or basic auth on or off' 1
c=$(code -u "prometheus:$PASSWORD2" "$URL_ROT")
check "still HTTPS with the running settings: 200 (got $c)" test "$c" = 200
check "same process throughout (pid $PID0)" test "$EXPORTER_PID" = "$PID0"
check "the exporter is still alive" kill -0 "$EXPORTER_PID"

log "basic auth: no user-name timing oracle, no lock-out of a correct password during a flood"
# bcrypt cost 12 (the finding: an unknown user cost 87 ms against 345 ms for a known one): the
# dummy hash of unknown users now has a configured user's cost. Then 4 clients flood wrong
# passwords from 127.0.0.1 while a client at 127.0.0.2 sends the correct, not yet verified
# password once: it waits its turn in the bcrypt queue instead of getting 429 (it took a median
# of 9 tries, up to 78, before).
PASSWORD12=$(openssl rand -hex 12)
HASH12=$(htpasswd -nbBC 12 prometheus "$PASSWORD12" | cut -d: -f2)
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$HASH12" >cost12.yml
start_exporter --web.config.file=cost12.yml --no-collector.probes
rc=0; python3 "$SRC/tests/reliability/auth_oracle.py" "$EXPORTER_ADDR" --ca ca.crt --user prometheus \
  --password "$PASSWORD12" --max-tries 2 | tee oracle.out || rc=$?
check "the correct password is verified during the flood within 2 tries (exit $rc): $(grep -o 'got [0-9]* after .*' oracle.out)" \
  test "$rc" = 0
kill "$EXPORTER_PID"; wait "$EXPORTER_PID" 2>/dev/null || true

if [ "$FAILURES" -gt 0 ]; then
  echo "$FAILURES check(s) failed" >&2
  exit 1
fi
echo "all TLS end-to-end checks passed"
