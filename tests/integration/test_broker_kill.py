"""SIGKILL of the embedded broker while events are being posted (issue 11, Done-means 4).

tansu keeps everything in memory, so the kill loses what it held that the worker had
not yet read. Ingest keeps every acknowledged event for ``replay_window_s`` and sends
them again once the restarted broker answers; the worker drops the copies it already
stored. Every event answered 202 must then be stored exactly once, and the pid file
must name the new broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import RECOUNT_POLL_S, Service, own_service, wait_for, worker_metrics

pytestmark = pytest.mark.integration

TOTAL, BATCH, KILL_AFTER = 30_000, 500, 12_000
"""The broker is killed with 12,000 events accepted and 18,000 still to post: the killed
broker held events the worker had not read, and posting goes on to the new one."""
KEY = "broker-kill-key-0123456789-padded-to-35-chars"


@pytest.fixture
def service_of_its_own(tmp_path: Path) -> Iterator[Service]:
    with own_service(tmp_path / "data", KEY) as svc:
        yield svc


STALL_LIMIT_S = 180.0
"""post_all gives up when no request was answered 202 for this long, and says why."""


class Stalled(AssertionError):
    """No 202 for ``STALL_LIMIT_S``: the answers that came instead, by error code."""


async def post_all(svc: Service, batches: list[list[dict]], on_accepted: object) -> set[str]:
    """Post every batch (4 at a time), retrying 503s; the ids of events answered 202.

    Raises Stalled (with the count and last message of each 503 code) when nothing was
    accepted for STALL_LIMIT_S, so that a stuck service fails with its reason, not a timeout."""
    accepted: set[str] = set()
    queue: asyncio.Queue[list[dict]] = asyncio.Queue()
    for batch in batches:
        queue.put_nowait(batch)
    headers = {"Authorization": f"Bearer {svc.api_key}", "Content-Type": "application/json"}
    refusals: Counter[str] = Counter()
    last_message: dict[str, str] = {}
    last_202 = [time.monotonic()]

    async def poster(session: aiohttp.ClientSession) -> None:
        while not queue.empty():
            batch = queue.get_nowait()
            while True:
                try:
                    async with session.post(svc.url + "/v1/events", data=orjson.dumps(batch)) as resp:
                        status, body = resp.status, await resp.read()
                except aiohttp.ClientError as exc:
                    status, body = 0, repr(exc).encode()
                if status == 202:
                    doc = orjson.loads(body)
                    assert doc["rejected"] == [], doc
                    accepted.update(str(uuid.UUID(e["event_id"])) for e in batch)
                    last_202[0] = time.monotonic()
                    on_accepted(len(accepted))  # type: ignore[operator]
                    break
                assert status in (0, 503), (status, body[:200])
                code = "connection" if status == 0 else str(orjson.loads(body).get("error"))
                refusals[code] += 1
                last_message[code] = body[:300].decode(errors="replace")
                if time.monotonic() - last_202[0] > STALL_LIMIT_S:
                    raise Stalled(
                        f"no 202 for {STALL_LIMIT_S:.0f} s with {len(accepted)} accepted; refused: "
                        + "; ".join(f"{c} x{n} (last: {last_message[c]})" for c, n in refusals.items())
                    )
                await asyncio.sleep(0.2)  # wait-ok: a client's retry pause after a 503

    async with aiohttp.ClientSession(headers=headers) as session:
        await asyncio.gather(*(poster(session) for _ in range(4)))
    return accepted


@pytest.mark.timeout(600)  # the recovery wait below is long, for a loaded machine
def test_broker_sigkill_loses_no_accepted_event(service_of_its_own: Service) -> None:
    svc = service_of_its_own
    experiment = f"kill-{uuid.uuid4().hex[:8]}"
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment, seed=9, installs=2000))
    batches = list(traffic.batches(BATCH, TOTAL))
    first_broker = svc.pid("broker")
    killed: list[int] = []

    def maybe_kill(n: int) -> None:
        if n >= KILL_AFTER and not killed:
            os.kill(first_broker, signal.SIGKILL)
            killed.append(n)

    accepted = asyncio.run(post_all(svc, batches, maybe_kill))
    assert killed and len(accepted) == TOTAL

    # the supervisor restarted the broker and the pid file names it
    wait_for(lambda: svc.pid("broker") != first_broker, 60, "a new broker pid")
    os.kill(svc.pid("broker"), 0)  # alive

    where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"
    # A new broker, a restarted worker rejoining its group and the replayed events on top of
    # the rest: minutes on a loaded two-core machine, so the wait is long (a condition, not a bound)
    try:
        wait_for(
            lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == TOTAL,
            480,
            "all stored",
            RECOUNT_POLL_S,
        )
    except AssertionError:
        print(diagnose(svc, where, accepted))
        raise
    assert svc.scalar(f"SELECT count() {where}") == TOTAL  # exactly once: no copy was inserted
    assert stored_ids(svc, where) == accepted
    replayed = svc.metric("auditstream_ingest_replayed_events")
    assert replayed > 0  # the broker's loss was made good by ingest, not by luck
    print(f"killed after {killed[0]} accepted; {replayed:.0f} events replayed; {TOTAL} stored once")


def stored_ids(svc: Service, where: str) -> set[str]:
    """The event ids stored, in 16 queries (one answer holds at most 100,000 rows)."""
    stored: set[str] = set()
    for digit in "0123456789abcdef":
        rows = svc.sql(
            f"SELECT DISTINCT toString(event_id) AS id {where} AND startsWith(toString(event_id), '{digit}')"
        )
        stored.update(r["id"] for r in rows)
    return stored


def _tail(path: Path, lines: int = 60) -> str:
    if not path.exists():
        return f"({path.name} missing)"
    text = re.sub(r"\x1b\[[0-9;]*m", "", path.read_text(errors="replace"))
    return "\n".join(line[:300] for line in text.splitlines()[-lines:])


async def _broker_state(
    bootstrap: str, topic: str
) -> tuple[dict[int, int | None], dict[int, dict[int, set[str]]]]:
    """Per partition: the worker group's committed offset, and the event ids of each message."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id="auditstream-worker", enable_auto_commit=False
    )
    await consumer.start()
    messages: dict[int, dict[int, set[str]]] = {}
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or set())]
        consumer.assign(tps)
        committed = {tp.partition: await consumer.committed(tp) for tp in tps}
        await consumer.seek_to_beginning(*tps)
        while batch := await consumer.getmany(timeout_ms=3000):
            for tp, records in batch.items():
                for m in records:
                    ids = {str(orjson.loads(line)["event_id"]) for line in (m.value or b"").splitlines()}
                    messages.setdefault(tp.partition, {})[m.offset] = ids
    finally:
        await consumer.stop()
    return committed, messages


