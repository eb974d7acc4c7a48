"""Grafana: provisioning files and dashboards, with every query checked against the schema.

ClickHouse queries are rendered the way Grafana and the ClickHouse plugin would (variables,
$__timeFilter and friends) and run on a fresh chDB holding the project's migrations, as a
read-only user. PromQL is checked by promtool.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_deploy.common import (
    DASHBOARDS,
    DEPLOY,
    NOT_YET_MIGRATED,
    ROOT,
    compose,
    load_yaml,
    migration_objects,
    python_module,
    run,
    tool,
)

CH_TYPE = "grafana-clickhouse-datasource"
PROVISIONING = DEPLOY / "grafana" / "provisioning"
USERS_XML = DEPLOY / "clickhouse" / "users.d" / "grafana.xml"
FROM_S = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp())
TO_S = int(datetime(2026, 11, 8, tzinfo=UTC).timestamp())
# Values for query variables (Grafana would fill them from the data).
QUERY_VARIABLE_VALUES = {
    "experiment": "demo",
    "engine": "google",
    "ac_engine": "google",
    "study": "loc-2026",
    "treatment": "location=A",
    "since_date": "2026-11-01",
    "until_date": "2026-11-08",
}
# A little data, so the panels' own SQL (shares, drops, pivots) is checked on numbers.
ARRANGEMENT_COLUMNS = (
    "experiment_id, install_id, slice_start, engine, arm, install_age_days, identified, ads_present, "
    "box_present, ssr_c1_c2, n_candidates_bucket, units, impressions, clicks, clicks_ad, clicks_box, "
    "clicks_ssr, clicks_other, computed_at"
)
# (install, day, arm, install_age_days, identified, box_present, units, clicks c1..c10, ad, box, ssr, other)
ARRANGEMENT_ROWS = [
    ("a", "2026-11-03", "control", 10, 1, 1, 10, [4, 2], 1, 2, 0, 1),
    ("b", "2026-11-03", "swap_1_2", 10, 1, 1, 5, [1, 1], 0, 2, 1, 0),
    ("c", "2026-11-03", "control", 2, 1, 0, 3, [3], 0, 0, 0, 0),  # burn-in
    ("d", "2026-11-03", "control", 10, 0, 0, 2, [0, 2], 0, 0, 0, 0),  # unidentified
    ("e", "2026-10-01", "control", 10, 1, 0, 7, [7], 0, 0, 0, 0),  # outside the time range
]


def arrangement_values() -> str:
    rows = []
    for install, day, arm, age, ident, box, units, clicks, ad, boxc, ssr, other in ARRANGEMENT_ROWS:
        c = (clicks + [0] * 10)[:10]
        rows.append(
            f"('demo', '{install}', '{day} 12:00:00', 'google', '{arm}', {age}, {ident}, 0, {box}, 0, 3, "
            f"{units}, 0, {c}, {ad}, {boxc}, {ssr}, {other}, now64(6))"
        )
    return ",\n".join(rows)


# A little data, so the panels' own SQL (shares, drops, pivots) is checked on numbers.
FIXTURES = [
    f"INSERT INTO agg_arrangement_10s ({ARRANGEMENT_COLUMNS}) VALUES {arrangement_values()}",
    """INSERT INTO experiments_log (experiment_id, updated_at, status, config) VALUES
    ('demo', now64(6), 'running', '{"arms": {"control": 4, "swap_1_2": 1}, "salt": "s",
      "engines": ["google"], "start": "2026-11-01", "burn_in_days": 4, "unit_mode": "click"}')""",
    """INSERT INTO alerts (alert_id, created_at, kind, severity, subject, summary, details) VALUES
    ('00000000-0000-0000-0000-000000000001', '2026-11-04 10:00:00', 'srm', 'critical',
     'demo/google', 'SRM', '{}'),
    ('00000000-0000-0000-0000-000000000002', '2026-11-04 11:00:00', 'srm', 'critical',
     'other/google', 'SRM', '{}'),
    ('00000000-0000-0000-0000-000000000003', '2026-11-05 00:00:00', 'autocomplete_shock', 'warning',
     'google', 'shock', '{}')""",
    """INSERT INTO agg_autocomplete_churn (engine, root, crawl_id, previous_crawl_id, completed_at,
       rank, depth, churn, computed_at) VALUES
    ('google', 'r1', 'c2', 'c1', '2026-11-04 00:00:00', 1, 0, 0.5, now64(6)),
    ('google', 'r2', 'c2', 'c1', '2026-11-04 00:00:00', 1, 0, 0.0, now64(6)),
    ('google', 'r1', 'c2', 'c1', '2026-11-04 00:00:00', 2, 0, 1.0, now64(6)),
    ('google', 'r1', 'c2', 'c1', '2026-11-04 00:00:00', 1, 1, 0.25, now64(6)),
    ('bing', 'r1', 'c2', 'c1', '2026-11-04 00:00:00', 1, 0, 0.9, now64(6))""",
]
STUB_COLUMNS = {
    "personalization_by_rank": "'' AS study_id, 'primary' AS links, toUInt16(1) AS rank, '' AS treatment, "
    "0.0 AS changed_treatment, 0.0 AS changed_noise, 0.0 AS personalization, toUInt64(0) AS pairs",
}


