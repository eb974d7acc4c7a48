"""Apply the versioned DDL in ``schemas/clickhouse/migrations`` once each, then every view.

Migrations hold tables and data changes; they are never edited once applied. Views have
one current definition each, ``schemas/clickhouse/views/<name>.sql``, which ``migrate``
creates or replaces after the migrations, every time it runs.
"""

from __future__ import annotations

from core.store.base import Store
from schemas.sql import load_migrations, load_views, quote

_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations
(version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3))
ENGINE = ReplacingMergeTree ORDER BY version
"""


async def applied_versions(store: Store) -> set[int]:
    await store.execute(_LEDGER)
    result = await store.query("SELECT version FROM schema_migrations FINAL")
    return {int(r[0]) for r in result.rows}


async def migrate(store: Store) -> list[str]:
    """Apply pending migrations in order, then every view; return the names of the
    migrations applied (empty when current).

    Every statement is ``IF NOT EXISTS``, so a migration interrupted half-way is
    simply applied again. No migration reads a view: the views are created after them.
    """
    done = await applied_versions(store)
    applied = []
    for migration in load_migrations():
        if migration.version in done:
            continue
        for statement in migration.statements:
            await store.execute(statement)
        await store.execute(
            "INSERT INTO schema_migrations (version, name) VALUES "
            f"({migration.version}, {quote(migration.name)})"
        )
        applied.append(migration.name)
    await apply_views(store)
    return applied


async def apply_views(store: Store) -> None:
    """Create or replace every view with its current definition, each after the views it
    reads (a view's ``*`` and the columns of a view it reads are fixed when it is created)."""
    for view in load_views():
        await store.execute(view.statement)
