"""Raw rows, once per event_id: decode, drop what is already stored, insert, dead-letter.

``write`` is safe to repeat for the same batch: a replay finds every event id stored
and inserts nothing. Rows ClickHouse refuses are isolated one by one and kept in
``dead_letters`` with the reason, so the rest of the batch still lands. Against a
ClickHouse server, where another writer may have stored an event between this one's
lookup and insert, the copies after the first are then deleted (``later_copies.py``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from core.store import Store, StoreError
from core.store.base import unfound
from schemas.erased_installs import erased_lookup_sql
from schemas.sql import quote, split_literal
from schemas.topics import Family
from streams.metrics import WorkerMetrics
from streams.recompute.batch import DecodedBatch
from streams.sinks.later_copies import delete_events, delete_later_copies, own_copies

log = logging.getLogger(__name__)

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ID_CHUNK = 5000  # event ids per lookup (~200 KB of SQL), inside max_query_size


def id_set_sql(ids: list[str]) -> str:
    """The inside of ``event_id IN (...)``: canonical UUIDs as one comma-joined string split in
    ClickHouse (parsed ~2x faster than a list of quoted literals), anything else quoted one
    by one, so an odd id is compared exactly as before."""
    if all(isinstance(i, str) and _UUID.fullmatch(i) for i in ids):
        return f"SELECT toUUID(arrayJoin({split_literal(ids)}))"
    return ", ".join(quote(str(i)) for i in ids)


@dataclass
class RawWrite:
    inserted: int
    duplicates: int
    dead: int
    later_copies: list[dict[str, Any]] = field(default_factory=list)
    """Copies of the batch's events stored after their first (by this writer or another at
    the same moment) and deleted: what they were counted in is recomputed with the batch."""


class RawWriter:
    def __init__(
        self, store: Store, dedup_horizon_days: int = 7, metrics: WorkerMetrics | None = None
    ) -> None:
        self.metrics = metrics or WorkerMetrics.create()
        self.store = store
        self.horizon_days = dedup_horizon_days

    async def write(self, family: Family, batch: DecodedBatch) -> RawWrite:
        rows = [(e["event_id"], line) for e, line in zip(batch.events, batch.lines, strict=True)]
        dead = list(batch.rejects)
        refused = False
        try:
            # the lookups and the insert as one step in the store, so an import of the same
            # events at the same moment cannot insert between them
            lookups = self._lookups(family, batch)
            existing = await self.store.insert_new_json_rows(family.raw_table, rows, lookups)
        except StoreError:  # a row ClickHouse refuses: find it, keep the rest
            existing, refused = await self._existing_ids(family, batch), True
        fresh = unfound(rows, existing)
        if refused:
            dead += await self._insert_one_by_one(family, fresh)
        later = await self._delete_later_copies(family, batch)
        # copies of this batch another writer stored first, and events of installs erased
        # since the lookup: this writer stored nothing of them
        lost = own_copies(later, {e["event_id"]: e["received_at"] for e in batch.events})
        gone = (lost | await self._delete_erased(family, batch)) - existing
        existing |= gone
        if dead:
            await self._dead_letter(family, dead)
        self.metrics.count_stored(family.name, (e for e in batch.events if e["event_id"] not in existing))
        n_dead = len(dead)
        inserted = len(fresh) - len(gone) - (n_dead - len(batch.rejects))
        self.metrics.sink_rows.labels(family.raw_table, "inserted").inc(inserted)
        self.metrics.sink_rows.labels(family.raw_table, "duplicate").inc(len(existing))
        self.metrics.sink_rows.labels(family.raw_table, "dead_letter").inc(n_dead)
        return RawWrite(inserted=inserted, duplicates=len(existing), dead=n_dead, later_copies=later)

    async def _delete_later_copies(self, family: Family, batch: DecodedBatch) -> list[dict[str, Any]]:
        # every id, those found stored too: a retry finds its own copies of a failed attempt
        ids = [e["event_id"] for e in batch.events]
        if not ids or self.store.one_writer:
            return []
        since = self._since(batch)
        chunks = [id_set_sql(ids[start : start + ID_CHUNK]) for start in range(0, len(ids), ID_CHUNK)]
        return await delete_later_copies(self.store, family.raw_table, since, chunks)

    async def _delete_erased(self, family: Family, batch: DecodedBatch) -> set[str]:
        """The batch's events of installs erased since its lookup, deleted. Against a server an
        erasure can mark an install after this writer looked the marks up and delete the
        install's rows before this insert lands; looked up again once the insert is
        acknowledged, the mark is seen (it came before the erasure's delete, which came
        before this insert), so no row of an erased install stays."""
        if self.store.one_writer or "install_id" not in family.required or not batch.events:
            return set()
        erased: set[str] = set()
        for sql in erased_lookup_sql(batch.events):
            erased.update(str(r[0]) for r in (await self.store.query(sql)).rows)
        await delete_events(self.store, family.raw_table, self._since(batch), sorted(erased))
        return erased

    def _since(self, batch: DecodedBatch) -> str:
        """Where a lookup finds an earlier copy: from the dedup horizon before the batch's
        oldest event on."""
        oldest = min(e["received_at"] for e in batch.events)
        return f"received_at >= toDateTime64({quote(oldest)}, 3, 'UTC') - INTERVAL {self.horizon_days} DAY"

    def _lookups(self, family: Family, batch: DecodedBatch) -> list[str]:
        """The queries that find the batch's event ids already stored (client retries and
        replays), a chunk of ids each, and those of erased installs (never stored again:
        ``streams/erasure.py``)."""
        if not batch.events:
            return []
        erased = erased_lookup_sql(batch.events) if "install_id" in family.required else []
        since = self._since(batch)
        out = []
        for start in range(0, len(batch.events), ID_CHUNK):
            out.append(
                f"SELECT toString(event_id) FROM {family.raw_table} WHERE {since} AND event_id IN "
                f"({id_set_sql([e['event_id'] for e in batch.events[start : start + ID_CHUNK]])})"
            )
        return [*out, *erased]

    async def _existing_ids(self, family: Family, batch: DecodedBatch) -> set[str]:
        """Event ids of the batch already stored (client retries and replays)."""
        found: set[str] = set()
        for sql in self._lookups(family, batch):
            found.update(r[0] for r in (await self.store.query(sql)).rows)
        return found

    async def _insert_one_by_one(self, family: Family, lines: list[bytes]) -> list[tuple[bytes, str]]:
        """Isolate the rows ClickHouse refuses so the rest of the batch still lands."""
        refused = []
        for line in lines:
            try:
                await self.store.insert_json_rows(family.raw_table, line)
            except StoreError as exc:
                refused.append((line, f"refused: {exc}"[:2000]))
        return refused

    async def _dead_letter(self, family: Family, dead: list[tuple[bytes, str]]) -> None:
        log.error("%d messages from %s went to dead_letters", len(dead), family.name)
        rows = b"\n".join(
            orjson.dumps(
                {"topic": family.name, "reason": reason, "payload": payload.decode("utf-8", "replace")}
            )
            for payload, reason in dead
        )
        await self.store.insert_json_rows("dead_letters", rows)
