"""The service on Apache Kafka: three KRaft nodes on loopback, each broker and controller,
replication factor 3, ``min.insync.replicas=2`` (supervisor/kafka_cluster.py; issue 34,
Done-means 1).

The promises the tansu tests check, on the production path: ``auditstream up`` with
``AUDITSTREAM_KAFKA_BOOTSTRAP`` set supervises ingest, the worker and the store against the
cluster. With ``acks=all`` and two in-sync copies required, killing the node that leads the
most partitions loses no acknowledged event: its partitions get new leaders from the other
two copies, ingest answers 503 meanwhile and the client sends again. Consumer-group
rebalances (a worker joins, a worker leaves) replay at most what was not committed, and
the worker drops the copies it already stored.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from schemas.topics import all_topics
from supervisor.broker import create_topics
from supervisor.kafka_cluster import KafkaCluster, running_cluster
from tests.helpers import RECOUNT_POLL_S, Service, free_port, own_service, wait_for, worker_metrics
from tests.integration.test_broker_kill import Stalled, diagnose, post_all, stored_ids
from tests.integration.test_end_to_end import assert_aggregate_exact, assert_install_stats_exact

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

TOTAL, BATCH = 30_000, 500
KILL_AFTER, RESTART_AFTER = 10_000, 20_000
"""The leader is killed with a third of the events accepted and restarted with two thirds:
events are posted before the kill, while its partitions move, and after its return."""
LONGEST_STALL_S = 30.0
"""Posting may pause while the killed leader's partitions move, never longer than this."""
KEY = "kafka-cluster-key-0123456789abcdefghij"
TOPICS = all_topics("auditstream")
BACKLOG = 8_000
"""The rebalance test posts on while at most this many accepted events wait to be stored."""


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One three-node cluster for the file; each test leaves it with three brokers in sync."""
    with running_cluster(tmp_path_factory.mktemp("kafka")) as cluster:
        yield cluster


class Stamps:
    """When each 202 came, from the start of posting: the longest wait for one."""

    def __init__(self) -> None:
        self.times = [time.monotonic()]

    def __call__(self) -> None:
        self.times.append(time.monotonic())

    @property
    def longest_gap_s(self) -> float:
        return max(b - a for a, b in zip(self.times, self.times[1:], strict=False))

    @property
    def took_s(self) -> float:
        return self.times[-1] - self.times[0]


def replication(kafka: KafkaCluster, topics: list[str] | None) -> set[int]:
    return {len(p["replicas"]) for p in asyncio.run(kafka.describe(topics)).values()}


def report(svc: Service, kafka: KafkaCluster, where: str, accepted: set[str]) -> str:
    """diagnose() of the tansu tests, which reads the broker's address from run/broker.addr
    (``up`` writes it for tansu only), and each node's log tail."""
    (svc.data_dir / "run" / "broker.addr").write_text(kafka.bootstrap + "\n")
    nodes = [f"--- kafka node {n.node_id} ---\n{_tail(n.log_path)}" for n in kafka.members]
    return "\n".join([diagnose(svc, where, accepted), *nodes])


def _tail(path: Path, lines: int = 25) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else "(none)"


