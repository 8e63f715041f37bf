#!/usr/bin/env python3
"""Series count of one node for tests/deploy/fleet_scale.sh (standard library + PyYAML).

  fleet_scale.py count <node.prom> <probes.prom> <card dev> <usb dev> <scrape interval s> <out>
      Prints the table per metric family (node collectors from the fixture root, plus the probe
      series of the real card-like and USB-like devices), the total, samples/s for 10, 100 and
      1,000 nodes, and writes the node's full series list (fixture + probes renamed to mmcblk0
      and sda) to <out>, one JSON [name, labels] a line. Exit 1 when the total is over 500.
  fleet_scale.py federation <series file> <federation.yml> <src dir>
      Evaluates the match[] selectors of the federation example on the node's series and its
      recording rules' output: every recording rule and every family the fleet-overview dashboard
      uses must be selected; prints the series per node that cross. Exit 1 on a miss.
  fleet_scale.py relabel <series file> <remote-write.yml> <src dir>
      Applies the write_relabel_configs of the remote_write example to the node's series (an
      emulation of Prometheus relabelling: keep, drop, replace, labeldrop with anchored regexes)
      and checks that every metric name the dashboards, the alert rules and the recording rules
      use still has a series, and that the histogram buckets the alert thresholds sit on survive.
"""
import json
import os
import re
import sys

import yaml

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(path):
    """Exposition text -> (list of (name, labels dict), {series name: family}, {family: type})."""
    types, series = {}, []
    for line in open(path, encoding="utf-8"):
        if line.startswith("# TYPE "):
            _, _, fam, typ = line.split()[:4]
            types[fam] = typ
            continue
        if not line.strip() or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            raise SystemExit("unparsable line: " + line)
        series.append((m.group(1), dict(LABEL.findall(m.group(3) or ""))))
    return series, types


def family_of(name, types):
    if name in types:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return name[: -len(suffix)]
    return name


def count(node_prom, probes_prom, card, usb, interval):
    node, node_types = parse(node_prom)
    probes, probe_types = parse(probes_prom)
    types = {**node_types, **probe_types}
    rows = {}
    full = []
    for name, labels in node:
        fam = family_of(name, types)
        rows.setdefault(fam, [0, 0, 0])[0] += 1
        full.append((name, labels))
    # The probe series of the two real devices, renamed to what they stand for on the Pi.
    rename = {card: "mmcblk0", usb: "sda"}
    for name, labels in probes:
        if not name.startswith("diskprobe_probe_") or labels.get("device") not in rename:
            continue
        fam = family_of(name, types)
        col = 1 if labels["device"] == card else 2
        rows.setdefault(fam, [0, 0, 0])[col] += 1
        labels = dict(labels, device=rename[labels["device"]])
        if "directory" in labels:
            labels["directory"] = "/var/lib/diskprobe_exporter"
        full.append((name, labels))
    total = sum(sum(r) for r in rows.values())
    print("| family | type | node (fixture) | card probes | USB probes | series |")
    print("|---|---|---:|---:|---:|---:|")
    for fam in sorted(rows, key=lambda f: (-sum(rows[f]), f)):
        n, c, u = rows[fam]
        print(f"| `{fam}` | {types.get(fam, '?')} | {n} | {c} | {u} | {n + c + u} |")
    cols = [sum(r[i] for r in rows.values()) for i in range(3)]
    print(f"| **total** ({len(rows)} families) | | {cols[0]} | {cols[1]} | {cols[2]} | **{total}** |")
    print()
    print(f"scrape interval {interval:g} s: {total} series = {total / interval:.1f} samples/s per node")
    for pis in (10, 100, 1000):
        print(f"  {pis:>5} Pis: {pis * total:>7} series, {pis * total / interval:>9.1f} samples/s")
    print(f"TOTAL={total}")
    return total, full


def matches(regex, value):
    return re.fullmatch(regex, value) is not None


