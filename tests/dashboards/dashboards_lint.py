#!/usr/bin/env python3
"""Lint of the Grafana dashboards and the Prometheus rules (ctest: dashboards_lint).

Dashboards (dashboards/*.json):
  - valid JSON, the stable uid and the current schemaVersion, a `datasource` variable of type
    datasource, every query variable from label_values() on the `datasource` variable;
  - every panel but rows has at least one query, a unit and the `${datasource}` datasource (on
    the panel and on each query); annotations use `${datasource}` too;
  - no hard-coded host: no instance/job matcher on a literal, no IP address or host:port;
  - every metric name in every query (panels, variables, annotations) is a family of
    docs/metrics.md (histograms with _bucket/_sum/_count), a recording rule of
    deploy/prometheus/rules, or a series Prometheus makes itself (up, ALERTS...);
  - the committed JSON is what dashboards/generate.py writes.
Rules (deploy/prometheus/rules/*.yml):
  - every metric name in every rule expression passes the same check;
  - every alert has summary and description annotations, a runbook section in
    docs/operations.md, and in a tests/prometheus/rules_*test.yml file a case that fires and one that
    does not.
Usage: dashboards_lint.py <source dir>. Standard library only.
"""
import json
import os
import re
import subprocess
import sys

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../.."))
UIDS = {"fleet-overview.json": "diskprobe-fleet-overview", "node-detail.json": "diskprobe-node-detail"}
SCHEMA_VERSION = 42
PROMETHEUS_OWN = {"up", "ALERTS", "ALERTS_FOR_STATE", "scrape_duration_seconds", "scrape_samples_scraped",
                  "scrape_samples_post_metric_relabeling", "scrape_series_added"}

# PromQL words that look like identifiers but are not metric names.
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "atan2", "inf", "nan", "start", "end"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


def documented_families():
    """Families listed in docs/metrics.md tables: name -> type."""
    fams = {}
    for line in read("docs/metrics.md").splitlines():
        m = re.match(r"^\|\s*`([a-zA-Z_:][a-zA-Z0-9_:]*)`\s*\|\s*([a-z]+)\s*\|", line)
        if m:
            fams[m.group(1)] = m.group(2)
    return fams


def recording_rules():
    names = set()
    rules_dir = os.path.join(SRC, "deploy/prometheus/rules")
    for f in sorted(os.listdir(rules_dir)):
        if f.endswith(".yml"):
            names |= set(re.findall(r"^\s*-\s*record:\s*(\S+)", read("deploy/prometheus/rules/" + f), re.M))
    return names