@pytest.mark.timeout(600)
def test_sigkill_of_the_busiest_leader_mid_stream_loses_nothing(kafka: KafkaCluster, tmp_path: Path) -> None:
    experiment = f"kafka-kill-{uuid.uuid4().hex[:8]}"
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment, seed=34, installs=2000))
    batches = list(traffic.batches(BATCH, TOTAL))
    env = {"AUDITSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap}  # unstored_limit_s: the default
    with own_service(tmp_path / "data", KEY, env) as svc:
        # the service created its topics with the cluster's replication factor
        assert replication(kafka, TOPICS) == {3}
        victim = asyncio.run(kafka.busiest_leader(TOPICS))
        stamps, done = Stamps(), list[str]()
        where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"

        def on_accepted(n: int) -> None:
            stamps()
            if n >= KILL_AFTER and not done:
                kafka.kill(victim)  # SIGKILL: no controlled shutdown, leadership moves on timeout
                done.append(f"node {victim} killed at {n}")
            elif n >= RESTART_AFTER and len(done) == 1:
                kafka.start_node(victim)  # with its data: it catches up from the new leaders
                done.append(f"restarted at {n}")

        try:
            accepted = asyncio.run(post_all(svc, batches, on_accepted))
        except Stalled:
            print(report(svc, kafka, where, set()))
            raise
        finally:
            if len(done) == 1:  # the file's other tests need three brokers
                kafka.start_node(victim)
        assert len(accepted) == TOTAL and len(done) == 2, done
        assert stamps.longest_gap_s < LONGEST_STALL_S, f"posting stalled {stamps.longest_gap_s:.1f} s"

        try:
            wait_for(
                lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == TOTAL,
                300,
                "all stored",
                RECOUNT_POLL_S,
            )
        except AssertionError:
            print(report(svc, kafka, where, accepted))
            raise
        assert svc.scalar(f"SELECT count() {where}") == TOTAL  # exactly once
        assert stored_ids(svc, where) == accepted
        assert_aggregate_exact(svc, experiment)
        assert_install_stats_exact(svc, experiment)

        # the killed node rejoined: three brokers, every replica back in sync
        took = asyncio.run(kafka.wait_in_sync(TOPICS, 120))
        assert asyncio.run(kafka.brokers()) == [1, 2, 3]
        # every topic on the cluster: the service's, the consumer offsets, any the worker made
        every = asyncio.run(kafka.describe())
        assert {len(p["replicas"]) for p in every.values()} == {3}, sorted({t for t, _ in every})
        replayed = svc.metric("auditstream_ingest_replayed_events")
        print(
            f"{'; '.join(done)}; {TOTAL} posted in {stamps.took_s:.0f} s, longest wait for a 202 "
            f"{stamps.longest_gap_s:.1f} s; {replayed:.0f} replayed by ingest; in sync {took:.0f} s after"
        )


def assigned(svc: Service, worker: int, topic: str) -> float:
    """Extension partitions the worker holds (0 while its metrics do not answer yet)."""
    try:
        return worker_metrics(svc, worker).get(f'auditstream_assigned_partitions{{topic="{topic}"}}', 0)
    except OSError:
        return 0


def stored_by(svc: Service, worker: int) -> float:
    try:
        samples = worker_metrics(svc, worker).items()
    except OSError:
        return 0
    return sum(
        v
        for k, v in samples
        if k.startswith("auditstream_events_stored_total{") and 'family="extension"' in k
    )


def start_another_worker(svc: Service, log: Path) -> subprocess.Popen[bytes]:
    """``auditstream worker`` as ``up`` starts its own, joining the same consumer group.

    Its settings are worker-0's environment: ``up`` gives its workers the store's address
    and the shared secret it made for this run. It serves metrics where
    ``worker_metrics(svc, 1)`` reads them."""
    raw = Path(f"/proc/{svc.pid('worker-0')}/environ").read_bytes().decode()
    env = dict(item.split("=", 1) for item in raw.split("\0") if "=" in item)
    port = free_port()
    env["AUDITSTREAM_WORKER_METRICS_PORT"] = str(port)
    (svc.data_dir / "run" / "worker-1.metrics").write_text(f"http://127.0.0.1:{port}/metrics\n")
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "auditstream", "worker"], env=env, stdout=out, stderr=subprocess.STDOUT
        )


