"""Idempotent batch writes: raw rows once per event_id, then exact aggregates.

The agent acknowledges a batch only after ``write`` returns and its ``settled``
future (the per-install statistics, recomputed for several batches at once) has
completed, so an offset is committed only once everything derived from it is in
ClickHouse. ``write`` is safe to repeat for the same batch: a replay inserts
nothing new and recomputes the same aggregates.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from prometheus_client import Counter, Histogram

from analytics.stats.autocomplete_shocks import ShockRule
from core.store import Store, StoreError, StoreUnavailable
from schemas.sql import quote
from schemas.topics import AUTOCOMPLETE, EXTENSION, SERP, Family
from streams.detectors.identification import IdentificationRule, identification_alert, is_spike, window_sql
from streams.detectors.srm import srm_alert
from streams.metrics import count_stored
from streams.processors.arrangement_rollup import ArrangementRollup
from streams.processors.autocomplete_crawls import AutocompleteAnalytics
from streams.processors.personalization_rounds import PersonalizationRounds
from streams.sinks.webhook import post_alert
from streams.transforms import clicks_by_rank
from streams.transforms.batch import DecodedBatch, decode_batch, slice_keys

log = logging.getLogger(__name__)

SINK_ROWS = Counter("auditstream_sink_rows_total", "Rows written to raw tables", ["table", "outcome"])
SINK_SECONDS = Histogram(
    "auditstream_sink_batch_seconds", "Time to store one batch, retries included", ["table"]
)
SINK_BATCH = Histogram(
    "auditstream_sink_batch_events",
    "Events per sink batch",
    ["table"],
    buckets=(1, 10, 50, 100, 500, 1000, 2000, 5000, 10000),
)
SINK_ERRORS = Counter("auditstream_sink_errors_total", "Failed store attempts (retried)", ["table", "kind"])

ID_CHUNK = 5000  # event ids per lookup (~200 KB of SQL), inside max_query_size
ALERTS = Counter("auditstream_alerts_raised_total", "Alerts raised by stream detectors", ["kind"])


@dataclass
class WriteResult:
    inserted: int
    duplicates: int
    dead: int
    settled: asyncio.Future[None] | None = None
    """Completes when the batch's deferred statistics are stored (None: nothing deferred)."""


