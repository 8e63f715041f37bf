#!/usr/bin/env python3
"""Runs every panel query of the Grafana dashboards against a real Prometheus, the way Grafana
would: template variables resolved from their label_values() through the HTTP API (each value of
a single-value variable is tried; a multi-value variable with "All" gets its allValue), Grafana's
built-in intervals substituted, range queries for graphs and instant queries for tables.

Prints one line per query: dashboard, panel, refId, series, the variables of the best run.
A series counts when it has at least one sample that is not NaN. Exits 1 when a panel query
returns no series under any variable values, unless it is named with --no-data=TITLE (every
query of that panel) or --no-data=TITLE#REFID: queries that need hardware the test machine does
not have. Those must still be accepted by Prometheus, and must return nothing, so that the
exemption is dropped once they have data.
Used by tests/e2e/dashboards_e2e.sh.
Usage: dashboard_queries.py PROMETHEUS_URL DASHBOARD.json... [--annotations] [--no-data=TITLE[#REFID]]...
"""
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

BUILTINS = {"__rate_interval": "30s", "__interval": "15s", "__range": "10m", "__range_s": "600"}


def api(base, path, params):
    url = base + path + "?" + urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {body}")
    return body["data"]


def substitute(text, values):
    def rep(m):
        name = m.group(1) or m.group(2)
        if name.isdigit():
            return m.group(0)  # "$1" of label_replace
        if name in BUILTINS:
            return BUILTINS[name]
        if name in values:
            return values[name]
        raise KeyError(f"unknown variable ${name} in {text!r}")
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", rep, text)


def label_values(base, definition, values):
    m = re.match(r"label_values\((.*),\s*(\w+)\)$", substitute(definition, values))
    if not m:
        raise ValueError(f"unsupported variable query {definition!r}")
    now = time.time()
    return sorted(api(base, f"/api/v1/label/{m.group(2)}/values",
                      {"match[]": m.group(1), "start": now - 3600, "end": now}))


def assignments(base, variables):
    """Every combination of variable values Grafana could show, in dashboard order."""
    combos = [{}]
    for v in variables:
        if v.get("type") != "query":
            continue
        nxt = []
        for c in combos:
            if v.get("multi") and v.get("includeAll"):
                nxt.append({**c, v["name"]: v.get("allValue", ".*")})
                continue
            vals = label_values(base, v["definition"], c)
            nxt.extend({**c, v["name"]: x} for x in vals)
        combos = nxt
    return combos


def count_series(base, target, values):
    expr = substitute(target["expr"], values)
    now = time.time()
    if target.get("instant"):
        data = api(base, "/api/v1/query", {"query": expr, "time": now})
        return sum(1 for s in data["result"] if not math.isnan(float(s["value"][1])))
    data = api(base, "/api/v1/query_range", {"query": expr, "start": now - 120, "end": now, "step": 5})
    return sum(1 for s in data["result"] if any(not math.isnan(float(v[1])) for v in s["values"]))


def main(argv):
    base = argv[0].rstrip("/")
    files = [a for a in argv[1:] if not a.startswith("--")]
    annotations = "--annotations" in argv
    no_data = {a.split("=", 1)[1] for a in argv if a.startswith("--no-data=")}
    rows, missing, unexpected = [], [], []
    for path in files:
        d = json.load(open(path, encoding="utf-8"))
        name = d["uid"]
        combos = assignments(base, d["templating"]["list"])
        if not combos:
            missing.append(f"{name}: no values for the variables")
            continue
        items = []
        if annotations:
            items = [(a["name"], "annotation", a) for a in d["annotations"]["list"] if a.get("expr")]
        else:
            for p in d["panels"]:
                for t in p.get("targets", []):
                    items.append((p["title"], t["refId"], t))
        for title, ref, t in items:
            best, best_vars = 0, combos[0]
            for c in combos:
                n = count_series(base, t, c)
                if n > best:
                    best, best_vars = n, c
            shown = " ".join(f"{k}={v}" for k, v in best_vars.items() if k != "probe")
            rows.append((name, title, ref, best, shown))
            if title in no_data or f"{title}#{ref}" in no_data:
                if best != 0:
                    unexpected.append(f"{name} / {title} / {ref}")
            elif best == 0:
                missing.append(f"{name} / {title} / {ref}")
    w = max(len(r[1]) for r in rows) if rows else 10
    print(f"{'dashboard':<26} {'panel':<{w}} {'ref':<10} {'series':>6}  variables")
    for r in rows:
        print(f"{r[0]:<26} {r[1]:<{w}} {r[2]:<10} {r[3]:>6}  {r[4]}")
    total = len(rows)
    print(f"{total - len(missing)} of {total} {'annotation' if annotations else 'panel'} queries returned series")
    if unexpected:
        print("series where --no-data said none (drop the exemption): " + "; ".join(unexpected), file=sys.stderr)
    if missing and not annotations:
        print("no series: " + "; ".join(missing), file=sys.stderr)
    return 1 if unexpected or (missing and not annotations) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
