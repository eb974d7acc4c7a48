"""``auditstream up --broker kafka``: the whole service stopped mid-stream and started again
on the same data directory loses nothing (issue 34, Done-means 3).

The local broker is one Apache Kafka node whose log lives in ``data/kafka`` (supervisor/
kafka_cluster.py ``LocalKafka``). Events are posted without pause while the service is
stopped twice and started again on the same data directory and port: once cleanly (SIGINT
to ``up``), once as harshly as one machine allows, a power cut minus the page cache (SIGKILL
of ``up`` and of every process it started, the broker too, at once), with the worker
stopped beforehand so that accepted events live only in Kafka's log when everything dies:
ingest's copies die with it. Then the broker alone is SIGKILLed, and the supervisor starts
it again on its log. The client sends a batch again until it is answered 202, as the
extension does. In the end every event answered 202 is stored exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import UNLIMITED, Service, free_port, http, stop_up, wait_for
from tests.integration.test_broker_kill import diagnose, stored_ids

pytestmark = [pytest.mark.integration, pytest.mark.kafka]

KEY = "local-kafka-key-0123456789-padded-to-35"
ENV = {**UNLIMITED, "AUDITSTREAM_BROKER": "kafka", "AUDITSTREAM_BATCH_WITHIN_S": "0.1"}
PHASE = 2_000
"""Events accepted between two stops (and while the worker is stopped before the kill)."""
STARTED: list[subprocess.Popen[bytes]] = []
"""Every ``up`` started, so a failed test leaves none running."""


class Stream:
    """Posts batches of 100 without pause, in a thread of its own, across restarts of the
    service: a batch refused (503) or unanswered (connection refused or reset while the
    service is down) is sent again, same event ids, until it is answered 202."""

    def __init__(self, svc: Service, experiment: str) -> None:
        self.url, self.key = svc.url + "/v1/events", svc.api_key
        config = TrafficConfig(experiment_id=experiment, seed=34, installs=500)
        self.traffic = ExtensionTraffic(config).events()
        self.accepted: set[str] = set()
        self.refused: Counter[int] = Counter()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="stream", daemon=True)
        self.thread.start()

    def count(self) -> int:
        return len(self.accepted)

    def stop(self) -> set[str]:
        """Stop after the batches in flight are answered 202; the ids of every event accepted."""
        self.stopping.set()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive(), "the stream did not end"
        return self.accepted

    async def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
        timeout = aiohttp.ClientTimeout(total=30)
        async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
            await asyncio.gather(*(self._poster(session) for _ in range(2)))

    async def _poster(self, session: aiohttp.ClientSession) -> None:
        while not self.stopping.is_set():
            batch = [next(self.traffic) for _ in range(100)]
            while True:
                try:
                    async with session.post(self.url, data=orjson.dumps(batch)) as resp:
                        status, body = resp.status, await resp.read()
                except (aiohttp.ClientError, TimeoutError):
                    status, body = 0, b""
                if status == 202:
                    assert orjson.loads(body)["rejected"] == [], body[:200]
                    self.accepted.update(str(uuid.UUID(e["event_id"])) for e in batch)
                    break
                assert status in (0, 503), (status, body[:200])
                self.refused[status] += 1
                await asyncio.sleep(0.2)  # wait-ok: a client's retry pause


def start(data_dir: Path, port: int) -> Service:
    """``up --broker kafka`` (through AUDITSTREAM_BROKER) on ``data_dir`` and ``port``, ready.

    As tests/helpers.py ``start_up``, but every run's output is kept in one ``up-<port>.log``
    and the wait is longer: on two cores under a load of 17, a start after a stop took 48 s
    (the JVM, the store, a worker and ingest at once)."""
    log = open(data_dir.parent / f"up-{port}.log", "ab")  # noqa: SIM115 - kept by the process
    command = ["up", "--data-dir", str(data_dir), "--port", str(port), "--api-key", KEY]
    proc = subprocess.Popen(
        [sys.executable, "-m", "auditstream", *command],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **ENV},
    )
    STARTED.append(proc)
    svc = Service(f"http://127.0.0.1:{port}", KEY, data_dir, proc)

    def ready() -> bool:
        assert proc.poll() is None, f"auditstream up exited; see {log.name}"
        # run/ready may be a killed service's: ingest answering is what counts
        fully_up = (data_dir / "run" / "ready").exists()
        return fully_up and http("GET", svc.url + "/readyz", timeout=2).status == 200

    wait_for(ready, 180, "auditstream up to be ready")
    return svc


def running(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie: processes whose ``up`` was killed are not ours to reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def kill_everything(svc: Service) -> list[int]:
    """SIGKILL ``up`` and every process it started, at once: each runs in a session of its
    own (a process group of ``up`` would not hold them), so by their pid files."""
    assert svc.process is not None
    pids = [svc.process.pid] + [int(p.read_text()) for p in (svc.data_dir / "run").glob("*.pid")]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    svc.process.wait(timeout=30)
    wait_for(lambda: not any(running(pid) for pid in pids), 30, "every process gone")
    return pids


def cluster_id(data_dir: Path) -> str:
    return str(json.loads((data_dir / "kafka" / "cluster.json").read_text())["cluster_id"])


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """The data directory; whatever a failed test left running on it is killed."""
    data_dir = tmp_path / "data"
    yield data_dir
    for proc in STARTED:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    STARTED.clear()
    for pid_file in (data_dir / "run").glob("*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            if str(data_dir) in Path(f"/proc/{pid}/environ").read_text(errors="replace") + Path(
                f"/proc/{pid}/cmdline"
            ).read_text(errors="replace"):  # not a recycled pid
                os.kill(pid, signal.SIGKILL)


@pytest.mark.timeout(900)
def test_the_whole_service_stopped_and_killed_mid_stream_loses_nothing(data_dir: Path) -> None:
    started = time.monotonic()
    port = free_port()
    experiment = f"local-kafka-{uuid.uuid4().hex[:8]}"
    where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"
    svc = start(data_dir, port)
    first_cluster = cluster_id(data_dir)
    stream = Stream(svc, experiment)
    timeline = [f"up {time.monotonic() - started:.0f} s"]
    try:
        wait_for(lambda: stream.count() >= PHASE, 120, "events accepted")

        # a clean stop mid-stream (SIGINT: ingest, worker, store, then Kafka), and a start
        assert stop_up(svc) == 0
        timeline.append(f"stopped at {stream.count()} ({time.monotonic() - started:.0f} s)")
        svc = start(data_dir, port)
        timeline.append(f"up again {time.monotonic() - started:.0f} s")
        resumed = stream.count()
        wait_for(lambda: stream.count() >= resumed + PHASE, 120, "events accepted after the restart")

        # the worker stops storing, so accepted events live in Kafka's log only ...
        os.kill(svc.pid("worker-0"), signal.SIGSTOP)
        paused = stream.count()
        wait_for(lambda: stream.count() >= paused + PHASE, 120, "events accepted, the worker stopped")
        at_kill = stream.count()
        unstored = at_kill - svc.scalar(f"SELECT uniqExact(event_id) {where}")
        # ... then everything dies at once: up, ingest (and the copies it kept), store, the
        # stopped worker, Kafka
        kill_everything(svc)
        timeline.append(f"killed at {at_kill}, {unstored} unstored ({time.monotonic() - started:.0f} s)")
        svc = start(data_dir, port)
        timeline.append(f"up again {time.monotonic() - started:.0f} s")
        resumed = stream.count()
        wait_for(lambda: stream.count() >= resumed + PHASE, 120, "events accepted after the kill")

        # the broker alone dies: the supervisor starts it again on its log, the rest stays up
        broker, worker = svc.pid("broker"), svc.pid("worker-0")
        os.kill(broker, signal.SIGKILL)
        wait_for(lambda: svc.pid("broker") != broker, 120, "Kafka started again")
        timeline.append(f"Kafka killed at {stream.count()} and back ({time.monotonic() - started:.0f} s)")
        resumed = stream.count()
        wait_for(lambda: stream.count() >= resumed + PHASE, 120, "events accepted after Kafka's restart")
        worker_kept = svc.pid("worker-0") == worker
    finally:
        accepted = stream.stop()
    assert unstored > 0, "nothing was unstored at the kill: the test proves nothing"
    assert cluster_id(data_dir) == first_cluster  # the same Kafka, formatted once, on its log

    total = len(accepted)
    try:
        wait_for(
            lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == total, 420, "all stored"
        )  # a condition: a rejoin after the kill can take minutes under load
        assert svc.scalar(f"SELECT count() {where}") == total  # exactly once
        assert stored_ids(svc, where) == accepted
    except AssertionError:
        print("\n".join(timeline))
        print(diagnose(svc, where, accepted))
        raise
    finally:
        assert stop_up(svc) == 0
    log_bytes = sum(f.stat().st_size for f in (data_dir / "kafka").rglob("auditstream.extension-*/*.log"))
    timeline.append(f"done {time.monotonic() - started:.0f} s")
    print("\n".join(timeline))
    print(
        f"{total} events accepted, each stored once; {unstored} lived in Kafka's log alone at the "
        f"kill; {log_bytes / total:.0f} B of Kafka log per event; refusals {dict(stream.refused)}; "
        f"the worker {'kept' if worker_kept else 'restarted'} across Kafka's restart"
    )