def relabel(rules, labels):
    """One series through write_relabel_configs; None when dropped."""
    labels = dict(labels)
    for r in rules:
        action = r.get("action", "replace")
        regex = r.get("regex", "(.*)")
        if action == "labeldrop":
            labels = {k: v for k, v in labels.items() if not matches(regex, k)}
            continue
        value = r.get("separator", ";").join(labels.get(s, "") for s in r.get("source_labels", []))
        if action == "keep":
            if not matches(regex, value):
                return None
        elif action == "drop":
            if matches(regex, value):
                return None
        elif action == "replace":
            m = re.fullmatch(regex, value)
            if m:
                repl = re.sub(r"\$\{?(\w+)\}?", lambda g: m.group(int(g.group(1))) or "" if g.group(1).isdigit()
                              else m.group(g.group(1)) or "", r.get("replacement", "$1"))
                if repl == "":
                    labels.pop(r["target_label"], None)
                else:
                    labels[r["target_label"]] = repl
        else:
            raise SystemExit(f"relabel action {action} not emulated")
    return labels


def dashboard_exprs(src, names):
    """The PromQL of every panel and variable query of the dashboards named (dashboards/<name>)."""
    exprs = []

    def walk(o):
        if isinstance(o, dict):
            if o.get("type") == "datasource":  # the datasource variable: its query is a plugin id
                return
            for k, v in o.items():
                if k in ("expr", "query") and isinstance(v, str):
                    exprs.append(v)
                elif k == "query" and isinstance(v, dict) and isinstance(v.get("query"), str):
                    exprs.append(v["query"])
                else:
                    walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    for name in names:
        walk(json.load(open(os.path.join(src, "dashboards", name), encoding="utf-8")))
    return exprs


def used_names(src):
    """Metric names of every dashboard query and every rule expression (dashboards_lint.py's parser)."""
    sys.path.insert(0, os.path.join(src, "tests/dashboards"))
    import dashboards_lint  # noqa: E402
    exprs = dashboard_exprs(src, sorted(f for f in os.listdir(os.path.join(src, "dashboards")) if f.endswith(".json")))
    dash = set()
    for e in exprs:
        e = re.sub(r"^\s*label_values\((.*?)(,\s*\w+)?\)\s*$", r"\1", e)
        dash |= dashboards_lint.metric_names(e)
    rules = set()
    thresholds = set()
    rdir = os.path.join(src, "deploy/prometheus/rules")
    for f in sorted(os.listdir(rdir)):
        for g in yaml.safe_load(open(os.path.join(rdir, f), encoding="utf-8"))["groups"]:
            for r in g["rules"]:
                rules |= dashboards_lint.metric_names(r["expr"])
                if "alert" in r and "diskprobe_probe_latency_seconds" in r["expr"]:
                    # "...:p99_1h{probe="randread"} > 0.05": the latency limits of the alerts.
                    thresholds |= {float(x) for x in re.findall(r">\s*([0-9.]+)\b", r["expr"])}
    return dash, rules, thresholds


