#!/usr/bin/env python3
"""Writes the Grafana dashboards of diskprobe_exporter: fleet-overview.json and node-detail.json.

The JSON files are committed; this script is their source. Edit here, run
`dashboards/generate.py`, commit both. `dashboards/generate.py --check` exits 1 when a committed
file differs from what the script writes (the dashboard lint test runs it).

Conventions (dashboards/README.md): datasource variable `datasource`; instance/device variables
from label_values; stable uids; every panel has a unit; no host names in queries. Standard library
only (python3 is a test dependency in scripts/install-deps.sh).
"""
import json
import os
import sys

SCHEMA_VERSION = 42  # what Grafana 12.x writes; newer versions migrate it on load
DS = {"type": "prometheus", "uid": "${datasource}"}
HERE = os.path.dirname(os.path.abspath(__file__))

# Label selectors. The fleet view takes many instances and devices (regex), the node view one.
FLEET = 'job=~"$job", instance=~"$instance", device=~"$device"'
FLEET_I = 'job=~"$job", instance=~"$instance"'
FLEET_J = 'job=~"$job"'
NODE = 'job="$job", instance="$instance", device="$device"'
NODE_I = 'job="$job", instance="$instance"'
NODE_P = 'job="$job", instance="$instance", device="$device", probe=~"$probe"'
# The eMMC boot and RPMB areas are read-only by design: never a read-only failure.
NOT_BOOT = 'device!~"mmcblk[0-9]+(boot[0-9]+|rpmb)"'
MONITORED = "instance_device:diskprobe_block_info:max_1d"
FAMILY_P99 = "family_maker_name_probe:diskprobe_probe_latency_seconds:p99_1h_median"
NODE_URL = "/d/diskprobe-node-detail/diskprobe-node-detail"
FLEET_URL = "/d/diskprobe-fleet-overview/diskprobe-fleet-overview"
# The alert limits of DiskprobeCardSlow (deploy/prometheus/rules/diskprobe-alerts.rules.yml).
SLOW_RANDREAD, SLOW_WRITE = 0.05, 1.0


def severity(matchers):
    """Firing diskprobe alerts as a number: 3 critical, 2 warning, 1 info (the value mapping of
    SEVERITY_MAP names them)."""
    base = f'ALERTS{{alertstate="firing", alertname=~"Diskprobe.+", {FLEET_J}{matchers}'
    return (f'({base}, severity="critical"}} * 3 or {base}, severity="warning"}} * 2 '
            f'or {base}, severity="info"}})')


SEVERITY_MAP = [{"type": "value", "options": {
    "0": {"text": "ok", "color": "green", "index": 0},
    "1": {"text": "info", "color": "blue", "index": 1},
    "2": {"text": "warning", "color": "orange", "index": 2},
    "3": {"text": "critical", "color": "red", "index": 3}}}]

P50_1H = "instance_device_probe:diskprobe_probe_latency_seconds:p50_1h"
P99_1H = "instance_device_probe:diskprobe_probe_latency_seconds:p99_1h"
# Kernel message kinds that mean the storage failed (docs/metrics.md, kmsg collector).
KERNEL_ERRORS = "io_error|timeout|crc_error|card_removed|cqe_recovery|filesystem_error|remount_ro|overclock_reduced|reset|cqe_error"


