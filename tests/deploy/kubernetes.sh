#!/usr/bin/env bash
# deploy/kubernetes, checked offline (no cluster; kubectl is not in Debian 12, so not needed):
#  1. every manifest validates against the Kubernetes OpenAPI schemas (kubernetes-models) and the
#     prometheus-operator CRD schema (@kubernetes-models/prometheus-operator), with ajv, and has no
#     field the schema does not know (TypeScript's excess property check on the models' generated
#     interfaces): tests/deploy/kubernetes/validate.mjs;
#  2. the validator rejects broken copies of the manifests: a wrong field type, a misspelt field,
#     a value outside an enum, a ServiceMonitor with a wrong type (so a pass in 1 means something);
#  3. tests/deploy/kubernetes/check_manifests.py: every hostPath but the probe directory is
#     read-only, the --path.* flags resolve through the mounts to the right host paths, the
#     ConfigMap has config/default.yml's keys and passes `diskprobe_exporter --config.check`,
#     ports/Service/ServiceMonitor/probes agree, privileges as documented (CAP_SYSLOG as the one
#     file capability of the image, as in the systemd unit; no container adds DAC_READ_SEARCH;
#     the pod in group disk; the init container's debugfs grant), kustomizations complete; and it
#     fails on a copy with a writable /sys mount, a wrong --path.sysfs, DAC_READ_SEARCH added, no
#     disk group and a bad config;
#  4. tests/deploy/kubernetes/check_kustomize.py: both `kubectl apply -k` roots (deploy/kubernetes,
#     deploy/kubernetes/servicemonitor) and base/ obey kustomize's loader rules: every listed
#     resource exists, no kustomization lists a directory that is itself or an ancestor of a
#     kustomization on the way to it (kustomize: "cycle detected"), files stay under their
#     kustomization; it fails on a copy whose overlay lists `..` and on a missing resource. When a
#     kubectl binary happens to be on PATH (not a prerequisite), `kubectl kustomize` of every root
#     must succeed and give exactly the objects of the manifest files, must refuse the `..` copy,
#     and the comparison must notice a namePrefix added to a copy. KUBECTL= forces the no-kubectl run.
# Needs node + npm (the npm registry, once: packages pinned in tests/deploy/kubernetes/package-lock.json
# are installed with `npm ci` into <build>/k8s-validate, reused while the lock file is unchanged),
# python3-yaml and the exporter binary in the build directory. Missing tools: skip (77) outside
# CI, fail under CI=true.
# Usage: kubernetes.sh <build directory>
set -euo pipefail
BUILD=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
K8S=$SRC/deploy/kubernetes
HERE=$SRC/tests/deploy/kubernetes

missing=()
for tool in node npm python3; do command -v "$tool" >/dev/null || missing+=("$tool"); done
python3 -c 'import yaml' 2>/dev/null || missing+=(python3-yaml)
[ -x "$BUILD/diskprobe_exporter" ] || missing+=("$BUILD/diskprobe_exporter")
if [ "${#missing[@]}" -gt 0 ]; then
  [ "${CI:-}" = true ] && { echo "FAIL: missing under CI: ${missing[*]}" >&2; exit 1; }
  echo "SKIP: missing ${missing[*]} (scripts/install-deps.sh test)"; exit 77
fi

log "validator packages (npm ci from the pinned lock file into $BUILD/k8s-validate)"
V=$BUILD/k8s-validate
mkdir -p "$V"
if ! cmp -s "$HERE/package-lock.json" "$V/installed-package-lock.json" || [ ! -d "$V/node_modules" ]; then
  cp "$HERE/package.json" "$HERE/package-lock.json" "$V/"
  (cd "$V" && npm ci --no-audit --no-fund --cache "$BUILD/npm-cache" >"$E2E_WORK/npm.log" 2>&1) ||
    { cat "$E2E_WORK/npm.log" >&2; exit 1; }
  cp "$HERE/package-lock.json" "$V/installed-package-lock.json"
fi
cp "$HERE/validate.mjs" "$V/validate.mjs"
for p in kubernetes-models @kubernetes-models/prometheus-operator typescript yaml; do
  printf '  %s %s\n' "$p" "$(node -p "require('$V/node_modules/$p/package.json').version")"
done

log "1. schemas and unknown fields"
mapfile -t MANIFESTS < <(find "$K8S" -name '*.yaml' ! -name kustomization.yaml | sort)
printf '  %s\n' "${MANIFESTS[@]#$SRC/}"
if node "$V/validate.mjs" "${MANIFESTS[@]}" >"$E2E_WORK/validate.txt" 2>&1; then
  ok "every manifest is valid: $(tail -n1 "$E2E_WORK/validate.txt")"
