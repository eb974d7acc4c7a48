"""Idempotent batch writes: raw rows once per event_id, then what each family derives.

The agent acknowledges a batch only after ``write`` returns and its ``settled``
future (for extension events the per-install statistics, recomputed for several
batches at once) has completed, so an offset is committed only once everything
derived from it is in ClickHouse. ``write`` is safe to repeat for the same batch: a
replay inserts nothing new and recomputes the same aggregates. The sink knows no
family: raw rows go through ``RawWriter``, derived rows through the family's processor
(``streams.processors.for_families``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.store import StoreError, StoreUnavailable
from core.store.retry import until_done
from schemas.topics import Family
from streams.metrics import WorkerMetrics
from streams.processors import AfterStore
from streams.recompute.batch import DecodedBatch, decode_batch
from streams.sinks.raw_writer import RawWriter

log = logging.getLogger(__name__)


@dataclass
class WriteResult:
    inserted: int
    duplicates: int
    dead: int
    settled: asyncio.Future[None] | None = None


class ClickHouseSink:
    """Writes batches of one event family; retries until ClickHouse takes them."""

    def __init__(
        self,
        writer: RawWriter,
        processors: Mapping[str, AfterStore],
        max_backoff_s: float = 10.0,
        metrics: WorkerMetrics | None = None,
    ) -> None:
        self.metrics = metrics or writer.metrics
        self.writer = writer
        self.processors = processors
        self.max_backoff_s = max_backoff_s

    async def write(self, family: Family, values: Sequence[bytes]) -> WriteResult:
        """Store a batch; retry with backoff until it is stored, whatever went wrong."""
        started = time.perf_counter()
        batch = decode_batch(values, family.required)
        self.metrics.sink_batch.labels(family.raw_table).observe(len(values))
        result = await self._retrying(family, batch)
        self.metrics.sink_seconds.labels(family.raw_table).observe(time.perf_counter() - started)
        return result

    async def _retrying(self, family: Family, batch: DecodedBatch) -> WriteResult:
        return await until_done(
            lambda: self._write_once(family, batch),
            what=f"storing a {family.name} batch",
            count=lambda kind: self.metrics.sink_errors.labels(family.raw_table, kind).inc(),
            max_backoff_s=self.max_backoff_s,
        )

    async def _write_once(self, family: Family, batch: DecodedBatch) -> WriteResult:
        raw = await self.writer.write(family, batch)
        # the keys of copies deleted as later ones too: they may have been counted already
        settled = await self._derive(family, [*batch.events, *raw.later_copies])
        return WriteResult(raw.inserted, raw.duplicates, raw.dead, settled)

    async def _derive(self, family: Family, events: Sequence[dict[str, Any]]) -> asyncio.Future[None] | None:
        """Derived rows of a stored batch. A store failure retries the batch; anything else
        is a data problem (the raw rows are stored, and a replay or the next event of the same
        key recomputes them), so it is logged and counted instead of blocking the partition."""
        processor = self.processors.get(family.name)
        if processor is None or not events:
            return None
        try:
            return await processor.after_store(events)
        except (StoreError, StoreUnavailable):
            raise
        except Exception:
            self.metrics.sink_errors.labels(family.raw_table, "analytics").inc()
            log.exception("deriving %s statistics failed for a stored batch; the batch is kept", family.name)
            return None