def relabel_check(series_file, rw_file, src):
    node = [json.loads(line) for line in open(series_file, encoding="utf-8")]
    cfg = yaml.safe_load(open(rw_file, encoding="utf-8"))
    rw = cfg["remote_write"]
    if len(rw) != 1:
        raise SystemExit("expected one remote_write entry")
    rules = rw[0].get("write_relabel_configs", [])
    recorded = set()
    rdir = os.path.join(src, "deploy/prometheus/rules")
    for f in sorted(os.listdir(rdir)):
        for g in yaml.safe_load(open(os.path.join(rdir, f), encoding="utf-8"))["groups"]:
            recorded |= {r["record"] for r in g["rules"] if "record" in r}
    # What the edge Prometheus sends: the node's series with the target labels, the recording rules'
    # output for it (the names are enough here), up and ALERTS, and its own self-scrape.
    target = {"job": "diskprobe", "instance": "pi-kitchen"}
    sent = [(n, dict(l, **target)) for n, l in node]
    sent += [(r, dict(target, device="mmcblk0", probe="randread")) for r in sorted(recorded)]
    sent += [("up", dict(target)), ("ALERTS", dict(target, alertname="DiskprobeCardSlow", alertstate="firing")),
             ("up", {"job": "prometheus", "instance": "localhost:9090"}),
             ("prometheus_tsdb_head_series", {"job": "prometheus", "instance": "localhost:9090"})]
    kept = []
    for name, labels in sent:
        out = relabel(rules, dict(labels, __name__=name))
        if out is not None:
            kept.append(out)
    failures = 0
    kept_names = {l["__name__"] for l in kept}
    sent_names = {n for n, _ in sent}
    node_kept = [l for l in kept if l.get("job") == "diskprobe" and l["__name__"].startswith("diskprobe_")]
    print(f"remote_write relabelling: {len(node)} exporter series of a node -> {len(node_kept)} sent "
          f"({len(node) - len(node_kept)} buckets dropped)")
    if any(l["__name__"].startswith("prometheus_") for l in kept):
        print("FAIL: the edge Prometheus' own series are sent")
        failures += 1
    for l in kept:
        if any(k.startswith("__") and k != "__name__" for k in l):
            print(f"FAIL: a temporary label is sent: {l}")
            failures += 1
            break
    dash, rule_names, thresholds = used_names(src)
    for what, names in (("dashboards", dash), ("rules", rule_names)):
        # ALERTS_FOR_STATE and scrape_* are not simulated in the sent set: not judged here.
        # Judged: names this node has series of before the relabelling (the eMMC wear families
        # are absent on an SD card). ALERTS_FOR_STATE and scrape_* are not simulated.
        missing = sorted(n for n in names if n in sent_names and n not in kept_names)
        absent = sorted(n for n in names if n not in sent_names)
        if absent:
            print(f"  ({what}: no series on this node before the relabelling either: {', '.join(absent)})")
        if missing:
            print(f"FAIL: the relabelling drops every series of {what} metric(s): {', '.join(missing)}")
            failures += 1
        else:
            print(f"ok: every metric the {what} use still has series after the relabelling ({len(names)} names)")
    les = {float(l["le"]) for l in kept if l["__name__"] == "diskprobe_probe_latency_seconds_bucket"}
    all_les = {float(l["le"]) for _, l in node if "le" in l}
    print(f"buckets kept: {len(les)} of {len(all_les)}: {', '.join(sorted(('%g' % x) for x in les))}")
    lost = sorted(t for t in thresholds if t not in les)
    if lost:
        print(f"FAIL: alert latency thresholds without their bucket: {lost}")
        failures += 1
    else:
        print(f"ok: the alert latency thresholds {sorted(thresholds)} s are bucket bounds that stay")
    if float("inf") not in les:
        print("FAIL: +Inf bucket dropped (histogram_quantile needs it)")
        failures += 1
    return failures


SELECTOR = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)?(?:\{(.*)\})?$')
MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')


def selector(text):
    """A series selector (name{label op "value", ...}) -> predicate on a labels dict with __name__."""
    m = SELECTOR.match(text.strip())
    if not m:
        raise SystemExit(f"selector not understood: {text}")
    matchers = [("__name__", "=", m.group(1))] if m.group(1) else []
    body = m.group(2) or ""
    pos = 0
    while pos < len(body):
        mm = MATCHER.match(body, pos)
        if not mm:
            raise SystemExit(f"matcher not understood: {body[pos:]}")
        matchers.append((mm.group(1), mm.group(2), mm.group(3).replace('\\"', '"')))
        pos = mm.end()

    def pred(labels):
        for name, op, value in matchers:
            v = labels.get(name, "")
            if op == "=" and v != value or op == "!=" and v == value:
                return False
            if op == "=~" and not re.fullmatch(value, v) or op == "!~" and re.fullmatch(value, v):
                return False
        return True
    return pred


