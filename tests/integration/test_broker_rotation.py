"""The embedded broker is replaced while events stream in (issue 34: a bounded embedded
default). tansu keeps every message in memory and cannot delete records, so the supervisor
replaces it: intake pauses (503 ``broker_rotating``), the worker stores everything, a fresh
broker starts, intake resumes. Every event answered 202 is stored exactly once, and posting
never stalls long."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.helpers import own_service, wait_for
from tests.integration.test_broker_kill import stored_ids
from tests.integration.test_disk_full import Poster

pytestmark = pytest.mark.integration

KEY = "rotation-key-0123456789-padded-to-35-chars"


def rotations(data_dir: Path) -> int:
    try:
        return int((data_dir / "run" / "broker.rotations").read_text())
    except (OSError, ValueError):
        return 0


def jump_to_before(offset_file: Path, hhmm: str, seconds: int) -> None:
    """Move the service's clock (bench-only offset) to ``seconds`` before the next ``hhmm``
    (the next, not tomorrow's: started between midnight and ``hhmm``, tomorrow's would leave
    today's passed since the broker started, and a rotation due at once)."""
    hour, minute = map(int, hhmm.split(":"))
    now = datetime.now(UTC)
    target = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if target <= now + timedelta(seconds=seconds):
        target += timedelta(days=1)
    offset_file.write_text(str(round(target.timestamp() - seconds - time.time())))


@pytest.mark.timeout(600)
def test_the_broker_is_replaced_mid_stream_and_nothing_accepted_is_lost(tmp_path: Path) -> None:
    """The daily replacement (AUDITSTREAM_BROKER_ROTATE_AT) on the service's clock, moved to
    a few seconds before that hour once the service runs."""
    offset_file = tmp_path / "clock-offset"
    env = {
        "AUDITSTREAM_BROKER_ROTATE_AT": "04:00",
        "AUDITSTREAM_CLOCK_OFFSET_FILE": str(offset_file),
        "AUDITSTREAM_BATCH_WITHIN_S": "0.1",
    }
    with own_service(tmp_path / "data", KEY, env=env) as svc:
        experiment = f"rot-{uuid.uuid4().hex[:8]}"
        jump_to_before(offset_file, "04:00", 10)
        first_broker = svc.pid("broker")
        poster = Poster(svc, experiment)
        # events are accepted before the rotation, refused during it, and accepted after it
        rotated = lambda status, _: status == 202 and rotations(svc.data_dir) >= 1  # noqa: E731
        asyncio.run(poster.until("a rotation", rotated, 240, pace_s=0.05, batch=50))  # ~1k events/s
        assert next(status for _, status, _ in poster.statuses) == 202
        assert svc.pid("broker") != first_broker

        total = len(poster.accepted)
        where = f"FROM raw_extension_events WHERE experiment_id = '{experiment}'"
        wait_for(lambda: svc.scalar(f"SELECT uniqExact(event_id) {where}") == total, 300, "all stored")
        assert svc.scalar(f"SELECT count() {where}") == total  # exactly once
        assert stored_ids(svc, where) == poster.accepted

        refused = [error for _, status, error in poster.statuses if status != 202]
        assert set(refused) <= {"broker_rotating", "broker_unavailable", ""}, set(refused)
        accepted_at = [t for t, status, _ in poster.statuses if status == 202]
        longest = max(b - a for a, b in itertools.pairwise(accepted_at))
        assert longest < 30, f"posting stalled {longest:.1f} s"
        counts: dict[tuple[int, str], int] = {}
        for _, status, error in poster.statuses:
            counts[(status, error)] = counts.get((status, error), 0) + 1
        print(counts)
        print(f"{total} events over {rotations(svc.data_dir)} rotations; longest pause {longest:.1f} s")
