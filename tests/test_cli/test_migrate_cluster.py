"""``db migrate --cluster NAME``: what it prints with ``--dry-run``, what it refuses, and that
``migrate`` sends the cluster form (a real ClickHouse, embedded chDB, answers that it has no
such cluster: nothing else could be applied here, for want of a Keeper and a cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from core.store import StoreError
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate, migration_plan
from schemas.sql import split_statements

runner = CliRunner()


def test_dry_run_prints_the_cluster_plan_and_connects_to_nothing(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["db", "migrate", "--cluster", "auditstream", "--dry-run", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert list(split_statements(result.stdout)) == migration_plan("auditstream")
    assert list(tmp_path.iterdir()) == []
    single = runner.invoke(app, ["db", "migrate", "--dry-run", "--data-dir", str(tmp_path)])
    assert list(split_statements(single.stdout)) == migration_plan()


def test_a_bad_cluster_name_or_the_embedded_store_is_refused(tmp_path: Path) -> None:
    bad = runner.invoke(app, ["db", "migrate", "--cluster", "a'b", "--dry-run"])
    assert bad.exit_code == 2 and "not a cluster name" in bad.output
    embedded = runner.invoke(
        app,
        ["db", "migrate", "--cluster", "auditstream", "--data-dir", str(tmp_path), "--clickhouse-url", ""],
    )
    assert embedded.exit_code == 2 and "needs a ClickHouse server" in embedded.output
    assert not (tmp_path / "clickhouse").exists()


async def test_migrate_sends_the_cluster_form(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        with pytest.raises(StoreError, match="Requested cluster 'auditstream' not found"):
            await migrate(store, "auditstream")
        assert await migrate(store) != []  # the single-server form still applies there
    finally:
        await store.close()
