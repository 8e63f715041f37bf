#!/usr/bin/env bash
# The compose stack of the monitoring host (deploy/compose), without Docker:
#   1. `docker-compose config` resolves deploy/compose/docker-compose.yml (no daemon: DOCKER_HOST
#      points nowhere) and refuses it without GRAFANA_ADMIN_PASSWORD; every service has a pinned
#      image and a restart policy, every named volume is declared, every bind mount's source
#      exists in the repository. A broken copy (a mount of a missing directory) must be caught.
#   2. The bind mounts are copied into a tree that mirrors each container's paths; there,
#      `promtool check config` passes on the stack's prometheus.yml (paths prefixed with the
#      tree: its rule files are checked too), the Grafana provisioning files point at paths that
#      exist inside the container, the provisioned data source matches
#      dashboards/provisioning/datasources.yml and points at the prometheus service, and every
#      dashboard's datasource references resolve to it. The stack's diskprobe job is
#      deploy/prometheus/prometheus.yml's.
#   3. For real: Debian's prometheus runs the stack's prometheus.yml from that tree (only the
#      intervals shortened to 2 s, its own port for the self-scrape) with a file_sd file listing an exporter (on the Pi 4 fixture
#      root) and a target nobody listens on. Through its API: the exporter's target is up, the
#      dead one is down (per target: a check that only counted "some target up" would pass
#      with a broken exporter), the file_sd label reaches the series, Prometheus scrapes itself,
#      every rule group and rule of deploy/prometheus/rules is loaded and evaluates without
#      error, a recording rule has output, and DiskprobeExporterDown is pending for the dead
#      target only.
# Needs docker-compose (1.29), promtool, prometheus, curl, jq, python3 with PyYAML; no root, no
# network, no Docker daemon. Missing tools: skip (77) outside CI, fail under CI=true.
# Usage: compose.sh <build directory>
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
EXPORTER=$BUILD/diskprobe_exporter
missing=""
for tool in docker-compose promtool prometheus curl jq python3; do
  command -v "$tool" >/dev/null || missing="$missing $tool"
