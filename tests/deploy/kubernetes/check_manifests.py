#!/usr/bin/env python3
"""What the schemas cannot say about deploy/kubernetes: the DaemonSet's mounts, flags and
privileges agree with each other, with the ConfigMap, with the Service and with the exporter.

Usage: check_manifests.py <manifest dir> <exporter binary> <source dir>
Prints one line per check ("ok: ..." / "FAIL: ..."); exit 1 when any check fails.
Also importable: container_run_spec() gives tests/deploy/container.sh the DaemonSet's args and
mounts, so the container test runs the image exactly as the cluster would.
"""
import os
import subprocess
import sys
import tempfile

import yaml

from checks import Checks  # this directory (sys.path[0])

PROBE_VOLUME = "probe-directory"
DEBUGFS_VOLUME = "debugfs"
# The gid of `disk` on Debian and Raspberry Pi OS (base-passwd's fixed ids): the raw disks are
# root:disk 0660.
DISK_GID = 6
EXPORTER = "diskprobe-exporter"


def load_all(directory):
    """{kind: [objects]} of every YAML document in the directory tree except kustomizations."""
    objs = {}
    for root, _, files in os.walk(directory):
        for f in sorted(files):
            if not f.endswith((".yaml", ".yml")) or f == "kustomization.yaml":
                continue
            with open(os.path.join(root, f)) as fh:
                for doc in yaml.safe_load_all(fh):
                    if doc:
                        doc["__file__"] = os.path.relpath(os.path.join(root, f), directory)
                        objs.setdefault(doc["kind"], []).append(doc)
    return objs


def exporter_container(ds):
    return next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == EXPORTER)


def flags(container):
    out = {}
    for a in container.get("args", []):
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
            out[k] = v
    return out


def mounts(ds, container):
    """[(mountPath, volume dict, readOnly)] of a container."""
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    return [(m["mountPath"].rstrip("/") or "/", vols[m["name"]], bool(m.get("readOnly")))
            for m in container.get("volumeMounts", [])]


def host_path_of(ds, container, path):
    """The host path a container path resolves to through the hostPath mounts (longest mount
    prefix wins), with its readOnly flag; (None, None) when no hostPath mount covers it."""
    best = None
    for mpath, vol, ro in mounts(ds, container):
        if "hostPath" not in vol:
            continue
        if path == mpath or path.startswith(mpath.rstrip("/") + "/"):
            if best is None or len(mpath) > len(best[0]):
                best = (mpath, vol, ro)
    if best is None:
        return None, None
    mpath, vol, ro = best
    rest = path[len(mpath):]
    return vol["hostPath"]["path"].rstrip("/") + rest, ro


def container_run_spec(directory):
    """(args, [(host path, container path, readOnly)], [tmpfs container paths], user, port) of
    the exporter container, from the manifests."""
    objs = load_all(directory)
    ds = objs["DaemonSet"][0]
    c = exporter_container(ds)
    binds, tmpfs = [], []
    for mpath, vol, ro in mounts(ds, c):
        if "hostPath" in vol:
            binds.append((vol["hostPath"]["path"], mpath, ro))
        elif "emptyDir" in vol:
            tmpfs.append(mpath)
        elif "configMap" in vol:
            binds.append(("configMap:" + vol["configMap"]["name"], mpath, ro))
    sc = c.get("securityContext", {})
    port = next(p["containerPort"] for p in c["ports"] if p["name"] == "metrics")
    return c.get("args", []), binds, tmpfs, (sc.get("runAsUser"), sc.get("runAsGroup")), \
        bool(sc.get("privileged")), port


def config_text(directory):
    cm = load_all(directory)["ConfigMap"][0]
    return cm["data"]["config.yml"]


def key_tree(node, path=""):
    """Set of key paths of a YAML mapping; the per-device override maps (devices: {pattern: ...})
    are user data, so only their own key is compared."""
    out = set()
    if isinstance(node, dict):
        for k, v in node.items():
            p = f"{path}.{k}" if path else str(k)
            out.add(p)
            if not p.endswith("probes.devices"):
                out |= key_tree(v, p)
    return out


