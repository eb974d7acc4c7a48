"""The board's compute process and the import's validation processes end with the ingest
process that started them, even when it is SIGKILLed (no clean-up runs then)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import orjson
import pytest

from tests.helpers import http, own_service, wait_for

pytestmark = pytest.mark.integration
KEY = "helper-key-0123456789abcdef-padded-to-35-chars"


def children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_helpers_end_with_a_killed_ingest(tmp_path: Path) -> None:
    with own_service(tmp_path / "data", KEY) as svc:
        headers = {"Authorization": f"Bearer {KEY}"}
        assert (
            http("GET", svc.url + "/v1/board/index", None, headers).status == 200
        )  # starts the board's process
        line = orjson.dumps({"type": "crawl_started"})  # refused, but the validation processes start
        chunk = http(
            "POST", svc.url + "/v1/import", line, {**headers, "Content-Type": "application/x-ndjson"}
        )
        assert chunk.status == 200
        ingest = svc.pid("ingest")
        helpers = wait_for(
            lambda: children(ingest) if len(children(ingest)) >= 2 else None, 30, "helper processes"
        )
        os.kill(ingest, signal.SIGKILL)
        wait_for(lambda: not any(alive(p) for p in helpers), 30, f"helpers {sorted(helpers)} to end")
