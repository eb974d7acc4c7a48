"""Each view is defined once, in ``schemas/clickhouse/views/<name>.sql``, and ``migrate`` creates
or replaces every view after the migrations, each time it runs; the migrations hold tables and
data changes only. ``db migrate`` on a fresh data directory and on old ones written by a
checkout that still created its views in the migrations (tests/fixtures/old_data_dirs) ends
with the same tables and views, and the old rows are still there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

from core.store.chdb_store import ChdbStore
from schemas.sql import load_migrations, load_views

ROOT = Path(__file__).resolve().parents[2]
CLICKHOUSE = ROOT / "schemas" / "clickhouse"
OLD_DIRS = ROOT / "tests" / "fixtures" / "old_data_dirs"
SCHEMA = (
    "SELECT name, engine, create_table_query FROM system.tables "
    "WHERE database = currentDatabase() ORDER BY name"
)
ANY_VIEW = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:MATERIALIZED\s+)?VIEW\b", re.I)
PACKAGES = (
    "core",
    "schemas",
    "analytics",
    "streams",
    "collectors",
    "ingest",
    "supervisor",
    "auditstream",
    "bench",
)


def code_of(path: Path) -> str:
    """A SQL file without its comment lines."""
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("--"))


def db_migrate(data_dir: Path) -> str:
    """``auditstream db migrate`` on embedded chDB in ``data_dir``; what it printed."""
    environ = {**os.environ, "AUDITSTREAM_CLICKHOUSE_URL": ""}
    command = [sys.executable, "-c", "from auditstream.cli import main; main()", "db", "migrate"]
    command += ["--data-dir", str(data_dir)]
    done = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return re.sub(r"\s+", "", done.stdout + done.stderr)


def applied(output: str) -> list[str]:
    return output.split("applied:", 1)[1].split(",") if "applied:" in output else []


def old_data_dir(tmp_path: Path, fixture: str) -> Path:
    """A copy of an old data directory of tests/fixtures/old_data_dirs, as ``db migrate`` finds one."""
    with tarfile.open(OLD_DIRS / fixture) as tar:
        tar.extractall(tmp_path, filter="data")
    data_dir = tmp_path / "old"
    data_dir.mkdir()
    (tmp_path / "ch").rename(data_dir / "clickhouse")
    return data_dir


async def read(data_dir: Path, *queries: str) -> list[Any]:
    store = ChdbStore(data_dir / "clickhouse", read_lanes=1)
    try:
        return [[tuple(r) for r in (await store.query(q)).rows] for q in queries]
    finally:
        await store.close()


def test_no_migration_creates_a_view() -> None:
    for migration in load_migrations():
        assert not any(ANY_VIEW.search(s) for s in migration.statements), migration.name
    for path in sorted((CLICKHOUSE / "migrations").glob("*.sql")):
        assert not ANY_VIEW.search(code_of(path)), path.name


def test_each_view_is_defined_once_in_its_own_file() -> None:
    files = sorted((CLICKHOUSE / "views").glob("*.sql"))
    for path in files:
        assert re.findall(r"\bCREATE\s+OR\s+REPLACE\s+VIEW\s+(\w+)", code_of(path)) == [path.stem]
        assert len(ANY_VIEW.findall(code_of(path))) == 1, path.name
    names = [v.name for v in load_views()]
    assert sorted(names) == [p.stem for p in files] and len(set(names)) == len(names) > 40
    defines = re.compile(r"\bCREATE\s+(?:OR\s+REPLACE\s+)?VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?`?(\w+)", re.I)
    for package in PACKAGES:  # nor does any code of the project
        for path in (ROOT / package).rglob("*"):
            if path.suffix in (".py", ".sql") and path.parent != CLICKHOUSE / "views":
                assert not set(defines.findall(path.read_text())) & set(names), path


def test_views_come_after_the_views_they_read() -> None:
    created: set[str] = set()
    for view in load_views():
        assert view.reads <= created, view.name
        created.add(view.name)
    reads = {v.name: v.reads for v in load_views()}
    assert reads["experiment_ctr"] == {"arrangement_install_day"}
    assert reads["page_composition"] == {"extension_events"}
    assert reads["extension_events"] == frozenset()


@pytest.mark.parametrize(
    ("files", "error"),
    [
        ({"a": "CREATE OR REPLACE VIEW a AS SELECT 1;\nCREATE OR REPLACE VIEW b AS SELECT 2;"}, "one"),
        ({"a": "CREATE OR REPLACE VIEW b AS SELECT 1;"}, "one statement"),
        ({"a": "CREATE VIEW IF NOT EXISTS a AS SELECT 1;"}, "one statement"),
        ({"a": "CREATE OR REPLACE VIEW a AS SELECT * FROM b;",
          "b": "CREATE OR REPLACE VIEW b AS SELECT * FROM a;"}, "cycle"),
    ],
)  # fmt: skip
def test_the_loader_refuses_what_it_cannot_apply(tmp_path: Path, files: dict[str, str], error: str) -> None:
    for name, text in files.items():
        (tmp_path / f"{name}.sql").write_text(text)
    with pytest.raises(RuntimeError, match=error):
        load_views(tmp_path)


def test_the_loader_reads_no_view_in_comments_or_strings(tmp_path: Path) -> None:
    (tmp_path / "a.sql").write_text(
        "-- a reads b; not c\nCREATE OR REPLACE VIEW a AS SELECT 'c' AS x FROM b -- nor c\n;"
    )
    (tmp_path / "b.sql").write_text("CREATE OR REPLACE VIEW b AS SELECT 1 AS y;\n")
    (tmp_path / "c.sql").write_text("CREATE OR REPLACE VIEW c AS SELECT * FROM a;\n")
    assert [(v.name, v.reads) for v in load_views(tmp_path)] == [
        ("b", frozenset()),
        ("a", {"b"}),
        ("c", {"a"}),
    ]


async def test_db_migrate_twice_applies_nothing_the_second_time_but_the_views(tmp_path: Path) -> None:
    first = db_migrate(tmp_path)
    assert applied(first) == [m.name for m in load_migrations()]
    counts = "SELECT count() FROM schema_migrations"  # no FINAL: a second insert would show
    schema, ledger = await read(tmp_path, SCHEMA, counts)
    assert {r[1] for r in schema} >= {"View", "ReplacingMergeTree"}
    assert ledger == [(len(load_migrations()),)]
    store = ChdbStore(tmp_path / "clickhouse", read_lanes=1)
    try:  # views changed or dropped by hand come back as defined
        await store.execute("CREATE OR REPLACE VIEW experiments AS SELECT 1 AS by_hand")
        await store.execute("DROP VIEW personalization_rank1")
    finally:
        await store.close()
    again = db_migrate(tmp_path)
    assert applied(again) == [] and "schemaisuptodate" in again
    assert await read(tmp_path, SCHEMA, counts) == [schema, ledger]


@pytest.mark.parametrize(("fixture", "version"), [("v0037.tar.gz", 37), ("v0018.tar.gz", 18)])
async def test_an_old_data_directory_migrates_to_the_fresh_schema_and_keeps_its_rows(
    tmp_path: Path, fixture: str, version: int
) -> None:
    db_migrate(tmp_path / "fresh")
    (fresh,) = await read(tmp_path / "fresh", SCHEMA)
    old = old_data_dir(tmp_path, fixture)
    (before,) = await read(old, SCHEMA)
    # the views/ definitions are the ones the old migrations left, exactly (at the latest)
    assert (before == fresh) == (version == load_migrations()[-1].version)
    assert applied(db_migrate(old)) == [m.name for m in load_migrations() if m.version > version]
    schema, rows = await read(
        old,
        SCHEMA,
        "SELECT (SELECT count() FROM extension_events WHERE experiment_id = 'old1' AND market = ''), "
        "(SELECT count() FROM alerts WHERE summary = 'kept'), "
        "(SELECT groupArray(version) FROM (SELECT version FROM schema_migrations FINAL ORDER BY version))",
    )
    assert schema == fresh  # every table and view, as created
    assert rows == [(24, 1, [m.version for m in load_migrations()])]


async def test_the_backfills_applied_to_an_old_directory_read_its_rows(tmp_path: Path) -> None:
    """0019, 0026, 0027 and 0034 rebuild the aggregates of a directory at 0018 from its raw rows
    (the migrations read raw_extension_events, not the view, which is created after them)."""
    old = old_data_dir(tmp_path, "v0018.tar.gz")
    db_migrate(old)
    sums = [
        "SELECT sum(units), sum(clicks) FROM clicks_by_rank_1m WHERE original_rank = 1",
        "SELECT sum(units), sum(arraySum(clicks)) FROM arrangement_install",
        "SELECT sum(units), sum(arraySum(clicks)) FROM arrangement_install_subset WHERE subset = 'all'",
        "SELECT sum(units), sum(impressions) FROM arrangement_replicates_1h",
        "SELECT sum(units) FROM agg_arrangement_install_closed FINAL WHERE arm != ''",  # day 1 only
    ]
    expected = [(12, 4), (12, 12), (12, 12), (12, 12), (6,)]
    assert [r[0] for r in await read(old, *sums)] == expected
