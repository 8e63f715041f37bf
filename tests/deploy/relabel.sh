#!/usr/bin/env bash
# The shipped scrape configuration's target labels, from a real Prometheus (Debian's) running
# deploy/prometheus/prometheus.yml with only its paths rewritten: "host:29100" and node_exporter's
# "host:9100" get the same instance "host" (so diskprobe_* and node_* of a host join on
# instance), another port keeps host:port, and an instance set in file_sd is kept as written.
# No exporter is needed: /api/v1/targets lists the labels of targets that are down too.
# Usage: relabel.sh [ignored]
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
for tool in curl jq prometheus; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
cd "$E2E_WORK"
mkdir -p rules file_sd
: >rules/diskprobe-recording.rules.yml
: >rules/diskprobe-alerts.rules.yml
sed -e "s#/etc/prometheus/rules/#$E2E_WORK/rules/#; s#/etc/prometheus/file_sd/#$E2E_WORK/file_sd/#" \
  "$SRC/deploy/prometheus/prometheus.yml" >prometheus.yml
# Addresses in TEST-NET-1 (RFC 5737) and .invalid names: nothing answers, nothing is resolved
# before relabelling.
cat >file_sd/diskprobe-test.yml <<'YML'
- targets: ['pi-kitchen.invalid:29100', 'pi-garage.invalid:29200']
  labels: {site: home}
- targets: ['192.0.2.21:29100']
  labels: {instance: cm4-gateway-02, site: field}
YML
cat >file_sd/node-test.yml <<'YML'
- targets: ['pi-kitchen.invalid:9100']
- targets: ['192.0.2.21:9100']
  labels: {instance: cm4-gateway-02}
YML
check "Prometheus started with the shipped prometheus.yml" start_prometheus prometheus.yml --log.level=warn
targets=""
for _ in $(seq 1 100); do
  targets=$(curl -sS "$PROM/api/v1/targets" | jq -r '.data.activeTargets[] | "\(.labels.job) \(.discoveredLabels.__address__) \(.labels.instance)"' | sort)
  [ "$(wc -l <<<"$targets")" -ge 5 ] && break
  sleep 0.1
done
log "targets (job address instance):"
sed 's/^/  /' <<<"$targets"
expect() {  # expect JOB ADDRESS INSTANCE
  check "$1 $2 -> instance=\"$3\"" grep -qxF "$1 $2 $3" <<<"$targets"
}
expect diskprobe pi-kitchen.invalid:29100 pi-kitchen.invalid
expect node pi-kitchen.invalid:9100 pi-kitchen.invalid
expect diskprobe pi-garage.invalid:29200 pi-garage.invalid:29200
expect diskprobe 192.0.2.21:29100 cm4-gateway-02
expect node 192.0.2.21:9100 cm4-gateway-02
check "5 targets in all" test "$(wc -l <<<"$targets")" = 5
[ "$FAILURES" = 0 ] || { echo "$FAILURES check(s) failed" >&2; exit 1; }
echo "relabelling: all checks passed"
