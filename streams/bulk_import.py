"""Bulk import: the worker's write path for a whole file at once, without Kafka.

An earlier study's export or a paper's published data arrives as large chunks of
validated events (``ingest/importing.py``). Each chunk is stored like a stream batch,
once per ``event_id`` (``RawWriter``: already-stored ids are dropped, so importing a
file twice stores nothing the second time). The derived tables are then recomputed in
bulk, one experiment, engine and day at a time, from the deduplicated raw rows, rather
than per chunk: the spans a file touched are returned with each chunk and recomputed
once at the end. Recomputing is idempotent, so an import that stopped half-way is
finished by importing the same file again.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from core.store import Store, StoreError
from schemas.sql import quote
from schemas.topics import EXTENSION, Family
from schemas.wire import parse_received_at
from streams.recompute import arrangement_stats, clicks_by_rank
from streams.sinks.raw_writer import RawWrite, RawWriter

DAY_S = 86400
LOOKUP_MARGIN_S = 3600
"""A chunk's ids are looked up within its received_at range widened by an hour each way:
an event has one received_at per file (its own, else its sent_at), and an event first
ingested live was received within seconds of being sent."""

IMPORTABLE_FAMILIES = frozenset({EXTENSION.name, "panel"})
"""Families whose derived tables a bulk import recomputes (extension events) or that have
none (the panel's install profiles). Crawler families go through ``POST /v1/events``."""


@dataclass(frozen=True, order=True)
class Span:
    """One experiment, engine and UTC day whose derived rows an import must recompute."""

    experiment_id: str
    engine: str
    day_start: int  # unix seconds, a multiple of 86400

    def to_json(self) -> dict[str, Any]:
        return {"experiment_id": self.experiment_id, "engine": self.engine, "day_start": self.day_start}


def spans_of(events: Iterable[Mapping[str, Any]]) -> set[Span]:
    """The days of each experiment and engine that extension events fall on."""
    out = set()
    for e in events:
        ts = int(parse_received_at(e["received_at"]).timestamp())
        out.add(Span(e["experiment_id"], e["engine"], ts - ts % DAY_S))
    return out


class _RangedRawWriter(RawWriter):
    """Looks a chunk's ids up in its own time range (both ends), however old it is: the
    fallback for a chunk ClickHouse refuses as a whole, which is then isolated row by row."""

    async def _existing_ids(self, family: Family, batch: Any) -> set[str]:
        if not batch.events:
            return set()
        where = _in_range(*_time_range(batch.events))
        found: set[str] = set()
        for start in range(0, len(batch.events), LOOKUP_CHUNK):
            ids = ", ".join(quote(e["event_id"]) for e in batch.events[start : start + LOOKUP_CHUNK])
            result = await self.store.query(
                f"SELECT toString(event_id) FROM {family.raw_table} WHERE {where} AND event_id IN ({ids})"
            )
            found.update(r[0] for r in result.rows)
        return found


LOOKUP_CHUNK = 5000


def _time_range(events: list[dict[str, Any]]) -> tuple[int, int]:
    times = [int(parse_received_at(e["received_at"]).timestamp()) for e in events]
    return min(times) - LOOKUP_MARGIN_S, max(times) + LOOKUP_MARGIN_S + 1


def _in_range(lo: int, hi: int) -> str:
    return f"received_at >= toDateTime64({lo}, 3, 'UTC') AND received_at < toDateTime64({hi}, 3, 'UTC')"


class BulkImporter:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.raw = _RangedRawWriter(store)

    async def write(self, family: Family, events: list[dict[str, Any]], lines: list[bytes]) -> RawWrite:
        """Store one chunk of one family's canonical rows, once per event id.

        The chunk goes into a staging table in one insert, and ClickHouse copies over the
        rows whose ids the raw table does not hold yet (in the chunk's time range): no ids
        travel as SQL text, and the copy is native. A chunk ClickHouse refuses goes through
        the stream's path instead, which keeps the rows it refuses in ``dead_letters``.
        """
        if not events:
            return RawWrite(0, 0, 0)
        staging = f"import_staging_{uuid.uuid4().hex}"
        raw, where = family.raw_table, _in_range(*_time_range(events))
        await self.store.execute(f"CREATE TABLE {staging} AS {raw} ENGINE = Memory")
        try:
            try:
                await self.store.insert_json_rows(staging, b"\n".join(lines))
            except StoreError:
                from streams.recompute.batch import DecodedBatch

                return await self.raw.write(family, DecodedBatch(events=events, lines=lines))
            new = (
                f"SELECT * FROM {staging} WHERE event_id NOT IN "
                f"(SELECT event_id FROM {raw} WHERE {where}) LIMIT 1 BY event_id"
            )
            inserted = int((await self.store.query(f"SELECT count() FROM ({new})")).rows[0][0])
            await self.store.execute(f"INSERT INTO {raw} {new}")
        finally:
            await self.store.execute(f"DROP TABLE IF EXISTS {staging}")
        return RawWrite(inserted=inserted, duplicates=len(events) - inserted, dead=0)

    async def recompute_day(self, span: Span) -> None:
        """The minute aggregate and the per-install 10-second slices of one day."""
        lo, hi = span.day_start, span.day_start + DAY_S
        await self.store.execute(clicks_by_rank.range_sql(span.experiment_id, span.engine, lo, hi))
        await self.store.execute(arrangement_stats.slices_range_sql(span.experiment_id, span.engine, lo, hi))

    async def recompute_installs(self, experiment_id: str, engine: str) -> None:
        """The study-wide per-install rows, once every day of the import is recomputed; then
        the derived tables are merged down, so reads with FINAL find one part per partition
        and skip the merge (at 10M events a report's statements went from ~2 s to ~0.3 s)."""
        await self.store.execute(arrangement_stats.experiment_installs_sql(experiment_id, engine))
        for table in ("agg_arrangement_install", "agg_arrangement_10s", "agg_clicks_by_rank_10s"):
            await self.store.execute(f"OPTIMIZE TABLE {table} FINAL")
