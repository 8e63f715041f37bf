#!/usr/bin/env python3
"""Static checks of the compose stack for tests/deploy/compose.sh (Python 3 + PyYAML).

  compose_check.py mounts <resolved compose config> <repo dir> <tree dir> [<allowed extra dir>...]
      On `docker-compose config` output: every service has a restart policy and a pinned image
      (a version tag, not latest); every named volume is declared; every bind-mount source
      exists and lies inside the repository (or an allowed extra directory, the test's file_sd).
      Then copies each bind mount's source to <tree dir>/<container path>, prefixed with the
      service name (<tree>/<service>/etc/prometheus/...): a tree with the paths each container
      sees. Prints one line per finding; exit 1 on any.
  compose_check.py grafana <tree dir>/grafana <repo dir> <resolved compose config>
      The Grafana provisioning inside that tree: the dashboard provider's path is a directory
      holding every dashboards/*.json; the default home dashboard exists; the provisioned data
      source has the uid, name, type and timeInterval of dashboards/provisioning/datasources.yml
      and points at the prometheus service's container port; every datasource reference in every
      dashboard is that uid, the built-in Grafana one, or the `${datasource}` variable whose
      plugin type is the provisioned data source's type.
  compose_check.py prometheus <stack prometheus.yml> <repo dir>
      The stack's diskprobe job equals deploy/prometheus/prometheus.yml's, its rule_files glob
      selects exactly the rule files the reference configuration loads, it scrapes itself, and
      the scrape interval equals the data source's timeInterval.
"""
import fnmatch
import glob
import json
import os
import re
import shutil
import sys

import yaml

findings = []


def fail(msg):
    findings.append(msg)
    print("FAIL: " + msg)