def rule_outputs(node, src):
    """The recording rules' series for this node: one per (device, probe) for the instance_device_probe
    rules (only the probe kinds a rule selects), one per SD card for the instance_device ones, one
    per disk for the one on diskprobe_block_info, one per device reporting its wear for the life
    projection (their expressions' grouping)."""
    pairs = {(l["device"], l["probe"]) for n, l in node if n == "diskprobe_probe_runs_total"}
    sd = {l["device"] for n, l in node if n == "diskprobe_mmc_card_info" and l.get("type") == "SD"}
    disks = {l["device"] for n, l in node if n == "diskprobe_block_info"}
    # The life projection reads the wear a device reports about itself (NVMe, eMMC): none for SD cards.
    wear = {l["device"] for n, l in node
            if n in ("diskprobe_nvme_percentage_used_ratio", "diskprobe_mmc_card_life_time_estimate")}
    out = []
    rdir = os.path.join(src, "deploy/prometheus/rules")
    for f in sorted(os.listdir(rdir)):
        for g in yaml.safe_load(open(os.path.join(rdir, f), encoding="utf-8"))["groups"]:
            for r in g["rules"]:
                if "record" not in r:
                    continue
                level = r["record"].split(":")[0]
                if level.startswith("family_"):
                    continue  # fleet-level (diskprobe-fleet group): no series per node, made centrally
                only = re.search(r'probe=~"([a-z|]+)"', r["expr"])
                kinds = set(only.group(1).split("|")) if only else None
                if level == "instance_device_probe":
                    out += [(r["record"], {"device": d, "probe": p}) for d, p in sorted(pairs) if kinds is None or p in kinds]
                elif level == "instance_device" and r["record"].startswith("instance_device:diskprobe_life_"):
                    out += [(r["record"], {"device": d}) for d in sorted(wear)]
                elif level == "instance_device" and "diskprobe_block_info" in r["expr"]:
                    out += [(r["record"], {"device": d}) for d in sorted(disks)]
                elif level == "instance_device":
                    out += [(r["record"], {"device": d}) for d in sorted(sd)]
                else:
                    raise SystemExit(f"recording rule level {level} not known here")
    return out


def federation_check(series_file, fed_file, src):
    node = [tuple(json.loads(line)) for line in open(series_file, encoding="utf-8")]
    job = yaml.safe_load(open(fed_file, encoding="utf-8"))["scrape_configs"][0]
    preds = [selector(t) for t in job["params"]["match[]"]]
    target = {"job": "diskprobe", "instance": "pi-kitchen"}
    rules = rule_outputs(node, src)
    every = [dict(l, __name__=n, **target) for n, l in node + rules] + [dict(target, __name__="up")]
    picked = [l for l in every if any(p(l) for p in preds)]
    n_raw = sum(1 for l in picked if l["__name__"].startswith("diskprobe_"))
    n_rules = sum(1 for l in picked if ":" in l["__name__"])
    print(f"federation: {len(picked)} of {len(every)} series of a node cross ({n_raw} exporter series, "
          f"{n_rules} recording rule series, up)")
    print(f"FEDERATED={len(picked)}")
    print(f"RULE_SERIES={len(rules)}")
    failures = 0
    picked_names = {l["__name__"] for l in picked}
    missing_rules = sorted({n for n, _ in rules} - picked_names)
    if missing_rules:
        print(f"FAIL: recording rules not federated: {missing_rules}")
        failures += 1
    sys.path.insert(0, os.path.join(src, "tests/dashboards"))
    import dashboards_lint  # noqa: E402
    exprs = dashboard_exprs(src, ["fleet-overview.json"])
    used = set()
    for e in exprs:
        used |= dashboards_lint.metric_names(re.sub(r"^\s*label_values\((.*?)(,\s*\w+)?\)\s*$", r"\1", e))
    # Judged by name: a family is federated when a selector takes its series with any labels.
    missing = sorted(n for n in used if not any(p(dict(target, __name__=n)) for p in preds))
    if missing:
        print(f"FAIL: the fleet-overview dashboard reads families federation does not bring: {missing}")
        failures += 1
    else:
        print(f"ok: every family the fleet-overview dashboard reads is federated ({len(used)})")
    return failures


def main(argv):
    if argv[1] == "count":
        total, full = count(argv[2], argv[3], argv[4], argv[5], float(argv[6]))
        with open(argv[7], "w", encoding="utf-8") as f:
            for name, labels in full:
                f.write(json.dumps([name, labels]) + "\n")
        return 0 if total <= 500 else 1
    if argv[1] == "federation":
        return 1 if federation_check(argv[2], argv[3], argv[4]) else 0
    if argv[1] == "relabel":
        return 1 if relabel_check(argv[2], argv[3], argv[4]) else 0
    raise SystemExit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