def diagnose(svc: Service, where: str, accepted: set[str]) -> str:
    """What the service holds when the events are not all stored: for a failure report."""
    out = []
    stored = stored_ids(svc, where)
    missing = accepted - stored
    out.append(f"accepted {len(accepted)}, stored distinct {len(stored)}, missing {len(missing)}")
    out.append(f"dead_letters: {svc.scalar('SELECT count() FROM dead_letters')}")
    for name in ("replayed", "replay_retained", "replay_dropped"):
        metric = f"auditstream_ingest_{name}_events"
        out.append(f"{metric} = {svc.metric(metric)}")
    bootstrap = (svc.data_dir / "run" / "broker.addr").read_text().strip()
    try:
        committed, messages = asyncio.run(_broker_state(bootstrap, "auditstream.extension"))
        out.append(f"worker group's committed offsets on the broker now: {committed}")
        for partition, ids in sorted(messages.items()):
            holding = sorted(offset for offset, message in ids.items() if message & missing)
            where_missing = f"{len(holding)} at {holding[0]}..{holding[-1]}" if holding else "none"
            out.append(
                f"partition {partition}: offsets {min(ids)}..{max(ids)}, "
                f"{len(set().union(*ids.values()))} event ids; messages with missing events: {where_missing}"
            )
    except Exception as exc:  # a report, not a check
        out.append(f"broker state unavailable: {exc!r}")
    with contextlib.suppress(Exception):
        lag = {k: v for k, v in worker_metrics(svc).items() if "lag" in k and "extension" in k}
        out.append(f"worker lag: {lag}")
    for pid in sorted((svc.data_dir / "run").glob("*.pid")):
        out.append(f"{pid.name}: {pid.read_text()}")
    logs = svc.data_dir / "logs"
    for name in ("worker-0", "ingest", "broker"):
        out.append(f"--- {name}.log ---\n{_tail(logs / f'{name}.log')}")
    for up in svc.data_dir.parent.glob("up-*.log"):
        out.append(f"--- {up.name} ---\n{_tail(up)}")
    return "\n".join(out)