def ok(msg):
    print("ok: " + msg)


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def mounts(cfg_path, repo, tree, extra):
    cfg = load(cfg_path)
    roots = [os.path.realpath(repo)] + [os.path.realpath(e) for e in extra]
    declared = set((cfg.get("volumes") or {}).keys())
    n_bind = 0
    for name, svc in sorted(cfg["services"].items()):
        image = svc.get("image", "")
        tag = image.rsplit(":", 1)[1] if ":" in image.split("/")[-1] else ""
        if not re.fullmatch(r"v?\d+\.\d+\.\d+", tag):
            fail(f"{name}: image {image!r} is not pinned to a version")
        else:
            ok(f"{name}: image {image} pinned")
        if svc.get("restart") not in ("always", "unless-stopped", "on-failure"):
            fail(f"{name}: no restart policy")
        for v in svc.get("volumes", []):
            if isinstance(v, str):  # docker-compose 1.29 prints the short syntax
                parts = v.split(":")
                source, target = parts[0], parts[1]
                kind = "bind" if source.startswith("/") else "volume"
            else:  # compose v2 prints the long syntax
                source, target, kind = v.get("source", ""), v["target"], v["type"]
            if kind == "volume":
                if source not in declared:
                    fail(f"{name}: named volume {source} is not declared under volumes:")
                continue
            n_bind += 1
            real = os.path.realpath(source)
            if not os.path.exists(source):
                fail(f"{name}: bind mount source {source} does not exist")
                continue
            if not any(real == r or real.startswith(r + os.sep) for r in roots):
                fail(f"{name}: bind mount source {source} is outside the repository")
                continue
            dest = os.path.join(tree, name, target.lstrip("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, dest, symlinks=False, dirs_exist_ok=True)
            else:
                shutil.copy(source, dest)
    if not findings:
        ok(f"{n_bind} bind mounts, every source present in the repository")


def grafana(gtree, repo, cfg_path):
    cfg = load(cfg_path)
    env = cfg["services"]["grafana"].get("environment", {})
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    prov = os.path.join(gtree, "etc/grafana/provisioning")
    dash_files = glob.glob(os.path.join(prov, "dashboards/*.yml"))
    ds_files = glob.glob(os.path.join(prov, "datasources/*.yml"))
    if not dash_files or not ds_files:
        fail(f"no dashboard provider ({len(dash_files)}) or data source ({len(ds_files)}) provisioning file")
        return
    want = sorted(os.path.basename(f) for f in glob.glob(os.path.join(repo, "dashboards/*.json")))
    for f in dash_files:
        for p in load(f)["providers"]:
            path = p["options"]["path"]
            inside = os.path.join(gtree, path.lstrip("/"))
            got = sorted(os.path.basename(x) for x in glob.glob(os.path.join(inside, "**/*.json"), recursive=True))
            if not os.path.isdir(inside):
                fail(f"dashboard provider {p['name']}: {path} does not exist in the container")
            elif got != want:
                fail(f"dashboard provider {p['name']}: {path} holds {got}, want {want}")
            else:
                ok(f"dashboard provider {p['name']} reads {path}: {', '.join(got)}")
    home = env.get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        if os.path.isfile(os.path.join(gtree, home.lstrip("/"))):
            ok(f"home dashboard {home} exists in the container")
        else:
            fail(f"home dashboard {home} does not exist in the container")
    ref = load(os.path.join(repo, "dashboards/provisioning/datasources.yml"))["datasources"][0]
    sources = [d for f in ds_files for d in load(f)["datasources"]]
    if len(sources) != 1:
        fail(f"{len(sources)} provisioned data sources, want 1")
        return
    ds = sources[0]
    for key in ("name", "uid", "type"):
        if ds.get(key) != ref.get(key):
            fail(f"data source {key} {ds.get(key)!r} differs from dashboards/provisioning ({ref.get(key)!r})")
    if ds.get("jsonData", {}).get("timeInterval") != ref.get("jsonData", {}).get("timeInterval"):
        fail("data source timeInterval differs from dashboards/provisioning")
    m = re.fullmatch(r"http://([a-z0-9_-]+):(\d+)/?", ds.get("url", ""))
    prom = cfg["services"].get(m.group(1)) if m else None
    ports = [str(p.get("target")) if isinstance(p, dict) else str(p).split(":")[-1] for p in (prom or {}).get("ports", [])]
    if not m or prom is None or m.group(2) not in ports or "prometheus" not in prom.get("image", ""):
        fail(f"data source url {ds.get('url')} is not the prometheus service's container port")
    else:
        ok(f"data source {ds['name']} (uid {ds['uid']}) -> service {m.group(1)}, port {m.group(2)}")
    for f in want:
        d = json.load(open(os.path.join(repo, "dashboards", f), encoding="utf-8"))
        variables = {v["name"]: v for v in d.get("templating", {}).get("list", [])}
        refs = []

        def walk(o):
            if isinstance(o, dict):
                if isinstance(o.get("datasource"), (dict, str)):
                    refs.append(o["datasource"])
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(d)
        bad = set()
        for r in refs:
            uid = r.get("uid") if isinstance(r, dict) else r
            typ = r.get("type") if isinstance(r, dict) else None
            if uid in (ds["uid"], "-- Grafana --", "grafana"):
                continue
            var = re.fullmatch(r"\$\{?(\w+)\}?", uid or "")
            if var and variables.get(var.group(1), {}).get("type") == "datasource" \
                    and variables[var.group(1)].get("query") == ds["type"] and typ in (None, ds["type"]):
                continue
            bad.add(json.dumps(r))
        if bad:
            fail(f"{f}: datasource references the provisioned data source cannot satisfy: {sorted(bad)}")
        else:
            ok(f"{f}: {len(refs)} datasource references, all uid {ds['uid']!r}, built-in, or the "
               f"`datasource` variable of type {ds['type']!r}")


def prometheus(stack_path, repo):
    stack = load(stack_path)
    ref = load(os.path.join(repo, "deploy/prometheus/prometheus.yml"))
    job = {j["job_name"]: j for j in stack["scrape_configs"]}
    ref_job = {j["job_name"]: j for j in ref["scrape_configs"]}["diskprobe"]
    if job.get("diskprobe") != ref_job:
        fail("the stack's diskprobe job differs from deploy/prometheus/prometheus.yml's")
    else:
        ok("diskprobe job identical to deploy/prometheus/prometheus.yml's")
    if not any(t == "localhost:9090" for j in job.values() for s in j.get("static_configs", [])
               for t in s.get("targets", [])):
        fail("no self-scrape job (localhost:9090)")
    ref_rules = sorted(os.path.basename(r) for r in ref["rule_files"])
    rules_dir = os.path.join(repo, "deploy/prometheus/rules")
    got = sorted({f for pat in stack["rule_files"] for f in os.listdir(rules_dir)
                  if pat.startswith("/etc/prometheus/rules/") and fnmatch.fnmatch(f, os.path.basename(pat))})
    if got != ref_rules:
        fail(f"rule_files select {got}, the reference configuration loads {ref_rules}")
    else:
        ok(f"rule_files select {', '.join(got)}")
    interval = job["diskprobe"].get("scrape_interval", stack["global"]["scrape_interval"])
    ds = load(os.path.join(repo, "deploy/compose/grafana/datasources.yml"))["datasources"][0]
    if ds["jsonData"]["timeInterval"] != interval:
        fail(f"data source timeInterval {ds['jsonData']['timeInterval']} != scrape interval {interval}")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    if argv[1] == "mounts":
        mounts(argv[2], argv[3], argv[4], argv[5:])
    elif argv[1] == "grafana":
        grafana(argv[2], argv[3], argv[4])
    elif argv[1] == "prometheus":
        prometheus(argv[2], argv[3])
    else:
        raise SystemExit(__doc__)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