def metric_names(expr):
    """Metric names used in a PromQL expression. Strings, label matchers, range/subquery windows
    and grouping label lists are removed first; what is left that is an identifier not followed by
    "(" (a function or aggregation) and not a keyword is a metric name."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"'(?:[^'\\]|\\.)*'", "''", s)
    s = re.sub(r"`[^`]*`", "``", s)
    s = re.sub(r"\{[^{}]*\}", " ", s)
    s = re.sub(r"\[[^\[\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", " ", s)
    names = set()
    for m in re.finditer(r"(?<![\w.:$])([a-zA-Z_:][a-zA-Z0-9_:]*)", s):
        name = m.group(1)
        rest = s[m.end():].lstrip()
        if rest.startswith("("):
            continue  # function or aggregation
        if name.lower() in KEYWORDS:
            continue
        if re.match(r"^(by|without)\b", rest) and name in {"sum", "min", "max", "avg", "count", "stddev", "stdvar",
                                                          "topk", "bottomk", "quantile", "count_values", "group"}:
            continue  # "sum by (x) (...)"
        names.add(name)
    # The selector form {__name__="x"} names a metric too.
    names |= set(re.findall(r'__name__\s*=\s*"([^"]+)"', expr))
    return names


def known(name, fams, recorded):
    if name in fams or name in recorded or name in PROMETHEUS_OWN:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and fams.get(name[: -len(suffix)]) == "histogram":
            return True
    return False


def check_names(where, expr, fams, recorded):
    names = metric_names(expr)
    if not names and "vector(" not in expr:
        fail(f"{where}: no metric name found in {expr!r}")
    for n in sorted(names):
        if not known(n, fams, recorded):
            fail(f"{where}: metric {n} is not in docs/metrics.md nor a recording rule")
    return names


HOST = re.compile(r'(instance|job)\s*=~?\s*"(?!\$)[^"]+"|\b\d{1,3}(\.\d{1,3}){3}\b|\b[a-z0-9-]+\.[a-z]{2,}:\d+\b')


def self_test():
    cases = {
        'sum by (le) (increase(diskprobe_probe_latency_seconds_bucket{instance="$instance"}[$__rate_interval]))':
            {"diskprobe_probe_latency_seconds_bucket"},
        'group by (instance, device, board) (label_replace(diskprobe_board_info{x=~"a"}, "board", "$1", "model", "(.*)") '
        '* on (job, instance) group_right (board) group by (job, instance, device) (diskprobe_block_info))':
            {"diskprobe_board_info", "diskprobe_block_info"},
        'quantile by (maker, name) (0.5, a:b:p99_1h{probe="randread"} * on (job) group_left (maker, name) c_info)': {"a:b:p99_1h", "c_info"},
        'rate(x_total[5m]) / (rate(y_total[5m] offset 1h) > bool 0) and z unless on() up == 1e9': {"x_total", "y_total", "z", "up"},
        'topk(10, m) or vector(0)': {"m"},
        'sum without (probe, result) (increase(r{result="skipped_budget"}[1h])) > 0': {"r"},
        '{__name__="diskprobe_build_info"}': {"diskprobe_build_info"},
    }
    for expr, want in cases.items():
        got = metric_names(expr)
        if got != want:
            fail(f"metric name parser: {expr!r} gave {sorted(got)}, want {sorted(want)}")


def lint_dashboard(fname, fams, recorded):
    path = os.path.join(SRC, "dashboards", fname)
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{fname}: not valid JSON: {e}")
        return []
    if d.get("uid") != UIDS[fname]:
        fail(f"{fname}: uid {d.get('uid')!r}, want the stable {UIDS[fname]!r}")
    if d.get("schemaVersion") != SCHEMA_VERSION:
        fail(f"{fname}: schemaVersion {d.get('schemaVersion')}, want {SCHEMA_VERSION}")
    variables = d.get("templating", {}).get("list", [])
    dsv = [v for v in variables if v.get("name") == "datasource"]
    if not dsv or dsv[0].get("type") != "datasource" or dsv[0].get("query") != "prometheus":
        fail(f"{fname}: no Prometheus datasource variable named `datasource`")
    for v in variables:
        if v.get("type") == "query":
            q = v.get("definition", "")
            if v.get("datasource", {}).get("uid") != "${datasource}":
                fail(f"{fname}: variable {v['name']} does not use ${{datasource}}")
            if not q.startswith("label_values("):
                fail(f"{fname}: variable {v['name']} is not label_values(): {q}")
            m = re.match(r"label_values\((.*),\s*\w+\)$", q)
            check_names(f"{fname} variable {v['name']}", m.group(1) if m else q, fams, recorded)
    for a in d.get("annotations", {}).get("list", []):
        if a.get("builtIn"):
            continue
        if a.get("datasource", {}).get("uid") != "${datasource}":
            fail(f"{fname}: annotation {a.get('name')} does not use ${{datasource}}")
        check_names(f"{fname} annotation {a.get('name')}", a.get("expr", ""), fams, recorded)
    panels = []
    ids = set()
    for p in d.get("panels", []):
        if p.get("type") == "row":
            continue
        title = p.get("title", "?")
        where = f"{fname} panel {title!r}"
        if p.get("id") in ids:
            fail(f"{where}: duplicate id {p.get('id')}")
        ids.add(p.get("id"))
        if p.get("datasource", {}).get("uid") != "${datasource}":
            fail(f"{where}: datasource is not ${{datasource}}")
        unit = p.get("fieldConfig", {}).get("defaults", {}).get("unit")
        if not unit:
            fail(f"{where}: no unit")
        targets = p.get("targets", [])
        if not targets:
            fail(f"{where}: no query")
        for t in targets:
            expr = t.get("expr", "")
            if not expr.strip():
                fail(f"{where}: query {t.get('refId')} is empty")
                continue
            if t.get("datasource", {}).get("uid") != "${datasource}":
                fail(f"{where}: query {t.get('refId')} datasource is not ${{datasource}}")
            if HOST.search(expr):
                fail(f"{where}: hard-coded host in {expr!r}")
            check_names(where, expr, fams, recorded)
        panels.append(title)
    return panels


def lint_rules(fams, recorded):
    alerts = {}
    rules_dir = os.path.join(SRC, "deploy/prometheus/rules")
    for f in sorted(os.listdir(rules_dir)):
        if not f.endswith(".yml"):
            continue
        text = read("deploy/prometheus/rules/" + f)
        # Each rule runs from its "- alert:"/"- record:" line to the next one.
        chunks = re.split(r"(?m)^\s*- (?=alert:|record:)", text)[1:]
        for c in chunks:
            c = "\n".join(l for l in c.splitlines() if not l.lstrip().startswith("#"))
            kind, name = re.match(r"(alert|record):\s*(\S+)", c).groups()
            # A block expression ends at the rule's next key, or at the next group ("- name:").
            m = re.search(r"(?ms)^\s*expr:\s*(\|\s*\n(.*?)(?=^\s*(for|labels|annotations):|^\s*- |\Z)|(.*?)$)", c)
            expr = (m.group(2) or m.group(4) or "").strip() if m else ""
            check_names(f"{f} {kind} {name}", expr, fams, recorded)
            if kind == "alert":
                alerts[name] = c
                for ann in ("summary", "description"):
                    if not re.search(rf"^\s*{ann}:\s*\S", c, re.M):
                        fail(f"{f} alert {name}: no {ann} annotation")
    ops = read("docs/operations.md")
    test_dir = os.path.join(SRC, "tests/prometheus")
    tests = "".join(read(f"tests/prometheus/{t}") for t in sorted(os.listdir(test_dir))
                    if t.startswith("rules_") and t.endswith("test.yml"))
    cases = re.findall(r"alertname:\s*(\S+)\s*\n\s*exp_alerts:\s*(\[\])?", tests)
    for name in alerts:
        if not re.search(rf"^#+\s*{name}\b", ops, re.M):
            fail(f"alert {name}: no runbook section (a heading `{name}`) in docs/operations.md")
        fires = any(n == name and not empty for n, empty in cases)
        quiet = any(n == name and empty for n, empty in cases)
        if not fires:
            fail(f"alert {name}: no case in tests/prometheus/rules_*test.yml where it fires")
        if not quiet:
            fail(f"alert {name}: no case in tests/prometheus/rules_*test.yml where it does not fire")
    return sorted(alerts)


def main():
    fams = documented_families()
    if len(fams) < 20:
        fail(f"docs/metrics.md: only {len(fams)} families parsed")
    recorded = recording_rules()
    self_test()
    for fname in UIDS:
        panels = lint_dashboard(fname, fams, recorded)
        print(f"{fname}: {len(panels)} panels checked")
    alerts = lint_rules(fams, recorded)
    print(f"rules: {len(recorded)} recording rules, {len(alerts)} alerts checked: {', '.join(alerts)}")
    gen = subprocess.run([sys.executable, os.path.join(SRC, "dashboards/generate.py"), "--check"])
    if gen.returncode != 0:
        fail("dashboards/*.json differ from what dashboards/generate.py writes")
    if failures:
        print(f"{len(failures)} problem(s)")
        return 1
    print("dashboards and rules lint clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
