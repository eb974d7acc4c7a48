"""The cluster layout (schemas/cluster_ddl.py): what each kind of statement becomes, that every
table the migrations create has a layout whose sharding key keeps all versions of a row (and an
install's rows) on one shard, and that every statement ``db migrate --cluster`` would run, for
every table and view, parses in ClickHouse's own parser (chDB; nothing is executed: there is no
Keeper or cluster here)."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

import pytest

from schemas.cluster_ddl import (
    BY_INSTALL,
    EVERYWHERE,
    LAYOUT,
    Everywhere,
    Sharded,
    cluster_statements,
)
from schemas.migrate import migration_plan
from schemas.sql import load_migrations, load_views
from schemas.topics import FAMILIES
from tests.test_deploy.common import ROOT, python_module, run

ON = "ON CLUSTER 'c1'"


def cs(sql: str) -> list[str]:
    return cluster_statements(sql, "c1")


def one_line(sql: str) -> str:
    return " ".join(sql.split())


@cache
def parsed(statements: tuple[str, ...]) -> list[dict[str, Any]]:
    """chDB's parse of each statement (tests/chdb_parse.py, in a subprocess)."""
    result = run(
        python_module("tests.chdb_parse"), cwd=ROOT, timeout=300, stdin_text=json.dumps(list(statements))
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out: list[dict[str, Any]] = json.loads(result.stdout)
    return out


# ----------------------------------------------------------------------------- tables

SLICES = """
CREATE TABLE IF NOT EXISTS agg_arrangement_10s
(
    experiment_id LowCardinality(String),
    install_id    String,
    note          String DEFAULT 'a, b (INDEX x)',
    clicks        Array(UInt32) CODEC(T64, ZSTD(3)),
    computed_at   DateTime64(6, 'UTC'), -- a comment, with ( a comma, before an index
    INDEX idx_install install_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYYYYMM(computed_at)
ORDER BY (experiment_id, install_id);
"""


def test_a_sharded_table_becomes_replicated_local_tables_behind_a_distributed_one() -> None:
    local, distributed = cs(SLICES)
    assert local.startswith(f"CREATE TABLE IF NOT EXISTS agg_arrangement_10s_local {ON}\n(")
    assert (
        "\nENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', "
        "'{replica}', computed_at)\nPARTITION BY toYYYYMM(computed_at)\nORDER BY (experiment_id, install_id)"
    ) in local
    assert "INDEX idx_install" in local and "CODEC(T64, ZSTD(3))" in local
    assert distributed == (
        f"CREATE TABLE IF NOT EXISTS agg_arrangement_10s {ON}\n(\n"
        "    experiment_id LowCardinality(String),\n"
        "    install_id    String,\n"
        "    note          String DEFAULT 'a, b (INDEX x)',\n"
        "    clicks        Array(UInt32) CODEC(T64, ZSTD(3)),\n"
        "    computed_at   DateTime64(6, 'UTC')\n)\n"
        "ENGINE = Distributed('c1', currentDatabase(), agg_arrangement_10s_local, cityHash64(install_id))"
    )


def test_an_everywhere_table_is_one_table_with_a_replica_on_every_node() -> None:
    (statement,) = cs(
        "CREATE TABLE IF NOT EXISTS alerts (alert_id UUID) ENGINE = MergeTree ORDER BY alert_id"
    )
    assert statement == (
        f"CREATE TABLE IF NOT EXISTS alerts {ON}\n(alert_id UUID)\n"
        "ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/{table}', '{shard}-{replica}')\n"
        "ORDER BY alert_id"
    )


@pytest.mark.parametrize(
    ("engine", "replicated"),
    [
        ("MergeTree", "ReplicatedMergeTree(P, R)"),
        ("MergeTree()", "ReplicatedMergeTree(P, R)"),
        (
            "ReplacingMergeTree(computed_at, is_deleted)",
            "ReplicatedReplacingMergeTree(P, R, computed_at, is_deleted)",
        ),
        ("SummingMergeTree((a, b))", "ReplicatedSummingMergeTree(P, R, (a, b))"),
    ],
)
def test_the_engine_keeps_its_arguments_after_the_replication_path(engine: str, replicated: str) -> None:
    _, distributed = cs(f"CREATE TABLE agg_clicks_by_rank_10s (a UInt8) ENGINE = {engine} ORDER BY a")
    local = cs(f"CREATE TABLE agg_clicks_by_rank_10s (a UInt8) ENGINE = {engine} ORDER BY a")[0]
    path = "'/clickhouse/tables/{shard}/{database}/{table}', '{replica}'"
    assert f"ENGINE = {replicated.replace('P, R', path)}\nORDER BY a" in local
    assert "cityHash64(experiment_id, engine))" in distributed
    assert not local.startswith("CREATE TABLE IF NOT EXISTS")  # no IF NOT EXISTS added


# ----------------------------------------------------------------------------- other statements

ALTER = """ALTER TABLE agg_arrangement_install
    ADD COLUMN IF NOT EXISTS q UInt8 AFTER ssr_c1_c2,
    ADD COLUMN IF NOT EXISTS v UInt32 DEFAULT 0,
    MODIFY ORDER BY (experiment_id, engine, install_id, q)"""


def test_an_alter_changes_the_local_tables_and_the_distributed_tables_columns() -> None:
    local, distributed = cs(ALTER)
    assert one_line(local) == one_line(ALTER).replace(
        "agg_arrangement_install", f"agg_arrangement_install_local {ON}", 1
    )
    assert distributed == (
        f"ALTER TABLE agg_arrangement_install {ON}\n"
        "    ADD COLUMN IF NOT EXISTS q UInt8 AFTER ssr_c1_c2,\n"
        "    ADD COLUMN IF NOT EXISTS v UInt32 DEFAULT 0"
    )
    assert cs("ALTER TABLE agg_arrangement_install MODIFY ORDER BY (experiment_id)") == [
        f"ALTER TABLE agg_arrangement_install_local {ON}\n    MODIFY ORDER BY (experiment_id)"
    ]


def test_replication_carries_changes_to_an_everywhere_table_without_on_cluster() -> None:
    """ON CLUSTER would run them once per shard on the same replicated table."""
    for sql in (
        "ALTER TABLE alerts ADD COLUMN IF NOT EXISTS x UInt8",
        "TRUNCATE TABLE IF EXISTS alerts",
        "DELETE FROM alerts WHERE kind = 'x'",
        "OPTIMIZE TABLE alerts FINAL",
        "INSERT INTO schema_migrations (version, name) VALUES (1, 'a')",
    ):
        assert cs(sql) == [sql]


def test_drop_truncate_delete_and_optimize_reach_every_shard() -> None:
    assert cs("DROP TABLE IF EXISTS agg_arrangement_day") == [
        f"DROP TABLE IF EXISTS agg_arrangement_day {ON} SYNC",
        f"DROP TABLE IF EXISTS agg_arrangement_day_local {ON} SYNC",
    ]
    assert cs("DROP TABLE IF EXISTS alerts") == [f"DROP TABLE IF EXISTS alerts {ON} SYNC"]
    assert cs("DROP VIEW IF EXISTS crawl_markers") == [f"DROP VIEW IF EXISTS crawl_markers {ON}"]
    assert cs("TRUNCATE TABLE IF EXISTS agg_arrangement_10s") == [
        f"TRUNCATE TABLE IF EXISTS agg_arrangement_10s_local {ON}"
    ]
    assert cs("DELETE FROM agg_arrangement_looks WHERE look_day >= '2026-01-01'") == [
        f"DELETE FROM agg_arrangement_looks_local {ON} WHERE look_day >= '2026-01-01'"
    ]
    assert cs("OPTIMIZE TABLE agg_arrangement_install FINAL") == [
        f"OPTIMIZE TABLE agg_arrangement_install_local {ON} FINAL"
    ]


def test_an_insert_through_a_distributed_table_is_synchronous_and_may_join_other_shards() -> None:
    wanted = "distributed_foreground_insert = 1, distributed_product_mode = 'global'"
    select = "INSERT INTO agg_arrangement_install SELECT * FROM agg_arrangement_10s FINAL"
    assert cs(select) == [f"{select}\nSETTINGS {wanted}"]
    assert cs(f"{select} SETTINGS max_threads = 2") == [f"{select} SETTINGS max_threads = 2, {wanted}"]
    assert cs(f"{select} SETTINGS distributed_product_mode = 'local'") == [
        f"{select} SETTINGS distributed_product_mode = 'local', distributed_foreground_insert = 1"
    ]
    values = "INSERT INTO agg_arrangement_looks (arm) VALUES ('a')"
    assert cs(values) == [f"INSERT INTO agg_arrangement_looks (arm) SETTINGS {wanted}\nVALUES ('a')"]
    nested = "INSERT INTO agg_arrangement_install SELECT * FROM (SELECT 1 SETTINGS max_threads = 1)"
    assert cs(nested) == [f"{nested}\nSETTINGS {wanted}"]
    named = "INSERT INTO agg_arrangement_install (format) SELECT format, values FROM x"
    assert cs(named) == [f"{named}\nSETTINGS {wanted}"]
    with pytest.raises(ValueError, match="SETTINGS before its data"):
        cs("INSERT INTO agg_arrangement_install SETTINGS max_threads = 1 SELECT 1")


def test_views_are_created_on_every_node_and_read_the_distributed_tables() -> None:
    view = "CREATE OR REPLACE VIEW arrangement_install AS\nSELECT * FROM agg_arrangement_install FINAL"
    assert cs(view) == [
        f"CREATE OR REPLACE VIEW arrangement_install {ON} AS\nSELECT * FROM agg_arrangement_install FINAL"
    ]


def test_a_materialized_view_writes_its_shards_local_table() -> None:
    (mv,) = cs(
        "CREATE MATERIALIZED VIEW IF NOT EXISTS mv TO agg_arrangement_10s AS "
        "SELECT install_id, 'raw_extension_events' AS src FROM raw_extension_events"
    )
    assert mv == (
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS mv {ON} TO agg_arrangement_10s_local AS "
        "SELECT install_id, 'raw_extension_events' AS src FROM raw_extension_events_local"
    )
    (listed,) = cs("CREATE MATERIALIZED VIEW mv TO agg_arrangement_10s(install_id String) AS SELECT 1")
    assert f"mv {ON} TO agg_arrangement_10s_local(install_id String) AS" in listed
    with pytest.raises(ValueError, match="sharded differently"):
        cs("CREATE MATERIALIZED VIEW mv TO agg_clicks_by_rank_10s AS SELECT 1 FROM raw_extension_events")
    with pytest.raises(ValueError, match="TO table"):
        cs("CREATE MATERIALIZED VIEW mv ENGINE = MergeTree ORDER BY a AS SELECT 1 AS a")


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("CREATE TABLE IF NOT EXISTS new_table (a UInt8) ENGINE = MergeTree ORDER BY a", "add it to LAYOUT"),
        ("INSERT INTO new_table SELECT 1", "add it to LAYOUT"),
        ("DROP TABLE IF EXISTS new_table", "add it to LAYOUT"),
        ("CREATE TABLE alerts ON CLUSTER x (a UInt8) ENGINE = MergeTree ORDER BY a", "already ON CLUSTER"),
        ("CREATE TABLE alerts (a UInt8) ENGINE = Memory", "not a plain MergeTree"),
        ("CREATE TABLE alerts (a UInt8) ENGINE = ReplicatedMergeTree('/p', 'r') ORDER BY a", "not a plain"),
        ("CREATE TABLE alerts AS dead_letters", "no cluster form"),
        ("SELECT 1", "no cluster form"),
        ("ALTER TABLE agg_arrangement_10s ADD COLUMN a String DEFAULT (')'", "unbalanced"),
    ],
)
def test_what_has_no_cluster_form_is_refused(sql: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cs(sql)


def test_a_parenthesis_or_keyword_in_a_literal_is_text() -> None:
    sql = "ALTER TABLE agg_arrangement_10s ADD COLUMN a String DEFAULT ') ON CLUSTER x, MODIFY'"
    assert cs(sql)[1] == f"ALTER TABLE agg_arrangement_10s {ON}\n    {sql.split(' ', 3)[3]}"


def test_a_cluster_name_is_a_name() -> None:
    assert cluster_statements("DROP VIEW v", "{cluster}") == ["DROP VIEW v ON CLUSTER '{cluster}'"]
    for bad in ("", "a b", "a'b", "a;DROP"):
        with pytest.raises(ValueError, match="not a cluster name"):
            cluster_statements("DROP VIEW v", bad)


# ----------------------------------------------------------------------------- the layout


def created_tables() -> dict[str, str]:
    """Each table the migrations create, with its (last) CREATE statement."""
    found = {}
    for migration in load_migrations():
        for statement in migration.statements:
            m = re.match(r"CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)", statement)
            if m:
                found[m.group(1)] = statement
    return found


def sorting_columns(create: str) -> set[str]:
    order_by = re.search(r"\bORDER\s+BY\s+(\([^)]*\)|\w+)", create)
    assert order_by, create
    return set(re.findall(r"\w+", order_by.group(1)))


def test_every_table_the_migrations_create_has_a_layout() -> None:
    assert set(LAYOUT) == {*created_tables(), "schema_migrations"}


def test_every_version_of_a_derived_row_lands_on_one_shard() -> None:
    """ReplacingMergeTree and FINAL collapse the versions of a sorting key only within a shard:
    the sharding columns of a table are part of its sorting key."""
    for table, create in created_tables().items():
        layout = LAYOUT[table]
        if isinstance(layout, Sharded) and not table.startswith("raw_"):
            assert set(layout.columns) <= sorting_columns(create), table


def test_every_copy_of_an_event_lands_on_one_shard() -> None:
    """A raw table is sharded by fields of its family's Kafka partition key: a replayed or
    resent event repeats them (and the worker stores a partition's events in order)."""
    event = {name: name for name in ("install_id", "study_id", "round_id", "query", "engine", "root")}
    for family in FAMILIES:
        layout = LAYOUT[family.raw_table]
        assert isinstance(layout, Sharded), family.raw_table
        for column in layout.columns:
            assert family.key(event) != family.key({**event, column: "other"}), (family.raw_table, column)


def test_an_installs_rows_live_with_its_events() -> None:
    """Every table keyed by install is sharded as the raw events: an install's recompute reads
    and writes one shard."""
    for table, create in created_tables().items():
        if "install_id" in sorting_columns(create) or table == "raw_extension_events":
            assert LAYOUT[table] == BY_INSTALL, table
    everywhere = {t for t, layout in LAYOUT.items() if isinstance(layout, Everywhere)}
    assert not any(t.startswith(("raw_", "agg_")) for t in everywhere), "raw and derived tables are sharded"
    assert LAYOUT["schema_migrations"] == EVERYWHERE


# ----------------------------------------------------------------------------- every statement


def test_every_statement_of_db_migrate_cluster_parses_in_clickhouse() -> None:
    """Every table and view, in ``db migrate --cluster``'s order: chDB parses each statement,
    reads ``ON CLUSTER`` where it is written, and each table's engine is replicated or
    Distributed."""
    plan = migration_plan("auditstream")
    results = parsed(tuple(plan))
    errors = [f"{r['error']}\n{s[:300]}" for s, r in zip(plan, results, strict=True) if r["error"]]
    assert not errors, "\n\n".join(errors)
    engines: dict[str, str] = {}
    for statement, result in zip(plan, results, strict=True):
        if "ON CLUSTER" in statement:
            assert "ON CLUSTER auditstream" in result["formatted"], statement[:300]
        m = re.match(r"CreateQuery (\w+).*?Storage definition.*?Function (\w+)", result["ast"], re.S)
        if m and "ENGINE" in statement:
            engines[m.group(1)] = m.group(2)
    for table, layout in LAYOUT.items():
        if isinstance(layout, Sharded):
            assert engines[f"{table}_local"].startswith("Replicated"), table
            assert engines[table] == "Distributed", table
        else:
            assert engines[table].startswith("Replicated") and f"{table}_local" not in engines, table
    views = {v.name for v in load_views()}
    created_views = {
        m.group(1) for s in plan for m in [re.match(r"CREATE OR REPLACE VIEW (\w+) ON CLUSTER", s)] if m
    }
    assert created_views == views


def test_the_single_server_plan_is_the_files_as_they_are() -> None:
    plan = migration_plan()
    statements = [s for m in load_migrations() for s in m.statements] + [v.statement for v in load_views()]
    assert plan[1:] == statements and "ON CLUSTER" not in "".join(plan)
