"""The Kafka side of ingest: acks=all sends, a health probe, and fast failure.

aiokafka cannot start while the broker is down, and a send to a dead broker
waits for its full request timeout. So the producer starts in the background,
a probe tracks broker health, and requests fail fast with 503 while it is down.
A request whose sends partly failed also gets 503: the client retries with the
same event ids and the sink drops the copies (idempotent by event_id).

The embedded broker (tansu) keeps everything in memory: if it dies, events it had
acknowledged but the worker had not yet stored are gone from it. Ingest answered 202 for
them, so it keeps every acknowledged record until the worker's consumer group has
committed past it (the worker commits a batch only once ClickHouse stored it), and sends
every record still kept again when the broker comes back after an outage; the worker
drops the copies it already stored (deduplication by event_id). So a record answered 202
never depends on the broker's memory alone. What is kept is bounded: once the oldest
unstored record has waited ``unstored_limit_s`` (the worker cannot store: disk full, store
down) or the kept records reach ``replay_max_bytes``, intake refuses new events with 503
``storage_behind`` until the worker catches up (backpressure, never a silent drop).
With ``unstored_limit_s`` 0 (a durable, replicated Kafka) the worker's progress is not
read and records are kept for ``replay_window_s`` only, as the broker keeps them anyway.
Not protected: ingest and the broker dying together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.partitioner import murmur2

from core.errors import AuditstreamError

log = logging.getLogger(__name__)


BUNDLE_BYTES = 256 * 1024  # well under Kafka's default 1 MB message limit
PAUSE_FILE = "broker.pause"
"""In the run directory while the embedded supervisor replaces the broker."""


class BrokerUnavailable(AuditstreamError):
    """The events could not be acknowledged by Kafka; nothing should be reported accepted."""


class StorageBehind(AuditstreamError):
    """The worker has not stored what was accepted for too long: refuse more (backpressure)."""


class Paused(AuditstreamError):
    """The supervisor is replacing the broker (``pause_file`` exists): refuse for a moment."""


Record = tuple[str, bytes, bytes]
"""(topic, key, value) of one event."""

Marks = dict[tuple[str, int], int]
"""The last offset per (topic, partition) of the messages holding a request's records."""


@dataclass
class Entry:
    """The records of one acknowledged request, and where the broker put them (``None``: not
    known, e.g. sent before the broker lost its log; such an entry counts as unstored)."""

    at: float
    records: Sequence[Record]
    size: int
    marks: Marks | None


class Retained:
    """Acknowledged records kept to be sent again: until stored (``track_progress``), else for
    the last ``window_s`` seconds; at most ``max_bytes`` of values."""

    def __init__(
        self,
        window_s: float,
        max_bytes: int,
        clock: Callable[[], float] = time.monotonic,
        track_progress: bool = False,
    ) -> None:
        self.window_s, self.max_bytes, self._clock = window_s, max_bytes, clock
        self.track_progress = track_progress
        self._items: deque[Entry] = deque()
        self.bytes = 0
        self.dropped = 0
        """Records pushed out by the byte bound before their window ended (time window only:
        with progress tracking, intake refuses new events instead)."""

    def add(self, records: Sequence[Record], marks: Marks | None = None) -> None:
        if self.window_s <= 0 and not self.track_progress:
            return
        size = sum(len(v) for _, _, v in records)
        self._items.append(Entry(self._clock(), records, size, marks))
        self.bytes += size
        self.prune()

    def prune(self) -> None:
        if self.track_progress:
            return  # only the worker's progress frees a record (prune_stored)
        horizon = self._clock() - self.window_s
        while self._items and (self._items[0].at < horizon or self.bytes > self.max_bytes):
            entry = self._items.popleft()
            self.bytes -= entry.size
            if entry.at >= horizon:
                self.dropped += len(entry.records)

    def partitions(self) -> set[tuple[str, int]]:
        """The partitions whose progress decides what can be let go."""
        return {tp for e in self._items if e.marks for tp in e.marks}

    def prune_stored(self, committed: Marks) -> None:
        """Let go of every entry whose messages the worker's group committed past (stored)."""
        kept: deque[Entry] = deque()
        for entry in self._items:
            if entry.marks is not None and all(committed.get(tp, -1) > o for tp, o in entry.marks.items()):
                self.bytes -= entry.size
            else:
                kept.append(entry)
        self._items = kept

    def oldest_age(self) -> float:
        """Seconds the oldest kept (with progress tracking: unstored) record has waited."""
        return self._clock() - self._items[0].at if self._items else 0.0

    def forget_marks(self) -> list[Entry]:
        """Every entry, each now of unknown place: the broker lost its log."""
        for entry in self._items:
            entry.marks = None
        return list(self._items)

    def records(self) -> list[Record]:
        self.prune()
        return [r for e in self._items for r in e.records]

    def __len__(self) -> int:
        return sum(len(e.records) for e in self._items)