done
python3 -c 'import yaml' 2>/dev/null || missing="$missing python3-yaml"
if [ -n "$missing" ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: missing under CI:$missing" >&2; exit 1; }
  echo "SKIP: missing:$missing (scripts/install-deps.sh test)"; exit 77
fi
[ -x "$EXPORTER" ] || { echo "FAIL: no exporter binary at $EXPORTER: build first" >&2; exit 1; }
cd "$E2E_WORK"
COMPOSE=$SRC/deploy/compose/docker-compose.yml
CHECK=$SRC/tests/deploy/compose_check.py
export DOCKER_HOST=unix://$E2E_WORK/no-docker.sock   # config must not need a daemon

# --- 1. the compose file ----------------------------------------------------------------------
log "docker-compose $(docker-compose version --short 2>/dev/null) config (no daemon)"
mkdir -p file_sd
if GRAFANA_ADMIN_PASSWORD=test-only DISKPROBE_FILE_SD=$E2E_WORK/file_sd \
   docker-compose -f "$COMPOSE" config >resolved.yml 2>config.err; then
  ok "docker-compose config resolves the stack"
else
  fail "docker-compose config: $(cat config.err)"
fi
if env -u GRAFANA_ADMIN_PASSWORD docker-compose -f "$COMPOSE" config >/dev/null 2>nopw.err; then
  fail "docker-compose config accepts a stack without GRAFANA_ADMIN_PASSWORD"
else
  ok "docker-compose config refuses the stack without GRAFANA_ADMIN_PASSWORD ($(grep -o 'set GRAFANA_ADMIN_PASSWORD to the Grafana admin password' nopw.err | head -1))"
fi
check "the stack has the services prometheus and grafana and the volumes prometheus-data and grafana-data" python3 -c '
import sys, yaml; c = yaml.safe_load(open("resolved.yml"))
sys.exit(0 if set(c["services"]) == {"prometheus", "grafana"} and set(c["volumes"]) == {"prometheus-data", "grafana-data"} else 1)'
check "the stack mounts the test's file_sd directory (DISKPROBE_FILE_SD) at /etc/prometheus/file_sd" \
  grep -q "$E2E_WORK/file_sd:/etc/prometheus/file_sd" resolved.yml
if python3 "$CHECK" mounts resolved.yml "$SRC" tree "$E2E_WORK/file_sd"; then
  ok "images pinned, restart policies, volumes declared, bind mounts present"
else
  fail "compose mounts and services"
fi
# The same check on a copy that mounts a directory the repository does not have: must fail.
sed 's|\.\./prometheus/rules:|../prometheus/no-such-rules:|' "$COMPOSE" >broken.yml
GRAFANA_ADMIN_PASSWORD=x docker-compose -f broken.yml --project-directory "$SRC/deploy/compose" config >broken-resolved.yml
if python3 "$CHECK" mounts broken-resolved.yml "$SRC" broken-tree >broken.txt; then
  fail "negative: a mount of a missing directory passed the check"
else
  ok "negative: a mount of a missing directory is caught ($(grep -c '^FAIL' broken.txt) finding)"
fi

# --- 2. the files inside the containers --------------------------------------------------------
P=$E2E_WORK/tree/prometheus
check "prometheus: the configuration, rules and file_sd are where the container looks" test \
  -f "$P/etc/prometheus/prometheus.yml" -a -d "$P/etc/prometheus/rules" -a -d "$P/etc/prometheus/file_sd"
# Absolute container paths -> the tree; nothing else changes.
sed "s|/etc/prometheus/|$P/etc/prometheus/|g" "$P/etc/prometheus/prometheus.yml" >"$P/prometheus-tree.yml"
if promtool check config "$P/prometheus-tree.yml" >promtool.txt 2>&1; then
  ok "promtool check config on the stack's prometheus.yml (container paths): $(grep -c SUCCESS promtool.txt) SUCCESS lines"
  sed 's/^/  /' promtool.txt | grep -i 'rules found\|SUCCESS' || true
else
  fail "promtool check config: $(cat promtool.txt)"
fi
python3 "$CHECK" prometheus "$P/etc/prometheus/prometheus.yml" "$SRC" || fail "the stack's prometheus.yml"
python3 "$CHECK" grafana "$E2E_WORK/tree/grafana" "$SRC" resolved.yml || fail "the Grafana provisioning"

# --- 3. the stack's Prometheus for real --------------------------------------------------------
ROOT=$SRC/tests/fixtures/roots/pi4-usb
printf 'probes:\n  enabled: false\n' >no-probes.yml
start_exporter --config.file=no-probes.yml --path.sysfs="$ROOT/sys" --path.procfs="$ROOT/proc" \
  --path.rootfs="$ROOT" --path.debugfs="$ROOT/debug" --path.bootconfig="$ROOT/boot/firmware/config.txt" \
  --path.kmsg="$ROOT/kmsg"
DEAD=127.0.0.1:$(free_port)
# file_sd is read inside the tree: the copy the mounts made of the test's directory.
cat >"$P/etc/prometheus/file_sd/diskprobe-compose-test.yml" <<YML
- targets: ['$EXPORTER_ADDR']
  labels: {site: compose-test}
- targets: ['$DEAD']
  labels: {site: compose-test-dead}
YML
PROM_PORT=$(free_port)
# The container's 9090 is a free port here: the self-scrape target follows it.
sed -e 's/scrape_interval: 30s/scrape_interval: 2s/' -e 's/evaluation_interval: 30s/evaluation_interval: 2s/' \
  -e 's/scrape_timeout: 10s/scrape_timeout: 2s/' -e "s/localhost:9090/localhost:$PROM_PORT/" \
  "$P/prometheus-tree.yml" >"$P/prometheus-run.yml"
# A rule group with its own interval (the 7-day baselines: 5m) is first evaluated at an offset
# within it: the tree's copies evaluate every 2 s too, so every rule has run within the wait below.
sed -i 's/^\(    interval: \)[0-9]*[smh]$/\12s/' "$P"/etc/prometheus/rules/*.yml
PROM=http://127.0.0.1:$PROM_PORT
prometheus --config.file="$P/prometheus-run.yml" --storage.tsdb.path="$E2E_WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >prometheus.log 2>&1 &
E2E_PIDS+=($!)
api() { curl -sS --max-time 5 "$PROM/api/v1/$1" "${@:2}"; }
# Rules are evaluated on their own clock (2 s here), scrapes on theirs: a result may lag a few seconds.
eventually() { local i; for i in $(seq 1 15); do "$@" && return 0; sleep 1; done; return 1; }
series() {  # series QUERY: true when QUERY returns exactly one series
  query "$1" | jq -e '.data.result | length == 1' >/dev/null
}
health() {  # health ADDRESS: the target's health in job diskprobe, "" when unknown
  api targets 2>/dev/null | jq -r --arg a "$1" \
    '.data.activeTargets[] | select(.labels.job == "diskprobe" and .scrapeUrl == "http://\($a)/metrics") | .health' 2>/dev/null || true
}
good=""; dead=""
for _ in $(seq 1 40); do
  good=$(health "$EXPORTER_ADDR"); dead=$(health "$DEAD")
  [ "$good" = up ] && [ "$dead" = down ] && break
  sleep 1
done
log "targets:"
api targets | jq -r '.data.activeTargets[] | "  \(.labels.job) \(.labels.instance) \(.labels.site // "-") \(.health) \(.lastError)"'
check "the exporter listed in file_sd is up ($good)" test "$good" = up
check "the dead file_sd target is down ($dead), not mistaken for up" test "$dead" = down
check "Prometheus scrapes itself (job prometheus up)" eventually series 'up{job="prometheus"} == 1'
check "the file_sd label reaches the exporter's series (diskprobe_build_info{site=\"compose-test\"})" \
  eventually series 'diskprobe_build_info{site="compose-test"}'

want=$(python3 -c 'import glob, sys, yaml
gs = [g for f in sorted(glob.glob(sys.argv[1] + "/*.rules.yml")) for g in yaml.safe_load(open(f))["groups"]]
print(len(gs), sum(len(g["rules"]) for g in gs))' "$SRC/deploy/prometheus/rules")
got=""
for _ in $(seq 1 20); do
  got=$(api rules | jq -r '"\(.data.groups | length) \([.data.groups[].rules[]] | length)"')
  bad=$(api rules | jq -r '[.data.groups[].rules[] | select(.health != "ok") | .name] | join(", ")')
  unevaluated=$(api rules | jq -r '[.data.groups[].rules[] | select(.lastEvaluation | startswith("0001"))] | length')
  [ "$got" = "$want" ] && [ "$unevaluated" = 0 ] && break
  sleep 1
done
log "rule groups and rules loaded: $got (the rule files hold $want)"
check "every rule group and rule of deploy/prometheus/rules is loaded ($got, want $want)" test "$got" = "$want"
check "every rule has been evaluated, none failing${bad:+ ($bad)}" test "$unevaluated" = 0 -a -z "$bad"
check "a recording rule has output for the exporter (instance_device:diskprobe_mmc_card_required_randread_iops)" \
  eventually series 'instance_device:diskprobe_mmc_card_required_randread_iops{site="compose-test"}'
down_alerts=""
for _ in $(seq 1 10); do
  down_alerts=$(api alerts | jq -r '[.data.alerts[] | select(.labels.alertname == "DiskprobeExporterDown") | "\(.labels.instance)=\(.state)"] | sort | join(" ")')
  [ -n "$down_alerts" ] && break
  sleep 1
done
check "DiskprobeExporterDown is pending for the dead target only ($down_alerts)" test "$down_alerts" = "$DEAD=pending"

[ "$FAILURES" = 0 ] || { echo "$FAILURES failure(s)"; exit 1; }
echo "compose: all checks passed"
