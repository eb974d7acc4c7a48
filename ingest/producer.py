"""The Kafka side of ingest: acks=all sends, a health probe, and fast failure.

aiokafka cannot start while the broker is down, and a send to a dead broker
waits for its full request timeout. So the producer starts in the background,
a probe tracks broker health, and requests fail fast with 503 while it is down.
A request whose sends partly failed also gets 503: the client retries with the
same event ids and the sink drops the copies (idempotent by event_id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from auditstream.errors import AuditstreamError

log = logging.getLogger(__name__)


class BrokerUnavailable(AuditstreamError):
    """The events could not be acknowledged by Kafka; nothing should be reported accepted."""


class EventProducer:
    def __init__(self, bootstrap: str, timeout_s: float = 5.0, probe_every_s: float = 1.0) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.probe_every_s = probe_every_s
        self._producer: AIOKafkaProducer | None = None
        self._healthy = False
        self._task: asyncio.Task[None] | None = None
        self.last_error = "not connected yet"

    @property
    def ready(self) -> bool:
        return self._producer is not None and self._healthy

    def _new(self) -> AIOKafkaProducer:
        return AIOKafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            linger_ms=2,
            max_batch_size=256 * 1024,
            max_request_size=4 * 1024 * 1024,
            request_timeout_ms=max(1000, int(self.timeout_s * 1000)),
            retry_backoff_ms=100,
            enable_idempotence=False,  # tansu rejects idempotent producers (DESIGN.md §4a)
        )

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="kafka-producer")

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
        except (KafkaError, OSError, TimeoutError) as exc:
            if self._healthy:
                log.warning("Kafka at %s stopped answering: %r", self.bootstrap, exc)
            self._healthy = False
            self.last_error = f"broker not answering: {exc!r}"

    async def send_all(self, records: Sequence[tuple[str, bytes, bytes]]) -> float:
        """Send (topic, key, value) records; return seconds until all were acked."""
        if not self.ready or self._producer is None:
            raise BrokerUnavailable(self.last_error or "broker unavailable")
        producer = self._producer
        started = time.perf_counter()

        async def _send() -> None:
            futures = [await producer.send(t, v, key=k) for t, k, v in records]
            await asyncio.gather(*futures)

        try:
            await asyncio.wait_for(_send(), timeout=self.timeout_s)
        except (KafkaError, OSError, TimeoutError) as exc:
            self._healthy = False
            self.last_error = f"send failed: {exc!r}"
            raise BrokerUnavailable(self.last_error) from exc
        return time.perf_counter() - started

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
