"""Apply the versioned DDL in ``schemas/clickhouse/migrations`` once each."""

from __future__ import annotations

from core.store.base import Store
from schemas.sql import load_migrations, quote

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
    """Apply pending migrations in order; return the names applied (empty when current).

    Every statement is ``IF NOT EXISTS``, so a migration interrupted half-way is
    simply applied again.
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
    return applied
