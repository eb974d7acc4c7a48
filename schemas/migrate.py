"""Apply the versioned DDL in ``schemas/clickhouse/migrations`` once each, then every view.

Migrations hold tables and data changes; they are never edited once applied. Views have
one current definition each, ``schemas/clickhouse/views/<name>.sql``, which ``migrate``
creates or replaces after the migrations, every time it runs. Given a cluster, every
statement goes through ``schemas.cluster_ddl`` first: the same files make the cluster layout.
"""

from __future__ import annotations

from core.store.base import Store
from schemas.cluster_ddl import cluster_statements
from schemas.sql import load_migrations, load_views, quote

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations
(version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
ENGINE = ReplacingMergeTree ORDER BY version
"""


def statements_for(statement: str, cluster: str | None) -> list[str]:
    """``statement`` as one server runs it, or its cluster form (``schemas/cluster_ddl.py``)."""
    return [statement.strip()] if cluster is None else cluster_statements(statement, cluster)


def migration_plan(cluster: str | None = None) -> list[str]:
    """Every statement ``migrate`` runs on an empty server (or cluster), in order, but the
    ledger's rows: what ``db migrate --dry-run`` prints for review."""
    plan = statements_for(_LEDGER, cluster)
    for migration in load_migrations():
        for statement in migration.statements:
            plan += statements_for(statement, cluster)
    for view in load_views():
        plan += statements_for(view.statement, cluster)
    return plan


async def applied_versions(store: Store, cluster: str | None = None) -> set[int]:
    for statement in statements_for(_LEDGER, cluster):
        await store.execute(statement)
    result = await store.query("SELECT version FROM schema_migrations FINAL")
    return {int(r[0]) for r in result.rows}


async def migrate(store: Store, cluster: str | None = None) -> list[str]:
    """Apply pending migrations in order, then every view; return the names of the
    migrations applied (empty when current). With ``cluster``, in their cluster form.

    Every statement is ``IF NOT EXISTS``, so a migration interrupted half-way is
    simply applied again. No migration reads a view: the views are created after them.
    """
    done = await applied_versions(store, cluster)
    applied = []
    for migration in load_migrations():
        if migration.version in done:
            continue
        for statement in migration.statements:
            for part in statements_for(statement, cluster):
                await store.execute(part)
        await store.execute(
            "INSERT INTO schema_migrations (version, name) VALUES "
            f"({migration.version}, {quote(migration.name)})"
        )
        applied.append(migration.name)
    await apply_views(store, cluster)
    return applied


async def apply_views(store: Store, cluster: str | None = None) -> None:
    """Create or replace every view with its current definition, each after the views it
    reads (a view's ``*`` and the columns of a view it reads are fixed when it is created)."""
    for view in load_views():
        for statement in statements_for(view.statement, cluster):
            await store.execute(statement)