@pytest.mark.timeout(600)
def test_a_worker_added_and_one_removed_mid_stream_store_everything_once(
    kafka: KafkaCluster, tmp_path: Path
) -> None:
    """Events flow the whole time: a chunk is posted, then the next, while a second worker
    joins the group, takes partitions and stores some, then leaves (SIGTERM, as a scale
    down does) and worker-0 takes every partition back."""
    experiment = f"kafka-rebalance-{uuid.uuid4().hex[:8]}"
    prefix = "rebalance"  # topics of its own on the shared cluster
    topic = f"{prefix}.extension"
    env = {
        "AUDITSTREAM_KAFKA_BOOTSTRAP": kafka.bootstrap,
        "AUDITSTREAM_TOPIC_PREFIX": prefix,
        # what an operator may set on a replicated Kafka: ingest does not follow the worker
        "AUDITSTREAM_UNSTORED_LIMIT_S": "0",
    }
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment, seed=35, installs=1000))
    chunks = traffic.batches(BATCH, 1_000_000)  # drawn 2,000 events at a time, as long as needed
    accepted: set[str] = set()
    # three brokers, whatever the test before left
    wait_for(lambda: asyncio.run(kafka.brokers()) == [1, 2, 3], 120, "three brokers")
    with own_service(tmp_path / "data", KEY, env) as svc:
        assert replication(kafka, all_topics(prefix)) == {3}

        where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"

        def post_chunk() -> None:
            """2,000 more events, once the worker(s) are at most ``BACKLOG`` behind: events
            are in flight at every rebalance, and the volume follows the workers' pace."""
            wait_for(
                lambda: len(accepted) - svc.scalar(f"SELECT count() {where}") <= BACKLOG, 120, "the backlog"
            )
            accepted.update(asyncio.run(post_all(svc, [next(chunks) for _ in range(4)], lambda n: None)))

        def post_until(condition: Callable[[], bool], what: str, timeout_s: float = 180) -> None:
            deadline = time.monotonic() + timeout_s
            while not condition():
                assert time.monotonic() < deadline, f"no {what} within {timeout_s} s"
                post_chunk()

        post_chunk()
        phases = Stamps()
        extra = start_another_worker(svc, tmp_path / "worker-1.log")
        try:

            def split_and_storing() -> bool:
                split[:] = [assigned(svc, 0, topic), assigned(svc, 1, topic)]
                return min(split) > 0 and sum(split) == 6 and stored_by(svc, 1) > 0

            split: list[float] = []
            post_until(split_and_storing, "the two workers splitting the partitions")
            by_extra = stored_by(svc, 1)
            phases()
            extra.send_signal(signal.SIGTERM)
            post_until(
                lambda: extra.poll() is not None and assigned(svc, 0, topic) == 6, "worker-0 holding all"
            )
            phases()
            post_chunk()  # and more on worker-0 alone
        finally:
            if extra.poll() is None:
                extra.kill()
            extra.wait(timeout=30)

        total = len(accepted)
        try:
            wait_for(
                lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == total,
                240,
                "all stored",
                RECOUNT_POLL_S,
            )
        except AssertionError:
            print(report(svc, kafka, where, accepted))
            raise
        assert svc.scalar(f"SELECT count() {where}") == total  # exactly once
        phases()
        assert stored_ids(svc, where) == accepted
        assert_aggregate_exact(svc, experiment)
        assert_install_stats_exact(svc, experiment)
        phases()
        joined, left, drained, checked = (b - a for a, b in zip(phases.times, phases.times[1:], strict=False))
        print(
            f"a second worker joined and stored in {joined:.0f} s, left and worker-0 held all in "
            f"{left:.0f} s, all stored {drained:.0f} s later, checked in {checked:.0f} s; "
            f"{total} posted; the second worker held {split[1]:.0f} of 6 partitions and stored "
            f"{by_extra:.0f} events; it exited {extra.returncode} on SIGTERM"
        )


def test_one_node_keeps_its_events_across_a_restart(tmp_path: Path) -> None:
    """The durable local broker: one node, data on disk, started again on its directory."""
    root = tmp_path / "kafka"

    async def produce(bootstrap: str) -> None:
        assert await create_topics(bootstrap, ["durable"], 2) == 1  # one broker: one copy
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for i in range(100):
                await producer.send_and_wait("durable", str(i).encode(), key=str(i).encode())
        finally:
            await producer.stop()

    async def consume(bootstrap: str) -> set[bytes]:
        consumer = AIOKafkaConsumer("durable", bootstrap_servers=bootstrap, auto_offset_reset="earliest")
        await consumer.start()
        seen: set[bytes] = set()
        try:
            deadline = time.monotonic() + 30
            while len(seen) < 100 and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    seen.update(r.value for r in records if r.value is not None)
        finally:
            await consumer.stop()
        return seen

    with running_cluster(root, nodes=1) as first:
        bootstrap = first.bootstrap
        asyncio.run(produce(bootstrap))
    with running_cluster(root, nodes=1) as again:
        assert again.bootstrap == bootstrap  # its address kept in cluster.json
        assert asyncio.run(consume(bootstrap)) == {str(i).encode() for i in range(100)}
