"""A full disk, then a broker crash (issue 33, Done-means 2).

The data directory is a small tmpfs of the test's own. Once it is full the worker cannot
store; intake must turn to 503 ``storage_behind`` before an accepted event has waited longer
than ``unstored_limit_s``, instead of piling events up in the in-memory broker. A SIGKILL of
the broker then loses nothing answered 202 (ingest keeps every unstored event and sends it
again), and once space returns the worker stores everything, each event once, and intake
answers 202 again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from tests.helpers import UNLIMITED, Service, free_port, http, start_up, stop_up, wait_for
from tests.integration.test_broker_kill import stored_ids

pytestmark = pytest.mark.integration

KEY = "disk-full-key-0123456789-padded-to-35-chars"
LIMIT_S = 15


@contextlib.contextmanager
def small_filesystem(where: Path, size_mb: int) -> Iterator[Path]:
    where.mkdir(parents=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(path: Path) -> None:
    """Write zeros to ``path`` until the filesystem has no space left."""
    block = b"\0" * (1 << 20)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(block)
            except OSError:
                break
    with open(path, "ab", buffering=0) as f:  # and the last partial block
        while True:
            try:
                f.write(b"\0" * 4096)
            except OSError:
                break


class Poster:
    """Posts batches one after another and remembers every event answered 202."""

    def __init__(self, svc: Service, experiment: str) -> None:
        self.svc = svc
        self.traffic = ExtensionTraffic(
            TrafficConfig(experiment_id=experiment, seed=5, installs=300)
        ).events()
        self.accepted: set[str] = set()
        self.statuses: list[tuple[float, int, str]] = []

    async def post(self, session: aiohttp.ClientSession, n: int = 100) -> tuple[int, str]:
        batch = [next(self.traffic) for _ in range(n)]
        try:
            async with session.post(
                self.svc.url + "/v1/events", data=orjson.dumps(batch), timeout=30
            ) as resp:
                status, body = resp.status, orjson.loads(await resp.read())
        except (aiohttp.ClientError, TimeoutError):
            status, body = 0, {}
        error = body.get("error", "") if isinstance(body, dict) else ""
        if status == 202:
            assert body["rejected"] == [], body
            self.accepted.update(str(uuid.UUID(e["event_id"])) for e in batch)
        else:
            assert status in (0, 503), (status, body)
        self.statuses.append((time.monotonic(), status, error))
        return status, error

    async def until(
        self, what: str, predicate: object, within: float, pace_s: float = 0.0, batch: int = 100
    ) -> None:
        """Post until ``predicate(status, error)`` holds, at most one batch per ``pace_s``."""
        headers = {"Authorization": f"Bearer {self.svc.api_key}", "Content-Type": "application/json"}
        deadline = time.monotonic() + within
        async with aiohttp.ClientSession(headers=headers) as session:
            while True:
                status, error = await self.post(session, batch)
                if predicate(status, error):  # type: ignore[operator]
                    return
                assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.statuses[-5:]}"
                if status != 202:
                    await asyncio.sleep(0.2)  # wait-ok: a client's retry pause after a 503
                elif pace_s:
                    await asyncio.sleep(pace_s)  # wait-ok: the client's pace


@pytest.mark.timeout(600)
def test_a_full_disk_then_a_broker_kill_loses_nothing_answered_202(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "data", 400) as data_dir:
        env = {**UNLIMITED, "AUDITSTREAM_UNSTORED_LIMIT_S": str(LIMIT_S), "AUDITSTREAM_BATCH_WITHIN_S": "0.1"}
        svc = start_up(data_dir, free_port(), KEY, env=env)
        try:
            run(svc, data_dir)
        finally:
            assert stop_up(svc) == 0


def run(svc: Service, data_dir: Path) -> None:
    experiment = f"full-{uuid.uuid4().hex[:8]}"
    where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"
    poster = Poster(svc, experiment)

    # the pipeline stores while there is space
    asyncio.run(poster.until("a first 202", lambda status, _: status == 202, 60))
    wait_for(lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == len(poster.accepted), 120, "stored")

    filler = data_dir / "filler"
    fill(filler)
    full_at = time.monotonic()
    # intake keeps accepting for a while (the worker retries), then refuses instead of piling up
    asyncio.run(poster.until("503 storage_behind", lambda status, error: error == "storage_behind", 120))
    first_refusal = next(t for t, _, error in poster.statuses if error == "storage_behind")
    assert first_refusal - full_at < LIMIT_S + 60, "intake went on accepting events it could not store"
    ready = http("GET", svc.url + "/readyz")
    assert ready.status == 503 and ready.body["reason"] == "storage_behind", ready.body
    unstored = len(poster.accepted) - svc.scalar(f"SELECT uniqExact(event_id) {where}")
    assert unstored > 0, "the disk filled up, yet everything accepted was stored: the test proves nothing"

    # the broker dies with the unstored events in its memory, and is restarted
    first_broker = svc.pid("broker")
    os.kill(first_broker, signal.SIGKILL)
    wait_for(lambda: svc.pid("broker") != first_broker, 60, "a new broker")
    # while the disk is still full, nothing more is accepted
    wait_for(lambda: http("GET", svc.url + "/readyz").body.get("reason") == "storage_behind", 120, "replayed")

    # space returns: everything answered 202 is stored once, and intake accepts again
    filler.unlink()
    asyncio.run(poster.until("202 again", lambda status, _: status == 202, 240))
    total = len(poster.accepted)
    wait_for(lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == total, 300, "all stored")
    assert svc.scalar(f"SELECT count() {where}") == total  # exactly once
    assert stored_ids(svc, where) == poster.accepted
    assert svc.metric("auditstream_ingest_replayed_events") >= unstored
    print(f"{total} accepted, {unstored} unstored when the broker died; all stored once")