else
  fail "manifests do not validate"
fi
sed "s|$SRC/||g; s/^/  /" "$E2E_WORK/validate.txt"
check "the ServiceMonitor was validated against the prometheus-operator schema" \
  grep -q '^ok   .*(ServiceMonitor ' "$E2E_WORK/validate.txt"
check "the DaemonSet was validated" grep -q '^ok   .*(DaemonSet ' "$E2E_WORK/validate.txt"

log "2. the validator rejects broken copies"
NEG=$E2E_WORK/negative
mkdir -p "$NEG"
python3 - "$K8S" "$NEG" <<'EOF'
import copy, sys, yaml
src, out = sys.argv[1], sys.argv[2]
ds = yaml.safe_load(open(f"{src}/base/daemonset.yaml"))
def dump(name, obj):
    with open(f"{out}/{name}.yaml", "w") as fh:
        yaml.safe_dump(obj, fh)
c = copy.deepcopy(ds)
c["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "29100"
dump("wrong-type", c)
c = copy.deepcopy(ds)
m = c["spec"]["template"]["spec"]["containers"][0]["volumeMounts"][1]
m["readOnlly"] = m.pop("readOnly")
dump("misspelt-field", c)
c = copy.deepcopy(ds)
c["spec"]["template"]["spec"]["volumes"][1]["hostPath"]["type"] = "Dir"
dump("bad-enum", c)
sm = yaml.safe_load(open(f"{src}/servicemonitor/servicemonitor.yaml"))
sm["spec"]["endpoints"][0]["interval"] = 30
dump("servicemonitor-wrong-type", sm)
EOF
expect_reject() {  # name, text the output must contain
  local out=$E2E_WORK/neg-$1.txt
  if node "$V/validate.mjs" "$NEG/$1.yaml" >"$out" 2>&1; then
    fail "validator accepted $1"
  else
    check "validator rejects $1: $(grep -m1 "$2" "$out" | sed 's/^FAIL [^:]*: //' | cut -c1-150)" grep -q "$2" "$out"
  fi
}
expect_reject wrong-type '/containerPort must be integer'
expect_reject misspelt-field "readOnlly.*does not exist"
expect_reject bad-enum '/hostPath/type must be equal to one of the allowed values'
expect_reject servicemonitor-wrong-type '/endpoints/0/interval must be string'

log "3. mounts, flags, config, ports, privileges"
if python3 "$HERE/check_manifests.py" "$K8S" "$BUILD/diskprobe_exporter" "$SRC" >"$E2E_WORK/checks.txt" 2>&1; then
  ok "manifest checks: $(grep -c '^ok:' "$E2E_WORK/checks.txt") passed"
else
  fail "manifest checks"
fi
sed 's/^/  /' "$E2E_WORK/checks.txt"

log "3b. the checks fail on a broken copy"
BAD=$E2E_WORK/bad
cp -r "$K8S" "$BAD"
python3 - "$BAD" <<'EOF'
import sys, yaml
d = sys.argv[1]
ds = yaml.safe_load(open(f"{d}/base/daemonset.yaml"))
c = ds["spec"]["template"]["spec"]["containers"][0]
for m in c["volumeMounts"]:
    if m["name"] == "sys":
        m["readOnly"] = False
c["args"] = [a.replace("--path.sysfs=/host/sys", "--path.sysfs=/sys") for a in c["args"]]
# The capability the unit dropped, added back, and the disk group gone.
c["securityContext"]["capabilities"] = {"add": ["DAC_READ_SEARCH"]}
ds["spec"]["template"]["spec"]["securityContext"]["supplementalGroups"] = []
yaml.safe_dump(ds, open(f"{d}/base/daemonset.yaml", "w"))
cm = yaml.safe_load(open(f"{d}/base/configmap.yaml"))
cm["data"]["config.yml"] = cm["data"]["config.yml"].replace("probe_file_size: 16MiB", "probe_file_size: lots")
yaml.safe_dump(cm, open(f"{d}/base/configmap.yaml", "w"))
EOF
if python3 "$HERE/check_manifests.py" "$BAD" "$BUILD/diskprobe_exporter" "$SRC" >"$E2E_WORK/bad.txt" 2>&1; then
  fail "the checks passed a DaemonSet with a writable /sys and a bad config"
fi
check "checks catch the writable /sys mount" grep -q 'FAIL: diskprobe-exporter: hostPath /sys at /host/sys is readOnly' "$E2E_WORK/bad.txt"
check "checks catch CAP_DAC_READ_SEARCH added back" grep -q "FAIL: diskprobe-exporter: capabilities.add \\['DAC_READ_SEARCH'\\]" "$E2E_WORK/bad.txt"
check "checks catch the missing disk group" grep -q 'FAIL: pod supplementalGroups \[\] include disk' "$E2E_WORK/bad.txt"
check "checks catch --path.sysfs not pointing at the /sys mount" grep -q 'FAIL: --path.sysfs=/sys' "$E2E_WORK/bad.txt"
check "checks catch a config that --config.check refuses: $(grep -o 'probe_file_size.*' "$E2E_WORK/bad.txt" | head -n1 | cut -c1-100)" \
  grep -q 'FAIL: diskprobe_exporter --config.check' "$E2E_WORK/bad.txt"

log "4. kustomize: both apply -k roots build (loader rules; kubectl kustomize when present)"
# KUBECTL= (set, empty) runs the checks as on a machine without kubectl.
KUBECTL=${KUBECTL-$(command -v kubectl || true)}
echo "  kubectl: ${KUBECTL:-absent, rules checked without it}${KUBECTL:+ ($("$KUBECTL" version --client 2>/dev/null | tr '\n' ' '))}"
if python3 "$HERE/check_kustomize.py" "$K8S" $KUBECTL >"$E2E_WORK/kustomize.txt" 2>&1; then
  ok "kustomize checks: $(grep -c '^ok:' "$E2E_WORK/kustomize.txt") passed"
else
  fail "kustomize checks"
fi
sed 's/^/  /' "$E2E_WORK/kustomize.txt"
check "the rules walked both apply -k roots" grep -q '^ok: servicemonitor: 5 objects' "$E2E_WORK/kustomize.txt"
check "... and the plain root" grep -q '^ok: \.: 4 objects' "$E2E_WORK/kustomize.txt"
if [ -n "$KUBECTL" ]; then
  check "kubectl kustomize built every root like the files" \
    test "$(grep -c '^ok: kubectl kustomize .*every object equal' "$E2E_WORK/kustomize.txt")" -eq 3
fi

log "4b. the kustomize checks fail on an overlay listing its parent, and on a missing resource"
CYC=$E2E_WORK/cycle MISS=$E2E_WORK/missing
cp -r "$K8S" "$CYC" && cp -r "$K8S" "$MISS"
printf 'resources:\n  - ..\n  - servicemonitor.yaml\n' >"$CYC/servicemonitor/kustomization.yaml"
rm "$MISS/base/service.yaml"
python3 "$HERE/check_kustomize.py" "$CYC" $KUBECTL >"$E2E_WORK/cycle.txt" 2>&1 && fail "the checks passed an overlay listing .."
check "the rule catches the overlay listing ..: $(grep -m1 -o 'cycle: .*' "$E2E_WORK/cycle.txt")" \
  grep -q '^FAIL: servicemonitor/kustomization.yaml: resource \.\. .*cycle: candidate root \. contains visited root servicemonitor' "$E2E_WORK/cycle.txt"
if [ -n "$KUBECTL" ]; then
  check "kubectl kustomize agrees: $(grep -m1 -o 'cycle detected.*' "$E2E_WORK/cycle.txt" | sed "s|$E2E_WORK/||g" | cut -c1-110)" \
    grep -q "^FAIL: kubectl kustomize servicemonitor succeeds:.*cycle detected" "$E2E_WORK/cycle.txt"
fi
if [ -n "$KUBECTL" ]; then  # a transformer the file comparison does not model: kubectl's output differs
  PFX=$E2E_WORK/prefix
  cp -r "$K8S" "$PFX" && printf 'namePrefix: x-\n' >>"$PFX/base/kustomization.yaml"
  python3 "$HERE/check_kustomize.py" "$PFX" "$KUBECTL" >"$E2E_WORK/prefix.txt" 2>&1 && fail "the comparison passed a namePrefix"
  check "the comparison with kubectl kustomize notices a namePrefix: $(grep -m1 -o "only built.*" "$E2E_WORK/prefix.txt" | cut -c1-90)" \
    grep -q '^FAIL: kubectl kustomize \.: the same 4 objects as the files' "$E2E_WORK/prefix.txt"
fi
python3 "$HERE/check_kustomize.py" "$MISS" >"$E2E_WORK/missing.txt" 2>&1 && fail "the checks passed a missing resource"
check "the rule catches a missing resource" grep -q '^FAIL: base/kustomization.yaml: resource service.yaml exists' "$E2E_WORK/missing.txt"

if [ "$FAILURES" -gt 0 ]; then echo "$FAILURES check(s) failed" >&2; exit 1; fi
echo "all kubernetes manifest checks passed"