def dashboard_files() -> list[Path]:
    return sorted(DASHBOARDS.glob("*.json"))


def load(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    assert isinstance(doc, dict)
    return doc


def panels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for panel in doc["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # panels inside a collapsed row
    return out


def provisioned_datasources() -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted((PROVISIONING / "datasources").glob("*.yml")):
        for ds in load_yaml(path)["datasources"]:
            found[ds["uid"]] = ds
    return found


def variables(doc: dict[str, Any]) -> dict[str, str]:
    values = {}
    for var in doc.get("templating", {}).get("list", []):
        if var["type"] in {"custom", "constant", "textbox"}:
            values[var["name"]] = str(var["current"]["value"])
        elif var["type"] == "query":
            assert var["name"] in QUERY_VARIABLE_VALUES, f"no test value for variable {var['name']}"
            values[var["name"]] = QUERY_VARIABLE_VALUES[var["name"]]
    return values


def render_sql(sql: str, values: dict[str, str]) -> str:
    """Substitute what Grafana and the ClickHouse plugin substitute before the query runs."""
    frm, to = f"toDateTime({FROM_S})", f"toDateTime({TO_S})"
    sql = re.sub(r"\$__timeFilter\(\s*([^)]+?)\s*\)", rf"\1 >= {frm} AND \1 <= {to}", sql)
    sql = re.sub(r"\$__dateFilter\(\s*([^)]+?)\s*\)", rf"\1 >= toDate({frm}) AND \1 <= toDate({to})", sql)
    sql = re.sub(
        r"\$__timeInterval\(\s*([^)]+?)\s*\)", r"toStartOfInterval(toDateTime(\1), INTERVAL 60 second)", sql
    )
    sql = sql.replace("$__fromTime", frm).replace("$__toTime", to).replace("$__interval_s", "60")
    sql = sql.replace("${__from:date:seconds}", str(FROM_S)).replace("${__to:date:seconds}", str(TO_S))

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        assert name in values, f"unknown variable ${name} in: {sql}"
        return values[name]

    sql = re.sub(r"\$\{(\w+)(?::\w+)?\}", value, sql)
    sql = re.sub(r"\$(\w+)", value, sql)
    return sql


def clickhouse_queries(doc: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(where, raw SQL, kind) for every ClickHouse query of a dashboard."""
    found = []
    for panel in panels(doc):
        for target in panel.get("targets", []):
            if target.get("datasource", panel.get("datasource", {})).get("type") == CH_TYPE:
                kind = "timeseries" if target.get("queryType") == "timeSeries" else "table"
                found.append(
                    (f"panel {panel['id']} '{panel['title']}' {target['refId']}", target["rawSql"], kind)
                )
    for var in doc.get("templating", {}).get("list", []):
        if var["type"] == "query" and var["datasource"]["type"] == CH_TYPE:
            found.append((f"variable {var['name']}", var["query"], "variable"))
    for note in doc.get("annotations", {}).get("list", []):
        if note.get("datasource", {}).get("type") == CH_TYPE:
            found.append((f"annotation {note['name']}", note["target"]["rawSql"], "annotation"))
    return found


def promql_queries(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (f"panel {p['id']} '{p['title']}' {t['refId']}", t["expr"])
        for p in panels(doc)
        for t in p.get("targets", [])
        if "expr" in t
    ]


def referenced_relations(sql: str) -> set[str]:
    ctes = set(re.findall(r"(?:WITH|,)\s*(\w+)\s+AS\s*\(", sql, re.IGNORECASE))
    names = set(re.findall(r"\b(?:FROM|JOIN)\s+(?!\()`?([A-Za-z_][\w.]*)`?", sql, re.IGNORECASE))
    return names - ctes


# ----------------------------------------------------------------------------- structure


def test_there_are_the_expected_dashboards() -> None:
    uids = {load(p)["uid"] for p in dashboard_files()}
    assert uids == {
        "auditstream-experiments",
        "auditstream-autocomplete",
        "auditstream-personalization",
        "auditstream-alerts",
        "auditstream-operations",
    }


@pytest.mark.parametrize("path", dashboard_files(), ids=lambda p: p.name)
def test_dashboard_structure(path: Path) -> None:
    doc = load(path)
    ids = [p["id"] for p in panels(doc)]
    assert len(ids) == len(set(ids)), f"duplicate panel ids in {path.name}"
    assert doc["title"] and doc["uid"] and doc["timezone"] == "utc"
    known = provisioned_datasources()
    for panel in panels(doc):
        assert panel["gridPos"]["x"] >= 0 and panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        ds = panel.get("datasource")
        assert isinstance(ds, dict) and ds.get("uid") in known, (
            f"panel {panel['id']} has no provisioned datasource"
        )
        assert ds["type"] == known[ds["uid"]]["type"]
        assert panel["targets"], f"panel {panel['id']} has no query"
        for target in panel["targets"]:
            assert target.get("datasource", ds) == ds, f"panel {panel['id']} mixes datasources"
            assert target.get("rawSql" if ds["type"] == CH_TYPE else "expr", "").strip()
    for var in doc.get("templating", {}).get("list", []):
        if var["type"] == "query":
            assert var["datasource"]["uid"] in known


def test_dashboards_are_provisioned_from_the_mounted_folder() -> None:
    provider = load_yaml(PROVISIONING / "dashboards" / "auditstream.yml")["providers"][0]
    grafana = compose()["services"]["grafana"]
    mounts = dict(m.split(":")[:2] for m in grafana["volumes"] if m.startswith("./"))
    assert mounts["./grafana/dashboards"] == provider["options"]["path"]
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    assert provider["allowUiUpdates"] is False


# ----------------------------------------------------------------------------- ClickHouse


def test_clickhouse_datasource_uses_the_read_only_user() -> None:
    ds = next(d for d in provisioned_datasources().values() if d["type"] == CH_TYPE)
    user = ds["jsonData"]["username"]
    root = ET.parse(USERS_XML).getroot()
    user_node = root.find(f"users/{user}")
    assert user_node is not None, f"{USERS_XML.name} does not define {user}"
    profile = root.find(f"profiles/{user_node.findtext('profile')}")
    assert profile is not None
    assert profile.findtext("readonly") == "1"
    # The plugin's driver sets max_execution_time on every query: allowed despite readonly.
    assert profile.find("constraints/max_execution_time/changeable_in_readonly") is not None
    grants = [q.text for q in user_node.findall("grants/query")]
    assert grants and all(g is not None and g.startswith("GRANT SELECT ") for g in grants)
    # The password reaches ClickHouse and Grafana from the same variable.
    env = user_node.find("password").attrib["from_env"]  # type: ignore[union-attr]
    assert ds["secureJsonData"]["password"] == f"${env}"
    services = compose()["services"]
    assert env in services["clickhouse"]["environment"] and env in services["grafana"]["environment"]
    mounts = dict(m.split(":")[:2] for m in services["clickhouse"]["volumes"] if m.startswith("./"))
    assert mounts["./clickhouse/users.d/grafana.xml"] == "/etc/clickhouse-server/users.d/grafana.xml"
    assert ds["jsonData"]["host"] == "clickhouse" and ds["jsonData"]["port"] == 9000


def test_queries_reference_only_tables_and_views_the_migrations_create() -> None:
    known = migration_objects() | NOT_YET_MIGRATED
    used = set()
    for path in dashboard_files():
        for where, sql, kind in clickhouse_queries(load(path)):
            names = referenced_relations(sql)
            assert names or kind == "variable", f"{path.name} {where}: no table found in {sql}"
            assert names <= known, f"{path.name} {where}: unknown {names - known}"
            used |= names
    # the views of the live board are all on a dashboard
    assert {
        "experiment_ctr",
        "experiment_gap",
        "experiment_ctr_windows",
        "arrangement_install_day",
        "experiments",
        "alerts",
        "autocomplete_churn_by_rank_depth",
        "autocomplete_crawls",
        "personalization_by_rank",
    } <= used


def test_referenced_relations_parser() -> None:
    sql = "SELECT a FROM (SELECT x FROM t1) AS s JOIN t2 ON 1 CROSS JOIN (SELECT 1 FROM v(p = 1)) AS e"
    assert referenced_relations(sql) == {"t1", "t2", "v"}


@cache
def executed() -> tuple[dict[str, Any], dict[str, tuple[str, str, str, str]]]:
    """Run every dashboard's ClickHouse queries once; (results, id -> (file, where, kind, sql))."""
    queries: dict[str, str] = {}
    index: dict[str, tuple[str, str, str, str]] = {}
    for path in dashboard_files():
        doc = load(path)
        values = variables(doc)
        for n, (where, sql, kind) in enumerate(clickhouse_queries(doc)):
            key = f"{path.stem}:{n}"
            rendered = render_sql(sql, values)
            queries[key] = rendered
            index[key] = (path.name, where, kind, rendered)
    migrated = migration_objects()
    stubs = [
        f"CREATE VIEW {name} AS SELECT {STUB_COLUMNS[name]} WHERE 0"
        for name in sorted(NOT_YET_MIGRATED - migrated)
    ]
    result = run(
        [*python_module("tests.test_deploy.chdb_queries")],
        cwd=ROOT,
        timeout=300,
        stdin_text=json.dumps({"queries": queries, "setup": stubs + FIXTURES}),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout), index


def test_every_clickhouse_query_runs_read_only_on_the_migrated_schema() -> None:
    results, index = executed()
    failures = [
        f"{index[k][0]} {index[k][1]}: {r['error']}\n{index[k][3]}"
        for k, r in results.items()
        if k in index and r["error"]
    ]
    assert not failures, "\n\n".join(failures)
    # and the session really was read-only
    assert "readonly" in (results["__write_refused__"]["error"] or "").lower()


def test_query_results_have_the_shape_their_panels_need() -> None:
    results, index = executed()
    for key, (name, where, kind, _) in index.items():
        columns, types = results[key]["columns"], results[key]["types"]
        if kind in {"timeseries", "annotation"}:
            assert columns[0] == "time" and types[0].startswith("DateTime"), (
                f"{name} {where}: {columns} {types}"
            )
        if kind == "annotation":
            assert "text" in columns, f"{name} {where}"
        if kind == "variable":
            assert len(columns) == 1, f"{name} {where} returns {columns}"


def panel_rows(title_part: str) -> list[dict[str, Any]]:
    """Rows of the (first query of the) panel whose title contains title_part, as dicts."""
    results, index = executed()
    key = next(k for k, v in index.items() if title_part in v[1])
    columns = results[key]["columns"]
    return [dict(zip(columns, row, strict=True)) for row in results[key]["rows"]]


def num(value: Any) -> float:
    return float(value)  # JSON quotes 64-bit integers


def test_preprocessing_drops_panel_counts_each_rule_once() -> None:
    (row,) = panel_rows("Preprocessing drops per engine")
    assert row["engine"] == "google"
    # install e is outside the time range; c is in its burn-in; d is unidentified
    assert [num(row[c]) for c in ("all_units", "dropped_burn_in", "dropped_unidentified", "kept")] == [
        20,
        3,
        2,
        15,
    ]
    assert num(row["kept_share"]) == pytest.approx(0.75)


def test_allocation_panel_compares_observed_and_configured_shares() -> None:
    rows = {r["arm"]: r for r in panel_rows("Units per arm against the allocation")}
    assert num(rows["control"]["units"]) == 10 and num(rows["swap_1_2"]["units"]) == 5
    assert num(rows["control"]["observed_share"]) == pytest.approx(2 / 3)
    assert num(rows["control"]["expected_share"]) == pytest.approx(0.8)
    assert num(rows["swap_1_2"]["expected_share"]) == pytest.approx(0.2)


def test_element_type_shares_add_up_per_arm() -> None:
    rows = {r["arm"]: r for r in panel_rows("Element-type shares of clicks per arm")}
    control, swap = rows["control"], rows["swap_1_2"]
    assert num(control["clicks"]) == 10 and num(swap["clicks"]) == 5
    assert [num(control[f"{t}_share"]) for t in ("organic", "ad", "box", "ssr", "other")] == pytest.approx(
        [0.6, 0.1, 0.2, 0.0, 0.1]
    )
    assert [num(swap[f"{t}_share"]) for t in ("organic", "ad", "box", "ssr", "other")] == pytest.approx(
        [0.4, 0.0, 0.4, 0.2, 0.0]
    )


def test_ctr_panel_passes_the_time_range_and_burn_in_to_the_view() -> None:
    rows = panel_rows("CTR per position and arm over the time range")
    c1 = {r["arm"]: r for r in rows if int(r["position"]) == 1}
    assert num(c1["control"]["units"]) == 10 and num(c1["control"]["ctr"]) == pytest.approx(0.4)
    assert num(c1["swap_1_2"]["ctr"]) == pytest.approx(0.2)


def test_srm_panel_shows_only_this_experiment() -> None:
    rows = panel_rows("SRM status")
    assert [r["subject"] for r in rows] == ["demo/google"]


def test_churn_heatmap_pivots_rank_by_depth_and_leaves_missing_cells_empty() -> None:
    rows = {int(r["depth"]): r for r in panel_rows("Churn by depth (rows) and rank (columns)")}
    assert set(rows) == {0, 1}
    assert num(rows[0]["rank_1"]) == pytest.approx(0.25)  # mean of 0.5 and 0.0, bing not mixed in
    assert num(rows[0]["rank_2"]) == pytest.approx(1.0)
    assert rows[0]["rank_3"] is None
    assert num(rows[1]["rank_1"]) == pytest.approx(0.25)
    assert num(rows[0]["pairs"]) == 3


# ----------------------------------------------------------------------------- Prometheus


def test_dashboard_promql_parses(tmp_path: Path) -> None:
    rules = []
    for path in dashboard_files():
        for n, (where, expr) in enumerate(promql_queries(load(path))):
            rendered = (
                expr.replace("$__rate_interval", "5m").replace("$__interval", "1m").replace("$__range", "1h")
            )
            assert "$" not in rendered, f"{path.name} {where}: unresolved variable in {expr}"
            rules.append({"record": f"dashboard_{path.stem}_{n}", "expr": rendered})
    assert len(rules) > 15
    rule_file = tmp_path / "dashboard_queries.yml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    result = run([tool("promtool"), "check", "rules", str(rule_file)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_operations_dashboard_covers_the_service() -> None:
    text = " ".join(expr for _, expr in promql_queries(load(DASHBOARDS / "operations.json")))
    for metric in (
        "auditstream_ingest_events_accepted_total",
        "auditstream_ingest_requests_total",
        "auditstream_ingest_produce_duration_seconds_bucket",
        "auditstream_sink_batch_seconds_bucket",
        "auditstream_consumer_lag_messages",
        "auditstream_crawler_blocks_total",
        "auditstream_units_total",
    ):
        assert metric in text, metric
