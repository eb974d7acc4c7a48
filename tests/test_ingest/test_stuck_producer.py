"""A Kafka producer that can no longer send while the cluster answers is replaced
(ingest/producer.py, EventProducer._stuck): intake answers 503 meanwhile, then 202 again.

Both ways aiokafka's producer can stop sending for good are made on a real broker (tansu):
its one sender task ends, or a partition's batches are never sent (the partitions muted).
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import TopicPartition

from ingest.producer import BrokerUnavailable, EventProducer
from supervisor.broker import TansuBroker, free_port

TOPIC = "stuck.extension"
pytestmark = pytest.mark.integration  # a real broker

RECORDS = [(TOPIC, f"install-{i}".encode(), b'{"n": %d}' % i) for i in range(20)]


class QuickToGiveUp(EventProducer):
    stuck_after_s = 2.0  # not the 30 s a leader may take to move


@pytest.fixture
async def producer(tmp_path: Path) -> AsyncIterator[EventProducer]:
    broker = TansuBroker(free_port(), log_path=tmp_path / "broker.log")
    try:
        await broker.start_and_wait([TOPIC], 2)
        made = QuickToGiveUp(broker.bootstrap, timeout_s=1.0, probe_every_s=0.2)
        await made.start()
        try:
            await until_sent(made, 30)
            yield made
        finally:
            await made.stop()
    finally:
        await broker.stop()
        # The replaced producers' tasks and coroutines are garbage now: collected here, while
        # their loop runs, not later inside some unrelated compile() (CPython 3.11 then fails
        # with "AST constructor recursion depth mismatch").
        gc.collect()


async def until_sent(producer: EventProducer, timeout_s: float) -> list[str]:
    """send_all until it succeeds; the reasons of the failures before."""
    failures: list[str] = []
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await producer.send_all(RECORDS)
            return failures
        except BrokerUnavailable as exc:
            failures.append(str(exc))
            assert time.monotonic() < deadline, f"no send within {timeout_s} s: {failures[-3:]}"
            await asyncio.sleep(0.1)  # wait-ok: a client's pause between retries


async def test_a_producer_whose_sender_ended_is_replaced(producer: EventProducer) -> None:
    inner = producer._producer
    assert inner is not None
    inner._sender.sender_task.cancel()  # aiokafka's one sender task, as if it had failed
    failures = await until_sent(producer, 30)
    assert failures, "the send after the sender ended should have failed"
    assert producer.replaced == 1 and producer._producer is not inner
    assert producer.replaced_because == "its sender task ended"


async def test_a_producer_that_never_sends_a_partition_is_replaced(producer: EventProducer) -> None:
    inner = producer._producer
    assert inner is not None
    for partition in range(2):  # batches for these wait forever, as a stuck partition's would
        inner._sender._muted_partitions.add(TopicPartition(TOPIC, partition))
    failures = await until_sent(producer, 60)
    assert len(failures) >= 2, failures  # the cluster answered the probe meanwhile
    assert producer.replaced == 1 and producer._producer is not inner
    assert producer.replaced_because.startswith("every send failed for ")


async def test_an_unexpected_error_of_a_send_cycle_fails_that_request_only(producer: EventProducer) -> None:
    """aiokafka asserts a partition is in its metadata (``Unrecognized partition``): such an
    error answers that request 503; the next one is sent by the same producer."""
    inner = producer._producer
    assert inner is not None
    real, calls = inner._partition, []

    def stale_once(*args: object) -> object:
        calls.append(args)
        if len(calls) == 1:
            raise AssertionError("Unrecognized partition")
        return real(*args)

    inner._partition = stale_once
    with pytest.raises(BrokerUnavailable, match="Unrecognized partition"):
        await producer.send_all(RECORDS)
    await until_sent(producer, 10)  # once the probe found the cluster: the coalescer is still there
    assert producer.replaced == 0 and producer._producer is inner