class ClickHouseSink:
    """Writes batches of one event family; retries until ClickHouse takes them."""

    def __init__(
        self,
        store: Store,
        dedup_horizon_days: int = 7,
        max_backoff_s: float = 10.0,
        publish_alert: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        estimators: bool = True,
        rollup_interval_s: float = 1.0,
        shock_rule: ShockRule | None = None,
        round_wait_s: float = 600.0,
        webhook_url: str = "",
    ) -> None:
        self.store = store
        self.horizon_days = dedup_horizon_days
        self.max_backoff_s = max_backoff_s
        self.publish_alert = publish_alert
        self.srm_pending: set[str] = set()
        self.estimators = estimators
        self.rollup = ArrangementRollup(store, rollup_interval_s, max_backoff_s, self._srm_due)
        self.autocomplete = AutocompleteAnalytics(store, self._raise_once, shock_rule)
        self.personalization = PersonalizationRounds(store, round_wait_s)
        self.webhook_url = webhook_url
        self.identification_rule = IdentificationRule()
        self.alert_lock = asyncio.Lock()

    async def write(self, family: Family, values: Sequence[bytes]) -> WriteResult:
        """Store a batch; retry with backoff until it is stored, whatever went wrong."""
        started = time.perf_counter()
        batch = decode_batch(values, family.required)
        SINK_BATCH.labels(family.raw_table).observe(len(values))
        result = await self._retrying(family, batch)
        SINK_SECONDS.labels(family.raw_table).observe(time.perf_counter() - started)
        return result

    async def _retrying(self, family: Family, batch: DecodedBatch) -> WriteResult:
        delay = 0.2
        while True:
            try:
                return await self._write_once(family, batch)
            except StoreUnavailable as exc:
                SINK_ERRORS.labels(family.raw_table, "unavailable").inc()
                log.warning("store unavailable, retrying in %.1fs: %s", delay, exc)
            except Exception:
                # A statement of ours failed, or a bug: not the data (refused rows are
                # dead-lettered). Keep the batch unacknowledged and retry, loudly, rather
                # than drop or skip it.
                SINK_ERRORS.labels(family.raw_table, "error").inc()
                log.exception("storing a %s batch failed; retrying in %.1fs", family.name, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_backoff_s)

    async def _existing_ids(self, family: Family, batch: DecodedBatch) -> set[str]:
        """Event ids of the batch already stored (client retries and replays)."""
        if not batch.events:
            return set()
        oldest = min(e["received_at"] for e in batch.events)
        found: set[str] = set()
        for start in range(0, len(batch.events), ID_CHUNK):
            chunk = batch.events[start : start + ID_CHUNK]
            ids = ", ".join(quote(e["event_id"]) for e in chunk)
            result = await self.store.query(
                f"SELECT toString(event_id) FROM {family.raw_table} "
                f"WHERE received_at >= toDateTime64({quote(oldest)}, 3, 'UTC') "
                f"- INTERVAL {self.horizon_days} DAY AND event_id IN ({ids})"
            )
            found.update(r[0] for r in result.rows)
        return found

    async def _write_once(self, family: Family, batch: DecodedBatch) -> WriteResult:
        existing = await self._existing_ids(family, batch)
        fresh = [
            line for e, line in zip(batch.events, batch.lines, strict=True) if e["event_id"] not in existing
        ]
        dead = list(batch.rejects)
        if fresh:
            try:
                await self.store.insert_json_rows(family.raw_table, b"\n".join(fresh))
            except StoreError:
                dead += await self._insert_one_by_one(family, fresh)
        if dead:
            await self._dead_letter(family, dead)
        count_stored(family.name, (e for e in batch.events if e["event_id"] not in existing))
        settled = None
        if family is EXTENSION and batch.events:
            keys = slice_keys(batch.events, clicks_by_rank.SLICE_S)
            await self.store.execute(clicks_by_rank.recompute_sql(keys))
            if self.estimators:
                settled = self.rollup.mark(keys)
        if family is AUTOCOMPLETE:
            completed = [e for e in batch.events if e.get("type") == "crawl_completed"]
            if completed:
                await self._analytics(family, self.autocomplete.crawls_completed(completed))
        if family is SERP and batch.events:
            await self._analytics(family, self.personalization.snapshots_stored(batch.events))
        n_dead = len(dead)
        inserted = len(fresh) - (n_dead - len(batch.rejects))
        SINK_ROWS.labels(family.raw_table, "inserted").inc(inserted)
        SINK_ROWS.labels(family.raw_table, "duplicate").inc(len(existing))
        SINK_ROWS.labels(family.raw_table, "dead_letter").inc(n_dead)
        return WriteResult(inserted=inserted, duplicates=len(existing), dead=n_dead, settled=settled)

    async def _analytics(self, family: Family, work: Awaitable[None]) -> None:
        """Derived tables of a stored batch. A store failure retries the batch; anything else
        is a data problem (the raw rows are stored, and a replay or the next event of the same
        key recomputes them), so it is logged and counted instead of blocking the partition."""
        try:
            await work
        except (StoreError, StoreUnavailable):
            raise
        except Exception:
            SINK_ERRORS.labels(family.raw_table, "analytics").inc()
            log.exception("deriving %s statistics failed for a stored batch; the batch is kept", family.name)

    def _srm_due(self, experiments: set[str]) -> None:
        self.srm_pending.update(experiments)

    async def check_srm(self) -> None:
        """Re-test the allocation of every experiment touched since the last check.

        Runs on a timer (streams.app), not per batch, so a burst of batches costs one
        check and the last batch of a burst is always checked.
        """
        due, self.srm_pending = sorted(self.srm_pending), set()
        if not due:
            return
        try:
            await self._check_srm(due)
        except (StoreError, StoreUnavailable):
            self.srm_pending.update(due)  # try again on the next tick
            log.warning("SRM check failed; retrying on the next tick", exc_info=True)

    async def _check_srm(self, due: list[str]) -> None:
        listed = ", ".join(quote(e) for e in due)
        configs = await self.store.query(
            f"SELECT experiment_id, arms, burn_in_days FROM experiments "
            f"WHERE experiment_id IN ({listed}) AND status = 'running'"
        )
        for experiment_id, arms, burn_in in configs.rows:
            units = await self.store.query(
                "SELECT engine, arm, sum(units) FROM arrangement_install_day "
                f"WHERE experiment_id = {quote(experiment_id)} AND identified = 1 "
                f"AND install_age_days >= {int(burn_in)} GROUP BY engine, arm"
            )
            by_engine: dict[str, dict[str, int]] = {}
            for engine, arm, n in units.rows:
                by_engine.setdefault(engine, {})[arm] = int(n)
            for engine, counts in by_engine.items():
                alert = srm_alert(experiment_id, engine, counts, arms, datetime.now(UTC))
                if alert is not None:
                    await self._raise_once(alert)

    async def check_identification(self) -> None:
        """Timer: raise an alert for each engine whose identification just collapsed.

        Takes no arguments: faust passes the app to a timer function that accepts one.
        """
        rule = self.identification_rule
        try:
            result = await self.store.query(window_sql(rule))
            for engine, bad, total, base_bad, base_total in result.rows:
                recent, baseline = (int(bad), int(total)), (int(base_bad), int(base_total))
                if is_spike(recent, baseline, rule):
                    await self._raise_once(
                        identification_alert(engine, recent, baseline, rule, datetime.now(UTC))
                    )
        except (StoreError, StoreUnavailable):
            log.warning("identification check failed; retrying on the next tick", exc_info=True)

    async def _raise_once(self, alert: dict[str, Any]) -> None:
        async with self.alert_lock:  # detectors run concurrently: check and insert as one step
            await self._raise_once_locked(alert)

    async def _raise_once_locked(self, alert: dict[str, Any]) -> None:
        known = await self.store.query(
            f"SELECT count() FROM alerts WHERE alert_id = {quote(alert['alert_id'])}"
        )
        if known.rows and int(known.rows[0][0]) > 0:
            return
        log.warning("alert: %s", alert["summary"])
        await self.store.insert_json_rows("alerts", orjson.dumps(alert))
        ALERTS.labels(alert["kind"]).inc()
        if self.publish_alert is not None:
            await self.publish_alert(alert)
        if self.webhook_url:
            await post_alert(self.webhook_url, alert)

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
                {
                    "topic": family.name,
                    "reason": reason,
                    "payload": payload.decode("utf-8", "replace"),
                }
            )
            for payload, reason in dead
        )
        await self.store.insert_json_rows("dead_letters", rows)