class EventProducer:
    def __init__(
        self,
        bootstrap: str,
        timeout_s: float = 5.0,
        probe_every_s: float = 1.0,
        replay_window_s: float = 120.0,
        replay_max_bytes: int = 256 * 1024 * 1024,
        worker_group: str | None = None,
        unstored_limit_s: float = 0.0,
        run_dir: Path | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.run_dir = run_dir
        """Where the embedded supervisor asks for a pause (``broker.pause``) and reads this
        process's state (``ingest-state-<pid>.json``) before it replaces the broker."""
        self.paused = False
        self._pause_task: asyncio.Task[None] | None = None
        self.worker_group = worker_group if unstored_limit_s > 0 else None
        self.unstored_limit_s = unstored_limit_s
        self.retained = Retained(
            replay_window_s, replay_max_bytes, track_progress=self.worker_group is not None
        )
        self._progress: AIOKafkaConsumer | None = None
        self._progress_task: asyncio.Task[None] | None = None
        self.progress_error = ""
        """Why the worker's progress could not be read last time ("" when it could)."""
        self.replayed = 0
        """Records sent again after broker outages (since start)."""
        self._outage = False
        self._replaying: asyncio.Task[None] | None = None
        self._acked: dict[tuple[object, object], int] = {}
        """The highest offset acknowledged per (topic, partition)."""
        self.timeout_s = timeout_s
        self.probe_every_s = probe_every_s
        self._producer: AIOKafkaProducer | None = None
        self._healthy = False
        self._task: asyncio.Task[None] | None = None
        self.last_error = "not connected yet"
        self._failing_since: float | None = None
        """When sends started failing (None while they succeed): a producer that cannot send
        for ``stuck_after_s`` although the cluster answers is replaced."""
        self._failed_at = 0.0
        """When a send last failed: only sends still failing count as stuck."""
        self.replaced = 0
        """Producers replaced because they could no longer send (since start)."""
        self.replaced_because = ""
        """Why the last one was."""
        self._partition_counts: dict[str, int] = {}
        self._partition_cache: dict[tuple[str, bytes], int] = {}
        self._pending: list[tuple[Sequence[tuple[str, bytes, bytes]], asyncio.Future[Marks]]] = []
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._settling: set[asyncio.Future[None]] = set()

    @property
    def ready(self) -> bool:
        return self._producer is not None and self._healthy

    @property
    def storage_behind(self) -> str:
        """Why intake must refuse new events while the worker catches up ("" when it need not)."""
        if self.worker_group is None:
            return ""
        age = self.retained.oldest_age()
        if age > self.unstored_limit_s:
            limit = self.unstored_limit_s
            return (
                f"an accepted event has waited {age:.0f} s to be stored (limit {limit:.0f} s): "
                "the worker cannot store (disk full? store down?)"
            )
        if self.retained.bytes >= self.retained.max_bytes:
            waiting, limit = self.retained.bytes, self.retained.max_bytes
            return f"{waiting} bytes of accepted events wait to be stored (limit {limit})"
        return ""

    def _new(self) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=2,
            max_batch_size=1024 * 1024,
            max_request_size=4 * 1024 * 1024,
            request_timeout_ms=max(1000, int(self.timeout_s * 1000)),
            retry_backoff_ms=100,
            enable_idempotence=False,  # tansu rejects idempotent producers (bench/README.md)
        )

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="kafka-producer")
        self._sender = asyncio.create_task(self._coalesce(), name="kafka-coalescer")
        if self.worker_group is not None:
            self._progress_task = asyncio.create_task(self._track_progress(), name="worker-progress")
        if self.run_dir is not None and self.worker_group is not None:
            self._pause_task = asyncio.create_task(self._follow_pause(self.run_dir), name="broker-pause")

    async def _follow_pause(self, run_dir: Path) -> None:
        """Refuse new events while the supervisor's ``broker.pause`` exists, and say how many
        accepted events are still unstored, so that it replaces the broker (tansu keeps
        everything in memory) only once the worker stored everything."""
        flag, state = run_dir / PAUSE_FILE, run_dir / f"ingest-state-{os.getpid()}.json"
        written = 0.0
        try:
            while True:
                self.paused = flag.exists()
                if self.paused or time.monotonic() - written >= 1.0:  # 4 a second while paused
                    written = time.monotonic()
                    doc = {
                        "pid": os.getpid(),
                        "paused": self.paused,
                        "unstored": len(self.retained),
                        "at": time.time(),
                    }
                    with contextlib.suppress(OSError):  # a full disk must not stop intake
                        tmp = state.with_suffix(".tmp")
                        tmp.write_bytes(orjson.dumps(doc))
                        tmp.replace(state)
                await asyncio.sleep(0.25)
        finally:
            with contextlib.suppress(OSError):
                state.unlink()

    async def _track_progress(self) -> None:
        """Every second, let go of the kept records the worker's group has committed past.

        A consumer of the worker's group that subscribes to nothing never joins the group;
        it only reads the group's committed offsets (OffsetFetch), which tansu and Kafka
        both answer (tansu does not answer the admin client's form of it)."""
        while True:
            await asyncio.sleep(self.probe_every_s)
            partitions = self.retained.partitions()
            if not partitions:
                continue
            try:
                if self._progress is None:
                    consumer = AIOKafkaConsumer(
                        bootstrap_servers=self.bootstrap,
                        group_id=self.worker_group,
                        enable_auto_commit=False,
                        request_timeout_ms=max(1000, int(self.timeout_s * 1000)),
                    )
                    try:
                        await asyncio.wait_for(consumer.start(), self.timeout_s)
                    except BaseException:
                        with contextlib.suppress(Exception):
                            await consumer.stop()
                        raise
                    self._progress = consumer
                committed: Marks = {}
                for topic, partition in sorted(partitions):
                    offset = await asyncio.wait_for(
                        self._progress.committed(TopicPartition(topic, partition)), self.timeout_s
                    )
                    if offset is not None:
                        committed[(topic, partition)] = offset
                self.retained.prune_stored(committed)
                self.progress_error = ""
            except (KafkaError, OSError, TimeoutError) as exc:
                self.progress_error = f"cannot read the worker's progress: {exc!r}"
                if self._progress is not None:
                    with contextlib.suppress(Exception):
                        await self._progress.stop()
                    self._progress = None

    async def _run(self) -> None:
        while True:
            if self._producer is None:
                producer = self._new()
                try:
                    await producer.start()
                except (KafkaError, OSError) as exc:
                    self.last_error = f"cannot connect to {self.bootstrap}: {exc!r}"
                    with contextlib.suppress(Exception):
                        await producer.stop()
                    await asyncio.sleep(self.probe_every_s)
                    continue
                self._producer, self._failing_since = producer, None
                log.info("connected to Kafka at %s", self.bootstrap)
            await self._probe()
            stuck = self._stuck()
            if stuck:
                await self._replace(stuck)
            await asyncio.sleep(self.probe_every_s)

    @property
    def stuck_after_s(self) -> float:
        """Longer than a partition's leader takes to move after its node died (seconds)."""
        return max(30.0, 6 * self.timeout_s)

    def _stuck(self) -> str:
        """Why the producer can no longer send although the cluster answers ("" if it can).

        aiokafka's sender is one task: should it ever end, or a partition's batch never be
        sent, every later send waits for nothing. A new producer starts from fresh metadata
        and connections; what the old one had not sent was answered 503 and is sent again by
        the client (the worker drops copies)."""
        assert self._producer is not None
        sender = getattr(getattr(self._producer, "_sender", None), "sender_task", None)
        if sender is not None and sender.done():
            return "its sender task ended"
        now = time.monotonic()
        still_failing = now - self._failed_at <= self.timeout_s + 2 * self.probe_every_s
        if self._healthy and self._failing_since is not None and still_failing:
            failing = now - self._failing_since
            if failing > self.stuck_after_s:
                return f"every send failed for {failing:.0f} s while the cluster answered"
        return ""

    async def _replace(self, why: str) -> None:
        old, self._producer = self._producer, None
        self._healthy, self._failing_since = False, None
        self._partition_counts.clear()
        self.replaced += 1
        self.replaced_because = why
        self.last_error = f"producer replaced: {why}"
        log.warning("replacing the Kafka producer: %s", why)
        if old is not None:
            # Its unsent batches fail now (their requests were answered 503 already), so that
            # stop() has nothing to flush and nothing waits on them for ever.
            accumulator = getattr(old, "_message_accumulator", None)
            with contextlib.suppress(Exception):
                accumulator.fail_all(BrokerUnavailable(f"producer replaced: {why}"))  # type: ignore[union-attr]
            try:
                await asyncio.wait_for(old.stop(), self.timeout_s)
            except Exception:  # stop() cut short: at least its connections and metadata task go
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(old.client.close(), self.timeout_s)

    async def _probe(self) -> None:
        assert self._producer is not None
        try:
            ok = await asyncio.wait_for(
                self._producer.client.fetch_all_metadata(), timeout=self.probe_every_s * 2
            )
            self._healthy = bool(ok.brokers())
            if self._healthy:
                self.last_error = ""
                if self._outage:
                    self._outage = False
                    # One broker (tansu, a local Kafka) may have lost what it held; a replicated
                    # cluster that a probe could not reach for a moment has not (acks=all), and a
                    # log that did go back is caught by _check_offset either way.
                    if len(ok.brokers()) <= 1:
                        self._start_replay()
        except (KafkaError, OSError, TimeoutError) as exc:
            if self._healthy:
                log.warning("Kafka at %s stopped answering: %r", self.bootstrap, exc)
            self._healthy = False
            self._outage = True
            self._failing_since = None  # failed sends are the outage's, not the producer's
            self.last_error = f"broker not answering: {exc!r}"

    async def _partition(self, producer: AIOKafkaProducer, topic: str, key: bytes) -> int:
        """Kafka's default (murmur2) partition for ``key``, cached: keys repeat a lot."""
        count = self._partition_counts.get(topic)
        if count is None:
            count = self._partition_counts[topic] = len(await producer.partitions_for(topic))
        cache_key = (topic, key)
        partition = self._partition_cache.get(cache_key)
        if partition is None:
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            partition = self._partition_cache[cache_key] = (murmur2(key) & 0x7FFFFFFF) % count
        return partition

    async def send_all(self, records: Sequence[tuple[str, bytes, bytes]]) -> float:
        """Send (topic, key, value) records; return seconds until all were acked."""
        if not self.ready or self._producer is None:
            raise BrokerUnavailable(self.last_error or "broker unavailable")
        if self.paused:
            raise Paused("the embedded broker is being replaced; events are accepted again in seconds")
        behind = self.storage_behind
        if behind:
            raise StorageBehind(behind)
        started = time.perf_counter()
        marks = await self._send(records)
        self.retained.add(records, marks)
        return time.perf_counter() - started

    async def _send(self, records: Sequence[Record]) -> Marks:
        done: asyncio.Future[Marks] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieved)  # a request that timed out no longer reads it
        self._pending.append((records, done))
        self._wake.set()
        try:
            marks = await asyncio.wait_for(asyncio.shield(done), timeout=self.timeout_s)
        except (KafkaError, OSError, TimeoutError, BrokerUnavailable) as exc:
            self._failed_at = time.monotonic()
            if self._failing_since is None:
                self._failing_since = self._failed_at
            self._healthy = False
            self._outage = True
            self.last_error = f"send failed: {exc!r}"
            log.warning("Kafka send failed; answering 503 until the probe succeeds: %r", exc)
            raise BrokerUnavailable(self.last_error) from exc
        self._failing_since = None
        return marks

    def _check_offset(self, future: asyncio.Future[object]) -> None:
        """A partition's log never shrinks; if an acknowledged offset is below one seen before,
        the broker restarted empty (tansu keeps everything in memory) and lost what it held,
        however quickly it came back: send the retained records again."""
        if future.cancelled() or future.exception() is not None:
            return
        meta = future.result()
        topic, partition, offset = (getattr(meta, k, None) for k in ("topic", "partition", "offset"))
        if not isinstance(offset, int):
            return
        last = self._acked.get((topic, partition))
        if last is not None and offset < last:
            log.warning(
                "%s[%s] went back from offset %d to %d: the broker lost its log",
                topic,
                partition,
                last,
                offset,
            )
            self._acked = {(topic, partition): offset}
            self._start_replay()
            return
        self._acked[(topic, partition)] = offset if last is None else max(last, offset)

    def _start_replay(self) -> None:
        if self._replaying is None or self._replaying.done():
            self._replaying = asyncio.create_task(self._replay(), name="kafka-replay")

    async def _replay(self) -> None:
        """Send every retained record again, after an outage (the broker may have lost them)."""
        if self.retained.track_progress:
            entries = self.retained.forget_marks()
            if not entries:
                return
            count = sum(len(e.records) for e in entries)
            log.warning("Kafka is back: sending the %d accepted events not yet stored again", count)
            try:
                for entry in entries:
                    entry.marks = await self._send(entry.records)
            except BrokerUnavailable:
                log.warning("replay interrupted by another outage; it starts over when Kafka is back")
                return
            self.replayed += count
            return
        records = self.retained.records()
        if not records:
            return
        log.warning("Kafka is back: sending the %d events acknowledged in the last %.0f s again",
                    len(records), self.retained.window_s)  # fmt: skip
        try:
            for i in range(0, len(records), 2000):
                await self._send(records[i : i + 2000])
        except BrokerUnavailable:
            log.warning("replay interrupted by another outage; it starts over when Kafka is back")
            return
        self.replayed += len(records)

    async def _coalesce(self) -> None:
        """Merge the records of concurrent requests into one batch per partition.

        One ``send()`` per record costs more than validating it; ready-made batches
        cost a fraction. aiokafka keeps one pending batch per partition, so while a
        cycle's batches are in flight the next requests pile up into the next cycle.
        """
        while True:
            await self._wake.wait()
            self._wake.clear()
            pending, self._pending = self._pending, []
            producer = self._producer
            if producer is None or not pending:
                for _, done in pending:
                    if not done.done():
                        done.set_exception(BrokerUnavailable("producer not connected"))
                continue
            try:
                # Bounded: a cycle on a producer being replaced can wait on its closed client's
                # metadata for ever; its requests have given up after timeout_s anyway.
                await asyncio.wait_for(self._send_cycle(producer, pending), self.timeout_s)
            except Exception as exc:  # this task must outlive any failure
                # aiokafka raises more than KafkaError here (a failed batch's own exception
                # from the partition's previous send, an assertion on stale metadata); had
                # this task ended, every later request would wait for nothing and get 503.
                expected = isinstance(exc, KafkaError | OSError | BrokerUnavailable)
                if not expected:
                    log.warning("a send cycle failed unexpectedly: %r", exc)
                failure = exc if expected else BrokerUnavailable(repr(exc))
                for _, done in pending:
                    if not done.done():
                        done.set_exception(failure)

    async def _bundles(
        self, producer: AIOKafkaProducer, records: Sequence[tuple[str, bytes, bytes]]
    ) -> list[tuple[str, int, bytes, bytes]]:
        """One Kafka message per (request, partition): the events' JSON lines joined.

        Events keep their partition key (an install's events stay on one partition,
        in order), but the worker pays faust's per-message cost once per bundle
        instead of once per event. Bundles stay under BUNDLE_BYTES.
        """
        lines: dict[tuple[str, int], list[tuple[bytes, bytes]]] = defaultdict(list)
        for topic, key, value in records:
            partition = await self._partition(producer, topic, key)
            lines[(topic, partition)].append((key, value))
        bundles = []
        for (topic, partition), items in lines.items():
            chunk: list[bytes] = []
            chunk_key, size = items[0][0], 0
            for key, value in items:
                if chunk and size + len(value) > BUNDLE_BYTES:
                    bundles.append((topic, partition, chunk_key, b"\n".join(chunk)))
                    chunk, chunk_key, size = [], key, 0
                chunk.append(value)
                size += len(value) + 1
            bundles.append((topic, partition, chunk_key, b"\n".join(chunk)))
        return bundles

    async def _send_cycle(
        self,
        producer: AIOKafkaProducer,
        pending: list[tuple[Sequence[tuple[str, bytes, bytes]], asyncio.Future[Marks]]],
    ) -> None:
        grouped: dict[tuple[str, int], list[tuple[bytes, bytes, int]]] = defaultdict(list)
        for index, (records, _) in enumerate(pending):
            for topic, partition, key, value in await self._bundles(producer, records):
                grouped[(topic, partition)].append((key, value, index))
        waits: list[list[tuple[asyncio.Future[object], int]]] = [[] for _ in pending]
        for (topic, partition), items in grouped.items():
            batch = producer.create_batch()
            owners: set[int] = set()
            for key, value, index in items:
                if batch.append(key=key, value=value, timestamp=None) is None:
                    count = batch.record_count()
                    future = await producer.send_batch(batch, topic, partition=partition)
                    future.add_done_callback(self._check_offset)
                    for owner in owners:
                        waits[owner].append((future, count))
                    batch, owners = producer.create_batch(), set()
                    batch.append(key=key, value=value, timestamp=None)
                owners.add(index)
            count = batch.record_count()
            future = await producer.send_batch(batch, topic, partition=partition)
            # at once: a cycle cut short must not leave a failure nobody reads
            future.add_done_callback(self._check_offset)
            for owner in owners:
                waits[owner].append((future, count))
        for (_, done), futures in zip(pending, waits, strict=True):
            task = asyncio.ensure_future(_settle(done, futures))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)

    async def stop(self) -> None:
        for task in (self._task, self._sender, self._replaying, self._progress_task, self._pause_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._progress is not None:
            with contextlib.suppress(Exception):
                await self._progress.stop()
            self._progress = None
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


def _retrieved(future: asyncio.Future[Marks]) -> None:
    """Mark the outcome read, so asyncio does not log a failure nobody waits for any more."""
    if not future.cancelled():
        future.exception()


async def _settle(done: asyncio.Future[Marks], futures: list[tuple[asyncio.Future[object], int]]) -> None:
    """Resolve a request once every batch holding its records is acknowledged, with the last
    offset of those batches per partition (a batch of ``count`` messages starts at its
    acknowledged base offset)."""
    try:
        metas = await asyncio.gather(*(f for f, _ in futures))
    except Exception as exc:  # handed to the waiting request, which answers 503
        if not done.done():
            done.set_exception(exc)
        return
    marks: Marks = {}
    for meta, (_, count) in zip(metas, futures, strict=True):
        topic, partition, offset = (getattr(meta, k, None) for k in ("topic", "partition", "offset"))
        if isinstance(topic, str) and isinstance(partition, int) and isinstance(offset, int):
            last = offset + count - 1
            marks[(topic, partition)] = max(marks.get((topic, partition), last), last)
    if not done.done():
        done.set_result(marks)
