"""The faust app: one agent per event family, batches into the ClickHouse sink.

No I/O happens at import; ``create_app`` builds everything from the settings.
State lives in ClickHouse, not in faust tables (docs/architecture.md): tansu never
compacts changelogs and faust's RocksDB tables do not survive its offsets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import faust
import orjson

from core.settings import Settings
from core.store import Store
from schemas.topics import ALERTS_SUFFIX, AUTOCOMPLETE, FAMILIES, SERP, WORKER_GROUP, Family
from streams.bulk_import import shock_rule_of
from streams.detectors.alerts import AlertService
from streams.detectors.identification import IdentificationCheck
from streams.detectors.srm import SrmCheck
from streams.metrics import WorkerMetrics
from streams.processors import for_families
from streams.processors.arrangement_rollup import ArrangementRollup
from streams.processors.autocomplete_crawls import AutocompleteAnalytics
from streams.processors.personalization_rounds import PersonalizationRounds
from streams.sinks.clickhouse import ClickHouseSink
from streams.sinks.raw_writer import RawWriter
from studies.arrangement.write import looks, quintile_rekey

log = logging.getLogger(__name__)

APP_ID = WORKER_GROUP
CHECK_EVERY_S = 5.0
"""How often the SRM check and the autocomplete retry run (seconds)."""
LAG_EVERY_S = 5.0
"""How often the consumer-lag gauge is refreshed (seconds)."""
PERSONALIZATION_EVERY_S = 2.0
LOOKS_EVERY_S = 300.0
"""How often the worker extends the decision line's stored looks (a day's look is due once
an hour after midnight; readers compute what is not stored yet, so a late tick costs only
time)."""
"""How often waiting personalization rounds are settled (seconds)."""
MAX_BACKOFF_S = 10.0
"""Longest pause between retries of a batch or a recompute."""


def bootstrap_url(bootstrap: str) -> str:
    return ";".join(f"kafka://{h.strip()}" for h in bootstrap.split(",") if h.strip())


def _family_agent(
    family: Family, sink: ClickHouseSink, settings: Settings
) -> Callable[[Any], Coroutine[Any, Any, None]]:
    async def consume(stream: Any) -> None:
        """Hand batches to a writer task; acknowledge each only once it is stored.

        noack_take leaves acknowledgement to us, so a crash before a batch is stored
        replays it instead of losing it. The writer runs beside the consumer, so the
        next batch fills while the previous one is written; the bounded queue stops
        consumption when ClickHouse falls behind.
        """
        queue: asyncio.Queue[list[Any]] = asyncio.Queue(maxsize=1)
        writer = asyncio.create_task(_write_batches(family, sink, stream, queue))
        try:
            events: list[Any]
            async for events in stream.noack_take(settings.batch_size, within=settings.batch_within_s):
                if writer.done():
                    writer.result()  # re-raise what stopped the writer
                await queue.put(events)
        finally:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer

    consume.__name__ = f"store_{family.name}"
    return consume


MAX_UNSETTLED = 64
"""Stored batches that may wait for their deferred statistics before the writer pauses (the
per-hour replicate sums settle every ``hourly_interval_s``, 5 s by default: at 4 batches a
second that is 20 waiting)."""


async def _write_batches(
    family: Family, sink: ClickHouseSink, stream: Any, queue: asyncio.Queue[list[Any]]
) -> None:
    """Store batches in order; acknowledge each once it and its deferred statistics are stored."""
    unsettled: asyncio.Queue[tuple[list[Any], asyncio.Future[None] | None]] = asyncio.Queue(MAX_UNSETTLED)
    acker = asyncio.create_task(_ack_when_settled(stream, unsettled))
    try:
        while True:
            events = await queue.get()
            result = await sink.write(family, [e.value for e in events])  # retries until stored
            if acker.done():
                acker.result()
            await unsettled.put((events, result.settled))
    finally:
        acker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await acker


async def _ack_when_settled(
    stream: Any, unsettled: asyncio.Queue[tuple[list[Any], asyncio.Future[None] | None]]
) -> None:
    while True:
        events, settled = await unsettled.get()
        if settled is not None:
            await settled
        for event in events:
            await stream.ack(event)


def guarded(
    check: Callable[[], Coroutine[Any, Any, None]], metrics: WorkerMetrics
) -> Callable[[], Coroutine[Any, Any, None]]:
    """A periodic check that logs its failures instead of crashing the worker.

    faust stops the whole app when a timer raises; a detector that fails once should
    only miss a tick, while the agents keep storing events. The check runs as its own
    task, so the timer returns at once (faust warns when a timer overruns its interval),
    and a tick that comes while the previous run is still going is skipped, never
    stacked. The wrapper also takes no arguments, so faust does not pass the app in.
    """
    running: list[asyncio.Task[None]] = []

    async def run() -> None:
        try:
            await check()
        except asyncio.CancelledError:
            raise
        except Exception:
            metrics.checks.labels(check.__name__, "error").inc()
            log.exception("periodic check %s failed; trying again on the next tick", check.__name__)
        else:
            metrics.checks.labels(check.__name__, "ok").inc()

    async def tick() -> None:
        if running and not running[0].done():
            metrics.checks.labels(check.__name__, "skipped").inc()
            return
        running[:] = [asyncio.create_task(run(), name=f"check-{check.__name__}")]

    tick.__name__ = check.__name__
    return tick


def create_app(settings: Settings, store: Store, metrics: WorkerMetrics | None = None) -> faust.App:
    metrics = metrics or WorkerMetrics.create()
    app = faust.App(
        APP_ID,
        broker=bootstrap_url(settings.kafka_bootstrap),
        value_serializer="raw",
        key_serializer="raw",
        web_enabled=False,
        datadir=str(settings.data_dir / "faust"),
        store="memory://",
        topic_partitions=settings.partitions,
        topic_allow_declare=False,
        broker_session_timeout=10.0,
        broker_heartbeat_interval=1.0,
        broker_commit_interval=1.0,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        stream_buffer_maxsize=settings.batch_size * 2,
    )
    alerts_topic = app.topic(
        f"{settings.topic_prefix}.{ALERTS_SUFFIX}", value_serializer="raw", key_serializer="raw"
    )

    async def publish_alert(alert: dict[str, Any]) -> None:
        await alerts_topic.send(key=alert["subject"].encode(), value=orjson.dumps(alert))

    shock_rule = shock_rule_of(settings)
    alerts = AlertService(store, publish_alert, settings.alert_webhook_url, metrics)
    srm = SrmCheck(store, alerts)
    rollup = ArrangementRollup(
        store, settings.rollup_interval_s, MAX_BACKOFF_S, srm.due, metrics, settings.hourly_interval_s
    )
    autocomplete_topic = AUTOCOMPLETE.topic(settings.topic_prefix)

    def autocomplete_positions() -> dict[int, tuple[int | None, int | None]]:
        """(high watermark, committed offset) of each autocomplete partition assigned here:
        a round's shock waits until the commits pass the watermarks seen once it settled."""
        consumer = app.consumer
        committed = getattr(consumer, "_committed_offset", {})  # faust has no public accessor
        return {
            tp.partition: (consumer.highwater(tp), committed.get(tp))
            for tp in consumer.assignment()
            if tp.topic == autocomplete_topic
        }

    processors = for_families(
        store,
        alerts,
        rollup if settings.estimators else None,
        shock_rule,
        settings.personalization_round_wait_s,
        settings.shock_settle_s,
        autocomplete_positions,
    )
    sink = ClickHouseSink(RawWriter(store, settings.dedup_horizon_days, metrics), processors, MAX_BACKOFF_S)
    autocomplete = processors[AUTOCOMPLETE.name]
    personalization = processors[SERP.name]
    assert isinstance(autocomplete, AutocompleteAnalytics)
    assert isinstance(personalization, PersonalizationRounds)

    async def stop_rollup(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        await rollup.close()

    app.on_before_shutdown.connect(stop_rollup)

    app.timer(CHECK_EVERY_S, name="srm_check")(guarded(srm.check_srm, metrics))
    app.timer(settings.identification_check_s, name="identification_check")(
        guarded(IdentificationCheck(store, alerts).check_identification, metrics)
    )

    async def keep_decision_looks() -> None:
        await looks.keep_looks(store)

    app.timer(LOOKS_EVERY_S, name="decision_looks")(guarded(keep_decision_looks, metrics))
    if settings.estimators:

        async def keep_quintiles() -> None:
            """An experiment's new quintile boundaries: its per-install rows recomputed once."""
            await quintile_rekey.keep_quintiles(store)

        app.timer(CHECK_EVERY_S, name="quintile_rekeys")(guarded(keep_quintiles, metrics))
    app.timer(CHECK_EVERY_S, name="autocomplete_retry")(guarded(autocomplete.retry_pending, metrics))
    app.timer(PERSONALIZATION_EVERY_S, name="personalization_rounds")(
        guarded(personalization.expire_waiting, metrics)
    )

    async def measure_lag() -> None:
        """Lag per assigned partition from the fetch responses' high watermark (no extra
        requests: tansu's ListOffsets is unreliable) and faust's committed offset."""
        consumer = app.consumer
        lag = {}
        assignment = consumer.assignment()
        for tp in assignment:
            highwater = consumer.highwater(tp)
            committed = getattr(consumer, "_committed_offset", {}).get(tp)  # faust has no public accessor
            if highwater is not None:
                lag[(tp.topic, tp.partition)] = max(0, highwater - (committed or 0))
        # replaces every partition's value: revoked partitions disappear
        metrics.set_lag(lag, [(tp.topic, tp.partition) for tp in assignment])

    app.timer(LAG_EVERY_S, name="consumer_lag")(guarded(measure_lag, metrics))

    for family in FAMILIES:
        topic = app.topic(
            family.topic(settings.topic_prefix),
            value_type=bytes,
            value_serializer="raw",
            key_serializer="raw",
            partitions=settings.partitions,
        )
        app.agent(topic, name=f"store_{family.name}")(_family_agent(family, sink, settings))
    return app