class Board:
    """Lays panels out left to right, top to bottom, on Grafana's 24-column grid."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.panels.append({"type": "row", "title": title, "collapsed": False, "panels": [],
                            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1

    def add(self, panel, w, h):
        panel["gridPos"] = self._place(w, h)
        self.panels.append(panel)

    def finish(self):
        for i, p in enumerate(self.panels, start=1):
            p["id"] = i
        return self.panels


def target(expr, ref, legend=None, instant=False, fmt=None):
    t = {"datasource": DS, "expr": expr, "refId": ref, "editorMode": "code"}
    if instant:
        t.update({"instant": True, "range": False, "format": fmt or "table"})
    else:
        t.update({"instant": False, "range": True})
        if fmt:
            t["format"] = fmt
    if legend is not None:
        t["legendFormat"] = legend
    return t


def refs():
    return [chr(ord("A") + i) for i in range(26)]


def timeseries(title, desc, unit, queries, stack=False, bars=False, minimum=None, limit=None, log=False):
    """queries: list of (expr, legend). limit: an alert threshold, drawn as a red dashed line."""
    defaults = {"unit": unit, "custom": {"drawStyle": "bars" if bars else "line", "lineWidth": 1,
                                         "fillOpacity": 60 if bars else 10, "showPoints": "never",
                                         "spanNulls": False,
                                         "stacking": {"mode": "normal" if stack else "none", "group": "A"}}}
    if minimum is not None:
        defaults["min"] = minimum
    if log:
        # Latency spans 50 us to 30 s: a log axis keeps a 0.1 ms card and a 500 ms stall readable.
        defaults["custom"]["scaleDistribution"] = {"type": "log", "log": 10}
    if limit is not None:
        defaults["thresholds"] = {"mode": "absolute", "steps": [{"color": "green", "value": None},
                                                                {"color": "red", "value": limit}]}
        defaults["custom"]["thresholdsStyle"] = {"mode": "dashed"}
    return {"type": "timeseries", "title": title, "description": desc, "datasource": DS,
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"legend": {"displayMode": "table", "placement": "bottom", "calcs": ["lastNotNull", "max"]},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": [target(e, r, l) for (e, l), r in zip(queries, refs())]}


def stat(title, desc, unit, queries, mappings=None, thresholds=None, no_value=None):
    steps = thresholds or [{"color": "green", "value": None}]
    defaults = {"unit": unit, "mappings": mappings or [], "thresholds": {"mode": "absolute", "steps": steps}}
    if no_value is not None:
        defaults["noValue"] = no_value
    return {"type": "stat", "title": title, "description": desc, "datasource": DS,
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "background", "graphMode": "none", "textMode": "value_and_name",
                        "orientation": "auto"},
            "targets": [target(e, r, l, instant=True, fmt="time_series") for (e, l), r in zip(queries, refs())]}


def table(title, desc, unit, queries, columns=None, hide=(), sort=None, keep_job=False, cells=None, links=None, widths=None):
    """queries: list of (expr, column title, unit or None). One row per label set: the queries are
    instant, formatted as tables and merged on their common labels."""
    overrides, rename = [], {}
    exclude = {"Time": True, "job": not keep_job}
    for h in hide:
        exclude[h] = True
    for (expr, col, u), r in zip(queries, refs()):
        field = "Value #" + r if len(queries) > 1 else "Value"
        if col is None:
            exclude[field] = True
            continue
        rename[field] = col
        props = [{"id": "unit", "value": u}] if u else []
        props += (cells or {}).get(col, [])
        if props:
            overrides.append({"matcher": {"id": "byName", "options": field}, "properties": props})
    for col, width in (widths or {}).items():
        overrides.append({"matcher": {"id": "byName", "options": col}, "properties": [{"id": "custom.width", "value": width}]})
    for col, link in (links or {}).items():
        overrides.append({"matcher": {"id": "byName", "options": col}, "properties": [{"id": "links", "value": link}]})
    transformations = []
    if len(queries) > 1:
        transformations.append({"id": "merge", "options": {}})
    transformations.append({"id": "organize", "options": {"excludeByName": exclude, "renameByName": rename,
                                                          "indexByName": columns or {}}})
    panel = {"type": "table", "title": title, "description": desc, "datasource": DS,
             "fieldConfig": {"defaults": {"unit": unit, "custom": {"align": "auto", "filterable": True}},
                             "overrides": overrides},
             "options": {"showHeader": True, "cellHeight": "sm"},
             "transformations": transformations,
             "targets": [target(e, r, instant=True) for (e, _, _), r in zip(queries, refs())]}
    if sort:
        panel["options"]["sortBy"] = [{"displayName": sort, "desc": True}]
    return panel


def colour(kind, steps, mappings=None):
    """Cell properties: the cell coloured (kind "color-background" or "color-text") by thresholds."""
    props = [{"id": "custom.cellOptions", "value": {"type": kind}},
             {"id": "thresholds", "value": {"mode": "absolute", "steps": steps}}]
    if mappings:
        props.append({"id": "mappings", "value": mappings})
    return props


def red_from(v, warn=None):
    steps = [{"color": "green", "value": None}]
    if warn is not None:
        steps.append({"color": "orange", "value": warn})
    return steps + [{"color": "red", "value": v}]


def heatmap(title, desc, expr):
    return {"type": "heatmap", "title": title, "description": desc, "datasource": DS,
            "fieldConfig": {"defaults": {"unit": "short", "custom": {"scaleDistribution": {"type": "linear"}}},
                            "overrides": []},
            "options": {"calculate": False, "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges",
                                                                    "steps": 64, "exponent": 0.5, "fill": "dark-orange",
                                                                    "scale": "exponential", "reverse": False},
                        "yAxis": {"axisPlacement": "left", "unit": "s"}, "rowsFrame": {"layout": "le"},
                        "cellValues": {"unit": "short"}, "tooltip": {"show": True, "yHistogram": True},
                        "legend": {"show": True}, "exemplars": {"color": "rgba(255,0,255,0.7)"}},
            "targets": [target(expr, "A", "{{le}}", fmt="heatmap")]}


def query_var(name, label, query, multi, include_all, all_value=None):
    v = {"name": name, "label": label, "type": "query", "datasource": DS,
         "query": {"qryType": 1, "query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
         "definition": query, "refresh": 2, "sort": 1, "multi": multi, "includeAll": include_all,
         "hide": 0, "options": [], "current": {}, "regex": ""}
    if all_value is not None:
        v["allValue"] = all_value
    return v


DATASOURCE_VAR = {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
                  "hide": 0, "refresh": 1, "regex": "", "current": {}, "options": []}


def dashboard(uid, title, desc, panels, variables, annotations=(), links=()):
    return {
        "uid": uid, "title": title, "description": desc, "tags": ["diskprobe", "storage", "raspberry-pi"],
        "editable": True, "graphTooltip": 1, "schemaVersion": SCHEMA_VERSION, "version": 1,
        "time": {"from": "now-6h", "to": "now"}, "timepicker": {}, "timezone": "", "refresh": "1m",
        "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
        "templating": {"list": variables},
        "annotations": {"list": [{"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
                                  "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
                                  "name": "Annotations & Alerts", "type": "dashboard"}] + list(annotations)},
        "links": list(links),
        "panels": panels,
    }


def prom_annotation(name, expr, color, title, text):
    return {"name": name, "datasource": DS, "enable": True, "hide": False, "iconColor": color,
            "expr": expr, "step": "1m", "titleFormat": title, "textFormat": text, "useValueForTime": False,
            "tagKeys": "device,probe,kind"}


# ------------------------------------------------------------------------------------------------
def fleet_overview():
    b = Board()
    b.row("Which card is failing, where")
    b.add(stat("Nodes reporting", "Exporters Prometheus scraped successfully (diskprobe_build_info present).",
               "none", [(f'count(diskprobe_build_info{{{FLEET_I}}})', "nodes")]), 4, 4)
    b.add(stat("Devices monitored", "Disks the exporters monitor (diskprobe_block_info), eMMC boot areas left out.",
               "none", [(f'count(diskprobe_block_info{{{FLEET}, {NOT_BOOT}}})', "devices")]), 4, 4)
    b.add(stat("Critical alerts firing", "Firing diskprobe alerts of severity critical (data at risk now), all nodes.",
               "none", [(f'count(ALERTS{{alertstate="firing", alertname=~"Diskprobe.+", severity="critical", {FLEET_J}}}) or vector(0)', "critical")],
               thresholds=red_from(1)), 4, 4)
    b.add(stat("Devices with failed probe runs (1 h)",
               "Devices on which probe runs ended in an I/O error or a timeout in the last hour (the count of devices; "
               "the health table names them).",
               "none", [(f'count(sum by (job, instance, device) (increase(diskprobe_probe_runs_total{{{FLEET}, result=~"error|timeout"}}[1h])) > 0) or vector(0)', "devices")],
               thresholds=red_from(1)), 4, 4)
    b.add(stat("Read-only cards", "Block devices the kernel marks read-only, eMMC boot/RPMB areas (read-only by design), "
               "loop and optical devices left out: each is a card that stopped taking writes.",
               "none", [(f'count(diskprobe_block_read_only{{{FLEET}, {NOT_BOOT}, device!~"(loop|sr)[0-9]+"}} == 1) or vector(0)', "devices")],
               thresholds=red_from(1)), 4, 4)
    b.add(stat("Nodes with under-voltage (1 h)", "Raspberry Pis whose firmware reported under-voltage in the last hour.",
               "none", [(f'count(max_over_time(diskprobe_board_under_voltage_occurred{{{FLEET_I}}}[1h]) == 1) or vector(0)', "nodes")],
               thresholds=[{"color": "green", "value": None}, {"color": "orange", "value": 1}]), 4, 4)

    # One row per node and device: the worst firing alert first. Node-level alerts (exporter down,
    # under-voltage) count on every device of their node; a device gone in the last day stays listed.
    base = f'{MONITORED}{{{FLEET}, {NOT_BOOT}}}'
    sev = (f'max by (job, instance, device) ('
           f'max by (job, instance, device) ({severity(", device!=" + chr(34) * 2)}) '
           f'or max by (job, instance) ({severity(", device=" + chr(34) * 2)}) * on (job, instance) group_right () {base} '
           f'or 0 * {base})')
    firing = f'ALERTS{{alertstate="firing", alertname=~"Diskprobe.+", {FLEET_I}'
    count_alerts = (f'sum by (job, instance, device) ('
                    f'count by (job, instance, device) ({firing}, device!="", device=~"$device"}}) '
                    f'or count by (job, instance) ({firing}, device=""}}) * on (job, instance) group_right () {base} '
                    f'or 0 * {base})')
    health = [
        (sev, "severity", "none"),
        (count_alerts, "alerts firing", "none"),
        (f'group by (job, instance, device, board) (label_replace(diskprobe_board_info{{{FLEET_I}}}, "board", "$1", "model", "Raspberry Pi (.*)") '
         f'* on (job, instance) group_right (board) {base})', None, None),
        (f'group by (job, instance, device, maker, name) (diskprobe_mmc_card_info{{{FLEET}}})', None, None),
        (f'max by (job, instance, device) ({P99_1H}{{{FLEET}, probe="randread"}})', "randread p99 1h", "s"),
        (f'max by (job, instance, device) ({P99_1H}{{{FLEET}, probe="write"}})', "write p99 1h", "s"),
        (f'max by (job, instance, device) ({P99_1H}{{{FLEET}, probe="fsync"}})', "fsync p99 1h", "s"),
        (f'sum by (job, instance, device) (increase(diskprobe_probe_runs_total{{{FLEET}, result=~"error|timeout"}}[1d]))', "failed runs 24h", "none"),
        (f'sum by (job, instance, device) (increase(diskprobe_kernel_messages_total{{{FLEET}, kind=~"{KERNEL_ERRORS}"}}[1d]) '
         f'and on (job, instance, device) {base})', "kernel errors 24h", "none"),
        (f'max by (job, instance, device) (diskprobe_block_read_only{{{FLEET}, {NOT_BOOT}}})', "read-only", "none"),
    ]
    node_link = [{"title": "Node detail: ${__data.fields.instance} ${__data.fields.device}",
                  "url": NODE_URL + "?${__url_time_range}&var-datasource=${datasource}&var-job=${__data.fields.job}"
                         "&var-instance=${__data.fields.instance}&var-device=${__data.fields.device}"}]
    no_run = [{"type": "special", "options": {"match": "nan", "result": {"text": "no run", "index": 0}}}]
    cells = {
        "severity": colour("color-background", [{"color": "green", "value": None}, {"color": "blue", "value": 1},
                                                {"color": "orange", "value": 2}, {"color": "red", "value": 3}], SEVERITY_MAP),
        "alerts firing": colour("color-text", red_from(1)),
        "randread p99 1h": colour("color-text", red_from(SLOW_RANDREAD, 0.01), no_run),
        "write p99 1h": colour("color-text", red_from(SLOW_WRITE, 0.1), no_run),
        "fsync p99 1h": colour("color-text", red_from(SLOW_WRITE, 0.1), no_run),
        "failed runs 24h": colour("color-text", red_from(1)),
        "kernel errors 24h": colour("color-text", red_from(1)),
        "read-only": colour("color-text", red_from(1), [{"type": "value", "options": {
            "0": {"text": "no", "color": "green", "index": 0}, "1": {"text": "read-only", "color": "red", "index": 1}}}]),
    }
    b.add(table("Health: one row per node and device, worst first",
                "Each monitored device with the worst diskprobe alert firing for it or its node (critical, warning, info, "
                "ok) and how many, the board, the card (CID maker and product), the probes' p99 over the last hour "
                "(orange past the regression floors, red past DiskprobeCardSlow's limits), failed probe runs and kernel "
                "error messages in 24 h, and the read-only state (eMMC boot areas left out). Click a node or device "
                "for its node detail.", "none", health, hide=("Value #C", "Value #D"), sort="severity",
                keep_job=True, cells=cells, links={"instance": node_link, "device": node_link},
                widths={"job": 90, "device": 90, "severity": 90, "alerts firing": 100, "board": 190, "maker": 100,
                        "name": 90, "failed runs 24h": 120, "kernel errors 24h": 130, "read-only": 90},
                columns={"job": 0, "instance": 1, "device": 2, "severity": 3, "alerts firing": 4, "board": 5,
                         "maker": 6, "name": 7}), 24, 11)
    alerts = table("Firing diskprobe alerts",
                   "The diskprobe alerts firing now, worst first (ALERTS of Prometheus' rule evaluation).", "none",
                   [(f'sort_desc({severity("")})', "severity", "none")],
                   hide=("__name__", "alertstate"), keep_job=True,
                   cells={"severity": colour("color-background", [{"color": "blue", "value": None},
                                                                   {"color": "orange", "value": 2},
                                                                   {"color": "red", "value": 3}], SEVERITY_MAP)},
                   widths={"alertname": 250},
                   links={"instance": node_link},
                   columns={"severity": 0, "alertname": 1, "instance": 2, "device": 3})
    b.add(alerts, 11, 9)
    rank = [
        (f'max by (job, family, maker, name) ({FAMILY_P99}{{{FLEET_J}, probe="randread"}})', "randread p99 1h", "s"),
        (f'max by (job, family, maker, name) ({FAMILY_P99}_7d{{{FLEET_J}, probe="randread"}})', "randread p99 7d", "s"),
        (f'max by (job, family, maker, name) ({FAMILY_P99}{{{FLEET_J}, probe="write"}})', "write p99 1h", "s"),
        (f'max by (job, family, maker, name) ({FAMILY_P99}_7d{{{FLEET_J}, probe="write"}})', "write p99 7d", "s"),
        (f'max by (job, family, maker, name) ({FAMILY_P99}{{{FLEET_J}, probe="fsync"}})', "fsync p99 1h", "s"),
        (f'max by (job, family, maker, name) ({FAMILY_P99}_7d{{{FLEET_J}, probe="fsync"}})', "fsync p99 7d", "s"),
        (f'max by (job, family, maker, name) (family_maker_name:diskprobe_mmc_card_info:count{{{FLEET_J}}})', "cards", "none"),
    ]
    ranking = (table("Card models ranked per board family (median of per-card p99)",
                "For each board family (pi3, pi4...: the bus differs) and card model (CID maker + product name), the "
                "median over the fleet's cards of each card's p99 over 1 hour, and the median of that over 7 days "
                "(recording rules family_maker_name_probe:...), and the number of cards. Compare a card with its "
                "model on the same family, not across families. Whole fleet: the instance and device filters do not apply.",
                "s", rank, sort="randread p99 1h",
                columns={"job": 0, "family": 1, "maker": 2, "name": 3}))
    oc = [
        (f'max by (job, instance) (diskprobe_boot_sd_overclock_hertz{{{FLEET_I}}})', "sd_overclock asked", "hertz"),
        (f'max by (job, instance) (diskprobe_boot_sd_overclock_honoured{{{FLEET_I}}}) '
         f'and on (job, instance) diskprobe_boot_sd_overclock_hertz', "driver honours it", "none"),
        (f'max by (job, instance, device) (diskprobe_mmc_ios_actual_clock_hertz{{{FLEET}, device!=""}}) '
         f'and on (job, instance) diskprobe_boot_sd_overclock_hertz', "clock actual", "hertz"),
        (f'max by (job, instance, device) (diskprobe_mmc_ios_actual_clock_hertz{{{FLEET}, device!=""}}) '
         f'/ on (job, instance) group_left () max by (job, instance) (diskprobe_boot_sd_overclock_hertz{{{FLEET_I}}})',
         "actual / asked", "percentunit"),
    ]
    b.add(table("SD overclock set in config.txt: asked vs delivered",
                "Nodes whose config.txt sets sd_overclock: the clock asked, whether the SD host driver applies it at "
                "all (only bcm2835-sdhost, Pi 0-3: 0 on Pi 4/5, where the setting does nothing), the bus clock "
                "delivered and its share of the ask (an integer divider of the core clock, so under 100 % is normal; "
                "a fall later is the driver reducing it after errors).", "none", oc, keep_job=True,
                cells={"driver honours it": colour("color-background", [{"color": "red", "value": None}, {"color": "green", "value": 1}],
                                                   [{"type": "value", "options": {"0": {"text": "no (ignored)", "index": 0},
                                                                                  "1": {"text": "yes", "index": 1}}}]),
                       "actual / asked": colour("color-text", [{"color": "orange", "value": None}, {"color": "green", "value": 0.8}])},
                links={"instance": [{"title": "Node detail: ${__data.fields.instance}",
                                     "url": NODE_URL + "?${__url_time_range}&var-datasource=${datasource}"
                                            "&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}"}]},
                sort="actual / asked"), 13, 9)

    b.row("Card models per board family")
    b.add(ranking, 24, 8)

    b.row("Projected life")
    life = [
        (f'bottomk(10, instance_device:diskprobe_life_left:days{{{FLEET}}})', "days left", "d"),
        (f'max by (job, instance, device) (instance_device:diskprobe_life_used:ratio{{{FLEET}}})', "life used", "percentunit"),
        (f'max by (job, instance, device) (instance_device:diskprobe_life_used:rate1d{{{FLEET}}})', "used per day", "percentunit"),
    ]
    b.add(table("The ten devices with the least life left",
                "Days until the wear the device reports about itself (NVMe Percentage Used, eMMC life time estimate "
                "at its upper bound, SD vendor health over CMD56, SATA/USB SSDs' SMART life attribute) reaches 100 % "
                "at its recent pace (NVMe: the last day of writes; the others: the last 30 days), recording rule instance_device:diskprobe_life_left:days. A device at 0 % wear, or an "
                "eMMC whose 10 % code did not move in 30 days, has no projection and is not listed. "
                "DiskprobeLifeLeftLow fires under 90 days.", "none", life, hide=("Value #B", "Value #C"),
                keep_job=True, sort="days left",
                cells={"days left": colour("color-background", [{"color": "red", "value": None}, {"color": "orange", "value": 90},
                                                                {"color": "green", "value": 365}])},
                links={"instance": [{"title": "Node detail: ${__data.fields.instance}",
                                     "url": NODE_URL + "?${__url_time_range}&var-datasource=${datasource}"
                                            "&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}"}]},
                columns={"job": 0, "instance": 1, "device": 2, "days left": 3}), 24, 7)

    b.row("Latency over time")
    b.add(timeseries("randread p99 (15 min window)",
                     "p99 of the 4 KiB random-read probe per device; dashed red: DiskprobeCardSlow's limit (50 ms).", "s",
                     [(f'instance_device_probe:diskprobe_probe_latency_seconds:p99_15m{{{FLEET}, probe="randread"}}', "{{instance}} {{device}}")],
                     limit=SLOW_RANDREAD, log=True), 12, 8)
    b.add(timeseries("fsync p99 (1 h window)",
                     "p99 of 4 KiB write + fdatasync per device: the commit latency a database sees; dashed red: "
                     "DiskprobeCardSlow's limit (1 s).", "s",
                     [(f'{P99_1H}{{{FLEET}, probe="fsync"}}', "{{instance}} {{device}}")], limit=SLOW_WRITE, log=True), 12, 8)
    b.add(timeseries("Failed probe runs", "Probe runs that ended in an I/O error or timed out, per device and probe; "
                     "series that stay at zero are left out.", "short",
                     [(f'sum by (instance, device, probe) (increase(diskprobe_probe_runs_total{{{FLEET}, result=~"error|timeout"}}[$__rate_interval])) > 0',
                       "{{instance}} {{device}} {{probe}}")], bars=True, stack=True), 12, 8)
    b.add(timeseries("Kernel storage errors", "Kernel log messages that tell a failing card, per monitored device and kind "
                     "(I/O errors, timeouts, CRC errors, card removed, filesystem errors, remounts read-only), per interval; "
                     "series that stay at zero are left out.", "short",
                     [(f'sum by (instance, device, kind) (increase(diskprobe_kernel_messages_total{{{FLEET}, kind=~"{KERNEL_ERRORS}"}}[$__rate_interval]) '
                       f'and on (job, instance, device) {MONITORED}) > 0',
                       "{{instance}} {{device}} {{kind}}")], bars=True, stack=True), 12, 8)
    b.add(timeseries("SD bus clock (actual)", "The clock the SD host delivers. A drop means the driver reduced its (over)clock after errors.", "hertz",
                     [(f'diskprobe_mmc_ios_actual_clock_hertz{{{FLEET}, device!=""}}', "{{instance}} {{host}} {{device}}")]), 12, 8)

    variables = [
        DATASOURCE_VAR,
        query_var("job", "Job", "label_values(diskprobe_build_info, job)", True, True, ".*"),
        query_var("instance", "Instance", 'label_values(diskprobe_build_info{job=~"$job"}, instance)', True, True, ".*"),
        query_var("device", "Device", 'label_values(diskprobe_block_info{job=~"$job", instance=~"$instance"}, device)', True, True, ".*"),
    ]
    links = [{"title": "Node detail", "type": "dashboards", "tags": ["diskprobe"], "asDropdown": False,
              "includeVars": False, "keepTime": True}]
    return dashboard("diskprobe-fleet-overview", "diskprobe: fleet overview",
                     "Which card is failing, where: every node's devices by severity, the firing alerts, card models "
                     "ranked per board family (diskprobe_exporter).",
                     b.finish(), variables, links=links)


def node_detail():
    b = Board()
    b.row("Probe latency")
    b.add(heatmap("Probe latency heatmap",
                  "Operations per latency bucket per interval, from the diskprobe_probe_latency_seconds histogram, for "
                  "the selected probe kinds (randread and write mixed when both are selected: pick one to read it).",
                  f'sum by (le) (increase(diskprobe_probe_latency_seconds_bucket{{{NODE_P}}}[$__rate_interval]))'), 12, 9)
    b.add(timeseries("Latency percentiles (15 min window)", "p50, p90 and p99 per probe kind, from the recording rules.", "s",
                     [(f'instance_device_probe:diskprobe_probe_latency_seconds:p50_15m{{{NODE_P}}}', "{{probe}} p50"),
                      (f'instance_device_probe:diskprobe_probe_latency_seconds:p90_15m{{{NODE_P}}}', "{{probe}} p90"),
                      (f'instance_device_probe:diskprobe_probe_latency_seconds:p99_15m{{{NODE_P}}}', "{{probe}} p99")], log=True), 12, 9)
    b.add(timeseries("Mean operation latency", "Mean latency of the probe's operations per interval.", "s",
                     [(f'rate(diskprobe_probe_latency_seconds_sum{{{NODE_P}}}[$__rate_interval]) / '
                       f'rate(diskprobe_probe_latency_seconds_count{{{NODE_P}}}[$__rate_interval])', "{{probe}}")], log=True), 8, 8)
    b.add(timeseries("Last run: IOPS (queue depth 1)", "Operations of the last successful run ÷ the time spent in them.", "iops",
                     [(f'diskprobe_probe_last_iops{{{NODE_P}}}', "{{probe}}")]), 8, 8)
    b.add(timeseries("Last run: throughput", "Bytes of the last successful run ÷ the time spent in its operations (seqread: the hdparm -t figure).", "Bps",
                     [(f'diskprobe_probe_last_throughput_bytes_per_second{{{NODE_P}}}', "{{probe}}")]), 8, 8)
    b.add(timeseries("Probe runs by result", "Runs per interval: ok, error, timeout, and the runs skipped (busy device, write budget, free space); results that stay at zero are left out.", "short",
                     [(f'sum by (probe, result) (increase(diskprobe_probe_runs_total{{{NODE_P}}}[$__rate_interval])) > 0', "{{probe}} {{result}}")],
                     bars=True, stack=True), 12, 8)
    b.add(timeseries("Failed operations by errno class", "Operations that failed, by errno class (eio, enospc, eacces, erofs, other); classes that stay at zero are left out.", "short",
                     [(f'sum by (probe, reason) (increase(diskprobe_probe_errors_total{{{NODE_P}}}[$__rate_interval])) > 0', "{{probe}} {{reason}}")],
                     bars=True, stack=True), 12, 8)
    b.add(stat("Stalled", "1 while a probe operation has run past op_deadline without returning.", "bool_yes_no",
               [(f'diskprobe_probe_stalled{{{NODE}}}', "stalled")],
               thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1}]), 6, 4)
    b.add(stat("Last run succeeded", "Per probe kind: 1 when its last completed run was ok.", "bool_yes_no",
               [(f'diskprobe_probe_last_success{{{NODE_P}}}', "{{probe}}")],
               thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 1}]), 18, 4)

    b.row("The probe's own cost")
    b.add(timeseries("Probe bytes per day", "What the probes read and wrote on this device over the preceding 24 h (their cost; config/default.yml estimates it).", "bytes",
                     [(f'sum by (probe) (increase(diskprobe_probe_written_bytes_total{{{NODE_P}}}[1d]))', "{{probe}} written"),
                      (f'sum by (probe) (increase(diskprobe_probe_read_bytes_total{{{NODE_P}}}[1d]))', "{{probe}} read")]), 12, 8)
    b.add(timeseries("Write budget left today", "write_budget_per_day minus what the probes wrote this UTC day.", "bytes",
                     [(f'diskprobe_probe_write_budget_remaining_bytes{{{NODE}}}', "budget left")], minimum=0), 12, 8)

    b.row("Block I/O (kernel counters)")
    b.add(timeseries("IOPS", "Completed requests per second (/sys/block/<dev>/stat), reads and writes.", "iops",
                     [(f'rate(diskprobe_block_reads_completed_total{{{NODE}}}[$__rate_interval])', "reads"),
                      (f'rate(diskprobe_block_writes_completed_total{{{NODE}}}[$__rate_interval])', "writes"),
                      (f'rate(diskprobe_block_discards_completed_total{{{NODE}}}[$__rate_interval])', "discards"),
                      (f'rate(diskprobe_block_flushes_completed_total{{{NODE}}}[$__rate_interval])', "flushes")]), 8, 8)
    b.add(timeseries("Throughput", "Bytes read and written per second.", "Bps",
                     [(f'rate(diskprobe_block_read_bytes_total{{{NODE}}}[$__rate_interval])', "read"),
                      (f'rate(diskprobe_block_written_bytes_total{{{NODE}}}[$__rate_interval])', "written")]), 8, 8)
    b.add(timeseries("Utilisation", "Fraction of time the device had I/O in flight (io_ticks). Near 100 % on a card means it is the bottleneck.", "percentunit",
                     [(f'rate(diskprobe_block_io_time_seconds_total{{{NODE}}}[$__rate_interval])', "busy")], minimum=0), 8, 8)
    b.add(timeseries("Await", "Mean time per completed request, queueing included (read/write ticks ÷ completions).", "s",
                     [(f'rate(diskprobe_block_read_time_seconds_total{{{NODE}}}[$__rate_interval]) / '
                       f'(rate(diskprobe_block_reads_completed_total{{{NODE}}}[$__rate_interval]) > 0)', "read"),
                      (f'rate(diskprobe_block_write_time_seconds_total{{{NODE}}}[$__rate_interval]) / '
                       f'(rate(diskprobe_block_writes_completed_total{{{NODE}}}[$__rate_interval]) > 0)', "write")]), 12, 8)
    b.add(timeseries("Queue", "Average number of requests in the queue (time_in_queue rate) and requests in flight at scrape time.", "short",
                     [(f'rate(diskprobe_block_io_time_weighted_seconds_total{{{NODE}}}[$__rate_interval])', "average queue"),
                      (f'diskprobe_block_io_now{{{NODE}}}', "in flight")]), 12, 8)

    b.row("Kernel log and filesystems")
    b.add(timeseries("Kernel log messages by kind", "Kernel messages about this device per interval: io_error, timeout, crc_error, card_removed, overclock_reduced, filesystem_error, remount_ro, cqe_recovery (docs/metrics.md, kmsg collector).", "short",
                     [(f'sum by (kind) (increase(diskprobe_kernel_messages_total{{{NODE}}}[$__rate_interval])) > 0', "{{kind}}")],
                     bars=True, stack=True), 12, 8)
    b.add(table("Filesystems", "The filesystems on this device: read-only state (after errors, or on purpose), ext4 errors recorded in the superblock (kept until fsck) and warnings since mount.", "none",
                [(f'max by (partition, mountpoint, fstype) (diskprobe_filesystem_read_only{{{NODE}}})', "read-only", "bool_yes_no"),
                 (f'max by (partition) (diskprobe_ext4_errors_total{{{NODE}}})', "ext4 errors", "none"),
                 (f'max by (partition) (diskprobe_ext4_warnings_total{{{NODE}}})', "ext4 warnings", "none")]), 12, 8)

    b.row("SD card and bus")
    b.add(timeseries("SD bus clock", "What the mmc core requests (clock), what the host delivers (actual clock) and the sd_overclock config.txt asks for.", "hertz",
                     [(f'diskprobe_mmc_ios_clock_hertz{{{NODE}}}', "requested ({{host}})"),
                      (f'diskprobe_mmc_ios_actual_clock_hertz{{{NODE}}}', "actual ({{host}})"),
                      (f'diskprobe_boot_sd_overclock_hertz{{{NODE_I}}}', "config.txt sd_overclock")]), 12, 8)
    b.add(table("Bus state", "Timing mode, bus width and signalling voltage of the card's host (debugfs ios).", "none",
                [(f'max by (host, timing) (diskprobe_mmc_ios_timing_spec{{{NODE}}})', "timing code", "none"),
                 (f'max by (host) (diskprobe_mmc_ios_bus_width{{{NODE}}})', "bus width", "none"),
                 (f'max by (host) (diskprobe_mmc_ios_signal_voltage_volts{{{NODE}}})', "signal voltage", "volt")]), 12, 8)
    b.add(table("Card identity", "The card's CID, decoded: maker, product name, revision, serial, manufacturing date, SD spec; and its capacity.", "none",
                [(f'diskprobe_mmc_card_info{{{NODE}}}', None, None),
                 (f'max by (device) (diskprobe_mmc_card_capacity_bytes{{{NODE}}})', "capacity", "bytes")],
                hide=("__name__", "instance", "Value #A")), 24, 5)
    b.add(table("Claimed classes", "What the card's SD Status register claims: speed class (C), UHS grade (U), video class (V), application performance class (A), and the CID's counterfeit indicators.", "none",
                [(f'max by (device) (diskprobe_mmc_card_speed_class{{{NODE}}})', "speed class", "none"),
                 (f'max by (device) (diskprobe_mmc_card_uhs_speed_grade{{{NODE}}})', "UHS grade", "none"),
                 (f'max by (device) (diskprobe_mmc_card_video_speed_class{{{NODE}}})', "video class", "none"),
                 (f'max by (device) (diskprobe_mmc_card_app_perf_class{{{NODE}}})', "A class", "none"),
                 (f'max by (device) (diskprobe_mmc_card_cid_suspicions{{{NODE}}})', "CID suspicions", "none")]), 12, 5)
    b.add(table("eMMC wear", "life_time_estimate per area (1 = 0-10 % used ... 10 = 90-100 %, 11 = exceeded) and pre_eol_info (1 normal, 2 warning, 3 urgent).", "none",
                [(f'max by (device, type) (diskprobe_mmc_card_life_time_estimate{{{NODE}}})', "life time estimate", "none"),
                 (f'max by (device) (diskprobe_mmc_card_pre_eol_info{{{NODE}}})', "pre-EOL info", "none")]), 12, 5)
    b.add(table("NVMe health (SMART log)", "Per NVMe disk: Percentage Used (may exceed 100 %), available spare and its "
                "threshold, composite temperature, media errors and error-log entries over the drive's life, and "
                "whether the last SMART log read worked (0: see diskprobe_nvme_smart_read_failures_total; permission = "
                "no CAP_SYS_ADMIN).", "none",
                [(f'max by (device) (diskprobe_nvme_percentage_used_ratio{{{NODE}}})', "used", "percentunit"),
                 (f'max by (device) (diskprobe_nvme_available_spare_ratio{{{NODE}}})', "spare", "percentunit"),
                 (f'max by (device) (diskprobe_nvme_available_spare_threshold_ratio{{{NODE}}})', "spare threshold", "percentunit"),
                 (f'max by (device) (diskprobe_nvme_temperature_celsius{{{NODE}}})', "temperature", "celsius"),
                 (f'max by (device) (diskprobe_nvme_media_errors_total{{{NODE}}})', "media errors", "none"),
                 (f'max by (device) (diskprobe_nvme_error_log_entries_total{{{NODE}}})', "error log entries", "none"),
                 (f'max by (device) (instance_device:diskprobe_life_left:days{{{NODE}}})', "days left", "d"),
                 (f'max by (device) (diskprobe_nvme_smart_up{{{NODE}}})', "read ok", "none")]), 12, 5)
    b.add(timeseries("SATA/USB disk: sectors and wear over time",
                     "Reallocated and pending sectors (a count that grows means a dying disk) and the drive's life left, "
                     "from smartctl every health.smart_interval (30 min by default: the lines are steps).", "short",
                     [(f'max by (device) (diskprobe_smart_reallocated_sectors_total{{{NODE}}})', "reallocated"),
                      (f'max by (device) (diskprobe_smart_pending_sectors{{{NODE}}})', "pending"),
                      (f'max by (device) (diskprobe_smart_offline_uncorrectable_sectors{{{NODE}}})', "offline uncorrectable"),
                      (f'100 * max by (device) (diskprobe_smart_life_remaining_ratio{{{NODE}}})', "life left (%)")],
                     minimum=0), 12, 9)
    b.add(table("SATA/USB disk health (SMART via smartctl)",
                "Per sd disk (SATA, USB bridges): the drive's own verdict (SMART RETURN STATUS), a prefailure attribute "
                "at or below its threshold now (smartctl exit status bit 4), reallocated, pending and offline "
                "uncorrectable sectors (raw attributes 5, 197, 198), the drive's estimate of its life left, temperature, "
                "power-on time and bytes written; and whether the last smartctl run worked (0: see "
                "diskprobe_smart_read_failures_total: permission = no CAP_SYS_RAWIO, unknown_usb_bridge = give "
                "health.smart_device_types). Absent: not an sd disk, or smartctl not installed.", "none",
                [(f'max by (device) (diskprobe_smart_health_passed{{{NODE}}})', "verdict", "none"),
                 (f'max by (device) (diskprobe_smart_status_bit{{{NODE}, kind="prefail_below_threshold"}})', "prefail now", "none"),
                 (f'max by (device) (diskprobe_smart_reallocated_sectors_total{{{NODE}}})', "reallocated", "none"),
                 (f'max by (device) (diskprobe_smart_pending_sectors{{{NODE}}})', "pending", "none"),
                 (f'max by (device) (diskprobe_smart_offline_uncorrectable_sectors{{{NODE}}})', "uncorrectable", "none"),
                 (f'max by (device) (diskprobe_smart_life_remaining_ratio{{{NODE}}})', "life left", "percentunit"),
                 (f'max by (device) (diskprobe_smart_temperature_celsius{{{NODE}}})', "temperature", "celsius"),
                 (f'max by (device) (diskprobe_smart_power_on_seconds_total{{{NODE}}})', "power-on", "s"),
                 (f'max by (device) (diskprobe_smart_written_bytes_total{{{NODE}}})', "written", "bytes"),
                 (f'max by (device) (diskprobe_smart_up{{{NODE}}})', "read ok", "none")],
                cells={"verdict": colour("color-background", [{"color": "red", "value": None}, {"color": "green", "value": 1}],
                                         [{"type": "value", "options": {"0": {"text": "FAILED", "index": 0},
                                                                        "1": {"text": "passed", "index": 1}}}]),
                       "prefail now": colour("color-text", red_from(1)),
                       "reallocated": colour("color-text", red_from(1)),
                       "pending": colour("color-text", red_from(1)),
                       "uncorrectable": colour("color-text", red_from(1)),
                       "life left": colour("color-text", [{"color": "red", "value": None}, {"color": "orange", "value": 0.1},
                                                          {"color": "green", "value": 0.3}]),
                       "read ok": colour("color-text", [{"color": "red", "value": None}, {"color": "green", "value": 1}])}), 24, 5)

    b.row("Board and boot configuration")
    b.add(table("Board", "The board model from the device tree.", "none",
                [(f'diskprobe_board_info{{{NODE_I}}}', None, None)], hide=("__name__", "instance")), 12, 4)
    b.add(table("config.txt: SD settings", "The SD-related settings of config.txt in force for this board (empty: not set), whether this board's SD host honours sd_overclock, and the sections that could not be evaluated.", "none",
                [(f'diskprobe_boot_sd_config_info{{{NODE_I}}}', None, None),
                 (f'max(diskprobe_boot_sd_overclock_honoured{{{NODE_I}}})', "overclock honoured", "bool_yes_no"),
                 (f'max(diskprobe_boot_config_unevaluated_sections{{{NODE_I}}})', "unevaluated sections", "none")],
                hide=("__name__", "instance", "Value #A")), 12, 4)
    b.add(timeseries("Under-voltage and throttling", "Firmware flags: now = at the scrape, occurred = sticky since boot (or the last seconds where the rpi_volt hwmon driver clears them).", "bool_yes_no",
                     [(f'diskprobe_board_under_voltage_now{{{NODE_I}}}', "under-voltage now"),
                      (f'diskprobe_board_under_voltage_occurred{{{NODE_I}}}', "under-voltage occurred"),
                      (f'diskprobe_board_throttled_now{{{NODE_I}}}', "throttled now"),
                      (f'diskprobe_board_arm_frequency_capped_now{{{NODE_I}}}', "ARM frequency capped now"),
                      (f'diskprobe_board_soft_temperature_limit_now{{{NODE_I}}}', "soft temperature limit now")], minimum=0), 12, 8)
    b.add(table("Device", "Block device facts: model, serial, scheduler, size, removable, rotational.", "none",
                [(f'diskprobe_block_info{{{NODE}}}', None, None),
                 (f'max by (device) (diskprobe_block_size_bytes{{{NODE}}})', "size", "bytes"),
                 (f'max by (device) (diskprobe_block_removable{{{NODE}}})', "removable", "bool_yes_no"),
                 (f'max by (device) (diskprobe_block_rotational{{{NODE}}})', "rotational", "bool_yes_no")],
                hide=("__name__", "instance", "Value #A")), 12, 8)

    variables = [
        DATASOURCE_VAR,
        query_var("job", "Job", "label_values(diskprobe_build_info, job)", False, False),
        query_var("instance", "Instance", 'label_values(diskprobe_build_info{job="$job"}, instance)', False, False),
        query_var("device", "Device", 'label_values(diskprobe_block_info{job="$job", instance="$instance"}, device)', False, False),
        query_var("probe", "Probe", 'label_values(diskprobe_probe_runs_total{job="$job", instance="$instance", device="$device"}, probe)',
                  True, True, ".*"),
    ]
    annotations = [
        prom_annotation("Probe failures", f'increase(diskprobe_probe_runs_total{{{NODE}, result=~"error|timeout"}}[2m]) > 0',
                        "red", "{{probe}} probe failed", "{{device}}: {{result}}"),
        prom_annotation("Kernel errors", f'increase(diskprobe_kernel_messages_total{{{NODE}, kind=~"{KERNEL_ERRORS}"}}[2m]) > 0',
                        "dark-red", "kernel: {{kind}}", "{{device}} {{host}}"),
        prom_annotation("Card swapped", f'increase(diskprobe_mmc_card_swaps_total{{{NODE}}}[2m]) > 0',
                        "purple", "card swapped", "{{device}}: another card (new CID)"),
        prom_annotation("Firing alerts", f'ALERTS{{alertstate="firing", {NODE_I}, alertname=~"Diskprobe.*"}}',
                        "orange", "{{alertname}}", "{{device}} {{probe}}"),
    ]
    return dashboard("diskprobe-node-detail", "diskprobe: node detail",
                     "One node, one device: probe latency heatmap and percentiles, kernel I/O counters, SD bus and card facts, board and config.txt (diskprobe_exporter).",
                     b.finish(), variables, annotations=annotations,
                     links=[{"title": "Fleet overview (this job)", "type": "link", "icon": "dashboard", "targetBlank": False,
                             "url": FLEET_URL + "?${__url_time_range}&var-datasource=${datasource}&var-job=${job}",
                             "tooltip": "Back to every node and device of this job"}])


DASHBOARDS = {"fleet-overview.json": fleet_overview, "node-detail.json": node_detail}


def render(fn):
    return json.dumps(fn(), indent=2, ensure_ascii=False) + "\n"


# The provisioned files pick their data source through the `datasource` variable. The copies in
# deploy/grafana.com/ (outside this directory: Grafana's file provider reads a directory and its
# subdirectories, and two files with one uid make it flap between them) are the same dashboards as Grafana's "Export for sharing externally" writes them:
# __inputs asks for a Prometheus data source at import and __requires names what they need;
# Grafana's import replaces ${DS_PROMETHEUS} with the chosen data source, which becomes the
# variable's default.
GRAFANA_MIN = "11.0.0"
PANEL_NAMES = {"stat": "Stat", "table": "Table", "timeseries": "Time series", "heatmap": "Heatmap", "text": "Text"}


def shareable(fn):
    d = fn()
    for v in d["templating"]["list"]:
        if v["name"] == "datasource":
            v["current"] = {"selected": False, "text": "${DS_PROMETHEUS}", "value": "${DS_PROMETHEUS}"}
    kinds = sorted({p["type"] for p in d["panels"] if p["type"] != "row"})
    out = {"__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "description": "Prometheus with the diskprobe recording rules",
                         "type": "datasource", "pluginId": "prometheus", "pluginName": "Prometheus"}],
           "__elements": {},
           "__requires": [{"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_MIN},
                          {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"}]
                         + [{"type": "panel", "id": k, "name": PANEL_NAMES[k], "version": ""} for k in kinds],
           "id": None}
    out.update(d)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"


def main(argv):
    check = "--check" in argv
    stale = []
    outputs = [(name, render(fn)) for name, fn in DASHBOARDS.items()]
    outputs += [(os.path.join("..", "deploy", "grafana.com", name), shareable(fn)) for name, fn in DASHBOARDS.items()]
    for name, text in outputs:
        path = os.path.join(HERE, name)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        stale.append(name)
            except FileNotFoundError:
                stale.append(name)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    if stale:
        print("out of date (run dashboards/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
