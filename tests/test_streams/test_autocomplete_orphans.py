"""The worker's orphan scan: completed crawls with no analysis (after a restart, or after
migration 0022 emptied the derived tables) are picked up oldest first, and a full batch
means the next tick scans again instead of waiting a minute."""

from __future__ import annotations

import asyncio
from typing import Any

from core.store.base import QueryResult
from streams.processors.autocomplete_crawls import (
    ORPHAN_BATCH,
    ORPHAN_SCAN_EVERY,
    ORPHANS_SQL,
    AutocompleteAnalytics,
)


class ScriptedStore:
    """Answers the orphan scan with the next count of crawls; every other query with nothing."""

    def __init__(self, batches: list[int]) -> None:
        self.batches = batches
        self.scans = 0
        self.loaded: list[str] = []

    async def query(self, sql: str) -> QueryResult:
        if sql == ORPHANS_SQL:
            n = self.batches[self.scans] if self.scans < len(self.batches) else 0
            self.scans += 1
            return QueryResult(
                ["engine", "root", "crawl_id"], [], [["google", f"r{i}", "c"] for i in range(n)]
            )
        self.loaded.append(sql)
        return QueryResult([], [], [])  # no marker: nothing to analyse

    async def insert_json_rows(self, table: str, rows: bytes) -> None:
        raise AssertionError("nothing to insert")


async def no_alert(alert: dict[str, Any]) -> None:
    raise AssertionError("no alert expected")


def test_a_full_batch_is_followed_by_another_scan_on_the_next_tick() -> None:
    store = ScriptedStore([ORPHAN_BATCH, ORPHAN_BATCH, 3])
    analytics = AutocompleteAnalytics(store, no_alert)  # type: ignore[arg-type]

    async def ticks(n: int) -> None:
        for _ in range(n):
            await analytics.retry_pending()

    asyncio.run(ticks(4))
    assert store.scans == 3  # ticks 1-3 scan (two full batches), tick 4 waits for its turn
    assert len(store.loaded) == 2 * ORPHAN_BATCH + 3  # each orphan's marker was looked up
    asyncio.run(ticks(ORPHAN_SCAN_EVERY - 4))
    assert store.scans == 3
    asyncio.run(ticks(1))  # the regular scan
    assert store.scans == 4


def test_the_scan_takes_the_oldest_crawls_first() -> None:
    assert "ORDER BY received_at" in ORPHANS_SQL and f"LIMIT {ORPHAN_BATCH}" in ORPHANS_SQL
