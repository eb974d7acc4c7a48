"""docs/metrics.md lists every metric in the code and every name the rules and dashboards use."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.test_deploy.common import DASHBOARDS, METRICS_DOC, ROOT, RULES

CODE_DIRS = ("ingest", "streams", "collectors", "auditstream", "schemas")
METRIC_CLASSES = {"Counter": "counter", "Gauge": "gauge", "Histogram": "histogram", "Summary": "summary"}
HISTOGRAM_SUFFIXES = ("_bucket", "_count", "_sum")


@dataclass(frozen=True)
class Metric:
    name: str
    type: str
    labels: tuple[str, ...]


def exposed_name(name: str, kind: str) -> str:
    """The name Prometheus sees: prometheus_client appends _total to every counter."""
    if kind == "counter":
        return name.removesuffix("_total") + "_total"
    return name


def code_metrics() -> dict[str, tuple[Metric, Path]]:
    found: dict[str, tuple[Metric, Path]] = {}
    for folder in CODE_DIRS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                cls = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if cls not in METRIC_CLASSES or not node.args:
                    continue
                first = node.args[0]
                if not (isinstance(first, ast.Constant) and str(first.value).startswith("auditstream_")):
                    continue
                labels_node = node.args[2] if len(node.args) > 2 else None
                for kw in node.keywords:
                    if kw.arg == "labelnames":
                        labels_node = kw.value
                labels: tuple[str, ...] = ()
                if isinstance(labels_node, ast.List | ast.Tuple):
                    labels = tuple(str(e.value) for e in labels_node.elts if isinstance(e, ast.Constant))
                kind = METRIC_CLASSES[cls]
                metric = Metric(exposed_name(str(first.value), kind), kind, labels)
                found[metric.name] = (metric, path.relative_to(ROOT))
    return found


def documented() -> tuple[dict[str, Metric], set[str]]:
    """(every metric row of docs/metrics.md, the names listed under 'Planned')."""
    rows: dict[str, Metric] = {}
    planned: set[str] = set()
    section = ""
    for line in METRICS_DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line
        match = re.match(r"\| `(auditstream_\w+)` \| (\w+) \| ([^|]*) \|", line)
        if match:
            name, kind, labels = match.groups()
            rows[name] = Metric(name, kind, tuple(re.findall(r"`(\w+)`", labels)))
            if section.startswith("## Planned"):
                planned.add(name)
    return rows, planned


def used_names(text: str) -> set[str]:
    names = set()
    for name in re.findall(r"(?<![:\w])auditstream_\w+", text):
        for suffix in HISTOGRAM_SUFFIXES:
            if name.endswith(suffix) and not name.endswith("_total"):
                name = name.removesuffix(suffix)
        names.add(name)
    return names


def promql_in_dashboards() -> str:
    exprs = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        stack = list(json.loads(path.read_text())["panels"])
        while stack:
            panel = stack.pop()
            stack.extend(panel.get("panels", []))
            exprs.extend(t["expr"] for t in panel.get("targets", []) if "expr" in t)
    return "\n".join(exprs)


def test_the_code_defines_metrics_at_all() -> None:
    metrics = code_metrics()
    assert "auditstream_sink_rows_total" in metrics
    assert "auditstream_ingest_requests_total" in metrics  # defined as auditstream_ingest_requests


def test_every_metric_in_the_code_is_documented_with_its_type_and_labels() -> None:
    rows, planned = documented()
    for name, (metric, path) in code_metrics().items():
        assert name in rows, f"{name} ({path}) is not in docs/metrics.md"
        assert rows[name] == metric, f"docs/metrics.md says {rows[name]}, {path} defines {metric}"
        assert name not in planned, f"{name} is in the code now: move it out of 'Planned' in docs/metrics.md"


def test_every_documented_metric_exists_or_is_planned() -> None:
    rows, planned = documented()
    in_code = set(code_metrics())
    assert set(rows) - in_code - planned == set(), "documented but neither in the code nor planned"


def test_rules_and_dashboards_use_only_documented_metrics() -> None:
    rows, _ = documented()
    used = used_names(RULES.read_text()) | used_names(promql_in_dashboards())
    assert {"auditstream_units_total", "auditstream_consumer_lag_messages"} <= used
    assert used - set(rows) == set(), f"undocumented metrics used: {used - set(rows)}"


def test_label_matchers_in_rules_and_dashboards_use_documented_labels() -> None:
    rows, _ = documented()
    text = RULES.read_text() + "\n" + promql_in_dashboards()
    for name, matchers in re.findall(r"(?<![:\w])(auditstream_\w+)\{([^}]*)\}", text):
        base = next((name.removesuffix(s) for s in HISTOGRAM_SUFFIXES if name.endswith(s)), name)
        labels = set(re.findall(r"(\w+)\s*[=!]~?", matchers))
        allowed = set(rows[base].labels) | {"le", "job", "instance"}
        assert labels <= allowed, f"{name}{{{matchers}}}: {labels - allowed} not documented"


def test_names_follow_prometheus_conventions() -> None:
    rows, _ = documented()
    for metric in rows.values():
        assert re.fullmatch(r"auditstream_[a-z][a-z0-9_]*", metric.name), metric.name
        if metric.type == "counter":
            assert metric.name.endswith("_total"), metric.name
        else:
            assert not metric.name.endswith("_total"), metric.name
        if metric.type == "histogram":
            assert metric.name.endswith(("_seconds", "_events", "_batches", "_bytes")), metric.name  # a unit
