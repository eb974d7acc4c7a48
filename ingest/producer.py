"""The Kafka side of ingest: acks=all sends, a health probe, and fast failure.

aiokafka cannot start while the broker is down, and a send to a dead broker
waits for its full request timeout. So the producer starts in the background,
a probe tracks broker health, and requests fail fast with 503 while it is down.
A request whose sends partly failed also gets 503: the client retries with the
same event ids and the sink drops the copies (idempotent by event_id).

The embedded broker (tansu) keeps everything in memory: if it dies, events it had
acknowledged but the worker had not yet read are gone from it. Ingest answered 202 for
them, so it keeps every acknowledged record for ``replay_window_s`` (bounded by
``replay_max_bytes``) and sends them all again when the broker comes back after an
outage. The worker drops the copies it already stored (deduplication by event_id).
Not protected: ingest and the broker dying together, and records older than the window
or beyond the byte bound (counted in ``auditstream_replay_dropped_records_total``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable, Sequence

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.partitioner import murmur2

from core.errors import AuditstreamError

log = logging.getLogger(__name__)


BUNDLE_BYTES = 256 * 1024  # well under Kafka's default 1 MB message limit


class BrokerUnavailable(AuditstreamError):
    """The events could not be acknowledged by Kafka; nothing should be reported accepted."""


Record = tuple[str, bytes, bytes]
"""(topic, key, value) of one event."""


class Retained:
    """Acknowledged records of the last ``window_s`` seconds, at most ``max_bytes`` of values."""

    def __init__(self, window_s: float, max_bytes: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.window_s, self.max_bytes, self._clock = window_s, max_bytes, clock
        self._items: deque[tuple[float, Sequence[Record], int]] = deque()
        self.bytes = 0
        self.dropped = 0
        """Records pushed out by the byte bound before their window ended."""

    def add(self, records: Sequence[Record]) -> None:
        if self.window_s <= 0:
            return
        size = sum(len(v) for _, _, v in records)
        self._items.append((self._clock(), records, size))
        self.bytes += size
        self.prune()

    def prune(self) -> None:
        horizon = self._clock() - self.window_s
        while self._items and (self._items[0][0] < horizon or self.bytes > self.max_bytes):
            at, records, size = self._items.popleft()
            self.bytes -= size
            if at >= horizon:
                self.dropped += len(records)

    def records(self) -> list[Record]:
        self.prune()
        return [r for _, records, _ in self._items for r in records]

    def __len__(self) -> int:
        return sum(len(records) for _, records, _ in self._items)


class EventProducer:
    def __init__(
        self,
        bootstrap: str,
        timeout_s: float = 5.0,
        probe_every_s: float = 1.0,
        replay_window_s: float = 120.0,
        replay_max_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.bootstrap = bootstrap
        self.retained = Retained(replay_window_s, replay_max_bytes)
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
        self._partition_counts: dict[str, int] = {}
        self._partition_cache: dict[tuple[str, bytes], int] = {}
        self._pending: list[tuple[Sequence[tuple[str, bytes, bytes]], asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._settling: set[asyncio.Future[None]] = set()

    @property
    def ready(self) -> bool:
        return self._producer is not None and self._healthy

    def _new(self) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=2,
            max_batch_size=1024 * 1024,
            max_request_size=4 * 1024 * 1024,
            request_timeout_ms=max(1000, int(self.timeout_s * 1000)),
            retry_backoff_ms=100,
            enable_idempotence=False,  # tansu rejects idempotent producers (DESIGN.md §4a)
        )

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="kafka-producer")
        self._sender = asyncio.create_task(self._coalesce(), name="kafka-coalescer")

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
                self._producer = producer
                log.info("connected to Kafka at %s", self.bootstrap)
            await self._probe()
            await asyncio.sleep(self.probe_every_s)

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
                    self._start_replay()
        except (KafkaError, OSError, TimeoutError) as exc:
            if self._healthy:
                log.warning("Kafka at %s stopped answering: %r", self.bootstrap, exc)
            self._healthy = False
            self._outage = True
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
        started = time.perf_counter()
        await self._send(records)
        self.retained.add(records)
        return time.perf_counter() - started

    async def _send(self, records: Sequence[Record]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((records, done))
        self._wake.set()
        try:
            await asyncio.wait_for(asyncio.shield(done), timeout=self.timeout_s)
        except (KafkaError, OSError, TimeoutError, BrokerUnavailable) as exc:
            self._healthy = False
            self._outage = True
            self.last_error = f"send failed: {exc!r}"
            log.warning("Kafka send failed; answering 503 until the probe succeeds: %r", exc)
            raise BrokerUnavailable(self.last_error) from exc

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
                await self._send_cycle(producer, pending)
            except (KafkaError, OSError) as exc:
                for _, done in pending:
                    if not done.done():
                        done.set_exception(exc)

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
        pending: list[tuple[Sequence[tuple[str, bytes, bytes]], asyncio.Future[None]]],
    ) -> None:
        grouped: dict[tuple[str, int], list[tuple[bytes, bytes, int]]] = defaultdict(list)
        for index, (records, _) in enumerate(pending):
            for topic, partition, key, value in await self._bundles(producer, records):
                grouped[(topic, partition)].append((key, value, index))
        waits: list[list[asyncio.Future[object]]] = [[] for _ in pending]
        for (topic, partition), items in grouped.items():
            batch = producer.create_batch()
            owners: set[int] = set()
            for key, value, index in items:
                if batch.append(key=key, value=value, timestamp=None) is None:
                    future = await producer.send_batch(batch, topic, partition=partition)
                    for owner in owners:
                        waits[owner].append(future)
                    batch, owners = producer.create_batch(), set()
                    batch.append(key=key, value=value, timestamp=None)
                owners.add(index)
            future = await producer.send_batch(batch, topic, partition=partition)
            for owner in owners:
                waits[owner].append(future)
        for future in {id(f): f for fs in waits for f in fs}.values():
            future.add_done_callback(self._check_offset)
        for (_, done), futures in zip(pending, waits, strict=True):
            task = asyncio.ensure_future(_settle(done, futures))
            self._settling.add(task)
            task.add_done_callback(self._settling.discard)

    async def stop(self) -> None:
        for task in (self._task, self._sender, self._replaying):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None


async def _settle(done: asyncio.Future[None], futures: list[asyncio.Future[object]]) -> None:
    """Resolve a request once every batch holding its records is acknowledged."""
    try:
        await asyncio.gather(*futures)
    except Exception as exc:  # handed to the waiting request, which answers 503
        if not done.done():
            done.set_exception(exc)
        return
    if not done.done():
        done.set_result(None)
