"""One real embedded service (tansu + chDB store + worker + ingest) for the session."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.api_keys import KeyFile
from schemas.topics import all_topics
from supervisor.broker import TansuBroker
from tests.helpers import Service, free_port, http, start_up, stop_up, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    root: Path = tmp_path_factory.mktemp("service")
    svc = start_up(
        root / "data",
        free_port(),
        "test-key-0123456789-padded-to-35-chars",
        env={
            "AUDITSTREAM_RATE_LIMIT_RPS": "100000",
            "AUDITSTREAM_RATE_LIMIT_BURST": "100000",
            "AUDITSTREAM_BATCH_WITHIN_S": "0.1",
            "AUDITSTREAM_PERSONALIZATION_ROUND_WAIT_S": "4",
            "AUDITSTREAM_IDENTIFICATION_CHECK_S": "2",
            "AUDITSTREAM_SQL_MAX_EXECUTION_TIME_S": "10",  # the runaway-query test waits this long
        },
    )
    yield svc
    assert stop_up(svc) == 0


@pytest.fixture
def lone_ingest(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Service, TansuBroker]]:
    """A tansu broker and one ingest process (no worker), with optional extra env."""
    env = getattr(request, "param", {})
    broker = TansuBroker(free_port(), log_path=tmp_path / "broker.log")
    asyncio.run(broker.start_and_wait(all_topics("auditstream"), 2))
    _, key = KeyFile(tmp_path / "keys.json").create("t", ("ingest",))
    port = free_port()
    log = open(tmp_path / "ingest.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "auditstream",
            "ingest",
            "--port",
            str(port),
            "--data-dir",
            str(tmp_path),
            "--kafka-bootstrap",
            broker.bootstrap,
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
    )
    svc = Service(f"http://127.0.0.1:{port}", key, tmp_path, proc)
    wait_for(lambda: http("GET", svc.url + "/readyz", timeout=2).status == 200, 30, "ingest ready")
    yield svc, broker
    proc.terminate()
    code = proc.wait(timeout=30)  # ingest forces its own exit 15 s into a stop that hangs
    log.close()
    asyncio.run(broker.stop())
    if code not in (0, -15):  # a forced exit: its stacks are in the log; the test still stands
        tail = (tmp_path / "ingest.log").read_text(errors="replace")[-6000:]
        warnings.warn(f"ingest's stop exited {code}; its log ends:\n{tail}", stacklevel=1)