def main():
    directory, exporter, source = sys.argv[1], sys.argv[2], sys.argv[3]
    check = Checks()

    objs = load_all(directory)
    ds = objs["DaemonSet"][0]
    pod = ds["spec"]["template"]["spec"]
    c = exporter_container(ds)
    f = flags(c)
    ns = objs["Namespace"][0]["metadata"]["name"]

    # --- namespaces and labels
    for kind, items in objs.items():
        if kind == "Namespace":
            continue
        for o in items:
            check(f"{kind} {o['metadata']['name']} is in namespace {ns}", o["metadata"].get("namespace") == ns,
                  str(o["metadata"].get("namespace")))
    labels = pod_labels = ds["spec"]["template"]["metadata"]["labels"]
    sel = ds["spec"]["selector"]["matchLabels"]
    check("the DaemonSet's selector matches its pod labels", all(labels.get(k) == v for k, v in sel.items()))

    # --- host mounts: read-only except the probe directory (and debugfs for the init container,
    # which gives the exporter's group read on the mmcN/ios files, as the unit's ExecStartPre)
    hostpaths = []
    init_names = {cont["name"] for cont in pod.get("initContainers", [])}
    for cont in pod.get("initContainers", []) + pod["containers"]:
        for mpath, vol, ro in mounts(ds, cont):
            if "hostPath" in vol:
                hostpaths.append((cont["name"], vol, mpath, ro))
    for cname, vol, mpath, ro in hostpaths:
        if vol["name"] == PROBE_VOLUME:
            check(f"{cname}: hostPath {vol['hostPath']['path']} (the probe directory) is the writable mount", not ro)
        elif vol["name"] == DEBUGFS_VOLUME and cname in init_names:
            check(f"{cname} (init): hostPath {vol['hostPath']['path']} at {mpath} writable, for the ios grant", not ro)
        else:
            check(f"{cname}: hostPath {vol['hostPath']['path']} at {mpath} is readOnly", ro)
    writable = [(cn, v["hostPath"]["path"]) for cn, v, _, ro in hostpaths if not ro]
    check(f"the exporter's one writable host path: {sorted(set(p for cn, p in writable if cn not in init_names))}",
          {p for cn, p in writable if cn not in init_names} == {"/var/lib/diskprobe_exporter"})
    check(f"init containers write only the probe directory and debugfs' modes: {sorted(set(p for cn, p in writable if cn in init_names))}",
          {p for cn, p in writable if cn in init_names} <= {"/var/lib/diskprobe_exporter", "/sys/kernel/debug"})
    probe_vol = next(v for v in pod["volumes"] if v["name"] == PROBE_VOLUME)
    check("probe directory hostPath is DirectoryOrCreate", probe_vol["hostPath"].get("type") == "DirectoryOrCreate")

    # --- the --path.* flags point at the right host paths
    def resolves(flag, container_path, expected_host):
        host, ro = host_path_of(ds, c, container_path)
        check(f"{flag}={container_path} -> host {host} (expected {expected_host}), read-only",
              host == expected_host and ro is True)

    resolves("--path.sysfs", f.get("path.sysfs", "/sys"), "/sys")
    resolves("--path.procfs", f.get("path.procfs", "/proc"), "/proc")
    resolves("--path.debugfs", f.get("path.debugfs", "/sys/kernel/debug"), "/sys/kernel/debug")
    rootfs = f.get("path.rootfs", "/")
    resolves("--path.rootfs (boot config)", rootfs.rstrip("/") + "/boot/firmware/config.txt", "/boot/firmware/config.txt")
    resolves("--path.rootfs (boot config, older OS)", rootfs.rstrip("/") + "/boot/config.txt", "/boot/config.txt")
    resolves("--path.kmsg", f.get("path.kmsg", "/dev/kmsg"), "/dev/kmsg")
    resolves("probe device (fixed /dev)", "/dev/mmcblk0", "/dev/mmcblk0")

    # --- the config: in the ConfigMap, valid, same keys as config/default.yml, probe dir mounted
    cm_name = objs["ConfigMap"][0]["metadata"]["name"]
    cfg_path = f.get("config.file", "")
    cm_mount = next(((m, v) for m, v, _ in mounts(ds, c) if "configMap" in v and cfg_path.startswith(m + "/")), None)
    check(f"--config.file={cfg_path} is in the mount of ConfigMap {cm_name}",
          cm_mount is not None and cm_mount[1]["configMap"]["name"] == cm_name)
    key = os.path.basename(cfg_path)
    cm = objs["ConfigMap"][0]
    check(f"ConfigMap has the key {key}", key in cm["data"])
    cfg = yaml.safe_load(cm["data"].get(key, "{}"))
    with open(os.path.join(source, "config/default.yml")) as fh:
        default = yaml.safe_load(fh)
    a, b = key_tree(cfg), key_tree(default)
    check(f"ConfigMap config has the keys of config/default.yml ({len(b)} keys)", a == b,
          f"missing {sorted(b - a)}, extra {sorted(a - b)}")
    state_dir = cfg.get("probes", {}).get("state_directory")
    host, ro = host_path_of(ds, c, state_dir)
    check(f"probes.state_directory {state_dir} is the probe directory at the same host path", host == state_dir and ro is False)
    for d in cfg.get("probes", {}).get("write_directories", []) or []:
        host, ro = host_path_of(ds, c, d)
        check(f"write directory {d} is on a writable hostPath mount", host is not None and ro is False)
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as tmp:
        tmp.write(cm["data"].get(key, ""))
    try:
        r = subprocess.run([exporter, "--config.check", f"--config.file={tmp.name}"], capture_output=True, text=True)
        check(f"diskprobe_exporter --config.check accepts the ConfigMap's config: {r.stdout.strip() or r.stderr.strip()}",
              r.returncode == 0, r.stderr.strip())
    finally:
        os.unlink(tmp.name)

    # --- ports, Service, ServiceMonitor, probes
    port = next(p for p in c["ports"] if p["name"] == "metrics")
    listen = f.get("web.listen-address", ":29100")
    check(f"--web.listen-address={listen} listens on containerPort {port['containerPort']}",
          listen.rsplit(":", 1)[-1] == str(port["containerPort"]))
    svc = objs["Service"][0]
    check("Service is headless (clusterIP: None)", svc["spec"].get("clusterIP") == "None")
    sp = svc["spec"]["ports"][0]
    check(f"Service port {sp['port']} -> targetPort {sp['targetPort']} is the container's metrics port",
          sp["targetPort"] in (port["name"], port["containerPort"]) and sp["port"] == 29100)
    check("Service selector matches the pod labels",
          all(pod_labels.get(k) == v for k, v in svc["spec"]["selector"].items()))
    for sm in objs.get("ServiceMonitor", []):
        check("ServiceMonitor selects the Service",
              all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items()))
        check("ServiceMonitor endpoint port is the Service's port name",
              all(e.get("port") == sp["name"] for e in sm["spec"]["endpoints"]))
    with open(os.path.join(source, "exporter/http/routes.cpp")) as fh:
        routes = fh.read()
    for probe, path in (("livenessProbe", "/-/healthy"), ("readinessProbe", "/-/ready")):
        p = c.get(probe, {}).get("httpGet", {})
        check(f"{probe} GET {p.get('path')} on port {p.get('port')} (route {path} in routes.cpp)",
              p.get("path") == path and f'"{path}"' in routes and p.get("port") in ("metrics", port["containerPort"]))

    # --- privileges
    sc = c.get("securityContext", {})
    check("exporter container: privileged only as a non-root user (runAsNonRoot, runAsUser != 0)",
          not sc.get("privileged") or (sc.get("runAsNonRoot") is True and sc.get("runAsUser", 0) != 0))
    for cont in pod.get("initContainers", []) + pod["containers"]:
        csc = cont.get("securityContext", {})
        check(f"{cont['name']}: readOnlyRootFilesystem", csc.get("readOnlyRootFilesystem") is True)
        check(f"{cont['name']}: memory limit set ({cont.get('resources', {}).get('limits', {}).get('memory')})",
              "memory" in cont.get("resources", {}).get("limits", {}))
        if not csc.get("privileged"):
            check(f"{cont['name']}: not privileged, so drops ALL capabilities and uses seccomp RuntimeDefault",
                  csc.get("capabilities", {}).get("drop") == ["ALL"] and
                  csc.get("seccompProfile", {}).get("type") == "RuntimeDefault" and
                  csc.get("allowPrivilegeEscalation") is False)
    # --- capabilities and groups: the systemd unit's model (CAP_SYSLOG, group disk, the ios grant)
    groups = pod.get("securityContext", {}).get("supplementalGroups", [])
    check(f"pod supplementalGroups {groups} include disk ({DISK_GID}) for the raw disks", DISK_GID in groups)
    for cont in pod.get("initContainers", []) + pod["containers"]:
        added = cont.get("securityContext", {}).get("capabilities", {}).get("add", [])
        check(f"{cont['name']}: capabilities.add {added} has no DAC_READ_SEARCH, DAC_OVERRIDE, SYS_RAWIO or SYS_ADMIN",
              not set(added) & {"DAC_READ_SEARCH", "DAC_OVERRIDE", "SYS_RAWIO", "SYS_ADMIN", "ALL"})
    with open(os.path.join(source, "deploy/container/Containerfile")) as fh:
        containerfile = fh.read()
    setcaps = [l.split("setcap", 1)[1].split(";")[0].split()[0] for l in containerfile.splitlines()
               if "setcap " in l and not l.lstrip().startswith("#")]
    check(f"the image's file capabilities (Containerfile setcap): {setcaps}, CAP_SYSLOG alone as in the unit",
          setcaps == ["cap_syslog+ep"])
    with open(os.path.join(source, "deploy/systemd/diskprobe_exporter.service")) as fh:
        unit_caps = [l.split("=", 1)[1].split() for l in fh if l.startswith("CapabilityBoundingSet=")]
    check(f"the systemd unit's bounding set is the same: {unit_caps}", unit_caps == [["CAP_SYSLOG"]])
    init = pod.get("initContainers", [])
    grant = " ".join(" ".join(cont.get("command", [])) for cont in init)
    check("an init container grants gid 29100 search on debugfs and read on mmc*/ios (the unit's ExecStartPre)",
          "chgrp 29100 /host/debugfs" in grant and "chmod g+x /host/debugfs" in grant and "chmod g+r" in grant
          and "/host/debugfs/mmc*/ios" in grant)
    check("no hostNetwork, hostPID, hostIPC",
          not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC"))
    check("no service account token mounted", pod.get("automountServiceAccountToken") is False)
    check("tolerates every taint", {"operator": "Exists"} in pod.get("tolerations", []))
    archs = [e for t in pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
             for e in t["matchExpressions"] if e["key"] == "kubernetes.io/arch"]
    check(f"nodes: kubernetes.io/arch in {archs[0]['values'] if archs else None}",
          bool(archs) and sorted(archs[0]["values"]) == ["amd64", "arm", "arm64"])

    # --- kustomizations list every manifest, and nothing missing
    listed = set()
    for root, _, files in os.walk(directory):
        if "kustomization.yaml" in files:
            with open(os.path.join(root, "kustomization.yaml")) as fh:
                k = yaml.safe_load(fh)
            for r in k.get("resources", []):
                p = os.path.normpath(os.path.join(root, r))
                check(f"{os.path.relpath(root, directory)}/kustomization.yaml: resource {r} exists", os.path.exists(p))
                if os.path.isfile(p):
                    listed.add(os.path.relpath(p, directory))
            for img in k.get("images", []):
                names = {cont["image"].rsplit(":", 1)[0] for cont in pod.get("initContainers", []) + pod["containers"]}
                check(f"kustomization image {img['name']} is the containers' image", names == {img["name"]})
    files = {o["__file__"] for items in objs.values() for o in items}
    check(f"every manifest is in a kustomization ({len(files)} files)", files <= listed, str(sorted(files - listed)))

    return check.finish("all manifest checks passed")


if __name__ == "__main__":
    sys.exit(main())
