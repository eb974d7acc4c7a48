"""Erase a volunteer's install: every row of it, from every raw and derived table.

A volunteer who leaves can have what their extension sent erased (issue 35), from the popup
or by the operator (``auditstream participants erase``). The order matters, because the
worker keeps storing while an erasure runs:

1. The install is marked erased (``erased_installs``, by the SHA-256 of its id). The worker
   looks each batch's installs up there in the same store step as its insert
   (``schemas/erased_installs.py``), so from here on none of its events is stored again: neither
   those still in the broker or in an ingest replay buffer nor a client's later retry.
2. Its rows are counted and deleted from every table keyed by install (raw events, onboarding
   answers, dead letters, the per-install slices, days and study-wide sums). A worker step
   that stored some of its events before the mark ran before these deletes (the store runs
   one write at a time), so they go too.
3. What sums over installs is recomputed from the remaining raw rows, for each day the
   install had events on, as a bulk import does (``BulkImporter.recompute_day``: the minute
   aggregate, whose rows of that day are deleted first, the hours' replicate sums with
   tombstones for what is gone), then per study the installs whose closed sums went stale
   and the stored looks of the sequential test.
4. After ``settle_s`` (a worker statement that read the install's rows before the deletes
   may write after them: the store runs the worker's derived statements beside ours), the
   per-install deletes and step 3 run again.

The receipt (also a row of ``erasure_log``) names the install by its hash only, with the
rows removed per table.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from core.store import Store
from schemas.erased_installs import TABLE as ERASED
from schemas.erased_installs import install_hash
from schemas.sql import quote
from streams.bulk_import import DAY_S, BulkImporter, Span
from studies.arrangement.write import clicks_by_rank

LOG_TABLE = "erasure_log"
RAW_TABLES = ("raw_extension_events", "raw_install_profiles")
PER_INSTALL_DERIVED = (
    "agg_arrangement_10s",
    "agg_arrangement_install",
    "agg_arrangement_install_subset",
    "agg_arrangement_install_closed",
)
"""Derived tables with a row per install (the others sum over installs, and are recomputed)."""
DEAD_LETTER_TOPICS = ("extension", "panel")
SETTLE_S = 8.0
"""How long the second pass waits: longer than the worker's deferred statistics take from
their read to their write (the hourly sums settle every 5 s)."""
REQUESTERS = ("operator", "volunteer")


def dead_letter_match(install_id: str) -> str:
    """Dead letters of the extension's topics that carry the install's id (as ingest writes it)."""
    topics = [f"endsWith(topic, {quote('.' + t)})" for t in DEAD_LETTER_TOPICS]
    needle = quote(f'"install_id":"{install_id}"')
    return f"(({' OR '.join(topics)}) AND position(payload, {needle}) > 0)"


@dataclass
class Receipt:
    """What an erasure did: the answer the popup shows and a row of ``erasure_log``."""

    erasure_id: str
    install_hash: str
    requested_by: str
    started_at: str
    finished_at: str = ""
    rows_removed: dict[str, int] = field(default_factory=dict)
    key_hashes: list[str] = field(default_factory=list)
    """The install's erasure key hashes (its onboarding answers'): kept in the log only."""

    def to_json(self) -> dict[str, Any]:
        return {
            "erasure_id": self.erasure_id,
            "install_hash": self.install_hash,
            "requested_by": self.requested_by,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "rows_removed": dict(sorted(self.rows_removed.items())),
            "total_rows_removed": sum(self.rows_removed.values()),
        }

    def log_row(self) -> dict[str, Any]:
        row = self.to_json()
        del row["total_rows_removed"]
        return {**row, "erasure_keys_sha256": self.key_hashes}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


RestoreLooks = Callable[[str, str], Awaitable[None]]


class Eraser:
    """Runs erasures against the store, one at a time (each recomputes shared rows)."""

    def __init__(self, store: Store, restore_looks: RestoreLooks, settle_s: float = SETTLE_S) -> None:
        self.store = store
        self.importer = BulkImporter(store)
        self.restore_looks = restore_looks
        self.settle_s = settle_s
        self._lock = asyncio.Lock()

    async def erase(self, install_id: str, requested_by: str) -> Receipt:
        if requested_by not in REQUESTERS:
            raise ValueError(f"requested_by is one of {REQUESTERS}")
        async with self._lock:
            return await self._erase(install_id, requested_by)

    async def _erase(self, install_id: str, requested_by: str) -> Receipt:
        receipt = Receipt(str(uuid.uuid4()), install_hash(install_id), requested_by, _now())
        q = quote(install_id)
        await self.store.execute(
            f"INSERT INTO {ERASED} (install_hash, erasure_id, erased_at) "
            f"SELECT {quote(receipt.install_hash)}, {quote(receipt.erasure_id)}, now64(3)"
        )
        spans = await self._spans(q)
        keys = await self.store.query(
            "SELECT DISTINCT erasure_key_sha256 FROM raw_install_profiles "
            f"WHERE install_id = {q} AND erasure_key_sha256 != ''"
        )
        receipt.key_hashes = sorted(str(r[0]) for r in keys.rows)
        await self._delete_per_install(q, receipt.rows_removed)
        await self._delete("dead_letters", dead_letter_match(install_id), receipt.rows_removed)
        await self._recompute(spans)
        # the second pass: what the worker derived from rows it read before the deletes
        await asyncio.sleep(self.settle_s)
        rederived: dict[str, int] = {}  # rows of what the receipt already counts, derived again
        await self._delete_per_install(q, rederived, tables=PER_INSTALL_DERIVED)
        await self._recompute(spans)
        receipt.finished_at = _now()
        await self.store.insert_json_rows(LOG_TABLE, _log_line(receipt))
        return receipt

    async def _recompute(self, spans: set[Span]) -> None:
        """Each day's minute aggregate (its rows deleted first: a slice left with no event
        would keep its old row), slices and hourly sums, then each study's installs and looks."""
        for span in sorted(spans):
            lo, hi = span.day_start, span.day_start + DAY_S
            await self.store.execute(
                f"DELETE FROM {clicks_by_rank.TABLE} WHERE experiment_id = {quote(span.experiment_id)} "
                f"AND engine = {quote(span.engine)} AND window_start >= toDateTime({lo}, 'UTC') "
                f"AND window_start < toDateTime({hi}, 'UTC')"
            )
            await self.importer.recompute_day(span)
        for experiment_id, engine in sorted({(s.experiment_id, s.engine) for s in spans}):
            await self.importer.recompute_installs(experiment_id, engine)
            await self.restore_looks(experiment_id, engine)

    async def _spans(self, q: str) -> set[Span]:
        """The days the install has rows on, in the raw events or in any per-install table."""
        sources = [
            f"SELECT experiment_id, engine, toUInt32(toStartOfDay(received_at)) AS d "
            f"FROM raw_extension_events WHERE install_id = {q}",
            f"SELECT experiment_id, engine, toUInt32(toStartOfDay(slice_start)) AS d "
            f"FROM agg_arrangement_10s WHERE install_id = {q}",
        ]
        result = await self.store.query(f"SELECT DISTINCT * FROM ({' UNION ALL '.join(sources)})")
        return {Span(str(e), str(g), int(d)) for e, g, d in result.rows}

    async def _delete_per_install(
        self, q: str, removed: dict[str, int], tables: tuple[str, ...] = (*RAW_TABLES, *PER_INSTALL_DERIVED)
    ) -> None:
        for table in tables:
            await self._delete(table, f"install_id = {q}", removed)

    async def _delete(self, table: str, where: str, removed: dict[str, int]) -> None:
        count = int((await self.store.query(f"SELECT count() FROM {table} WHERE {where}")).rows[0][0])
        if count:
            await self.store.execute(f"DELETE FROM {table} WHERE {where}")
        removed[table] = removed.get(table, 0) + count


def _log_line(receipt: Receipt) -> bytes:
    row = receipt.log_row()
    for name in ("started_at", "finished_at"):
        row[name] = row[name].replace("T", " ").rstrip("Z")
    return orjson.dumps(row)
