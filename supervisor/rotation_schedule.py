"""When the embedded broker is due for its daily replacement.

tansu keeps every message in memory, so its memory is set by how much arrived since it
started. Replaced once a day at a quiet hour, each day's peak is one day's traffic, the same
on day 5 as on day 150; the size threshold (``AUDITSTREAM_BROKER_ROTATE_MB``) stays the
safety net for a day busier than the machine can hold. Times are on the service's clock, the
one ingest stamps received_at with, so a compressed study (bench/soak.py) rotates once per
simulated day.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def last_slot(now: float, hhmm: str) -> float:
    """The latest daily ``hhmm`` (UTC) at or before ``now`` (epoch seconds)."""
    match = HHMM.match(hhmm)
    if match is None:
        raise ValueError(f"not an HH:MM time of day: {hhmm!r}")
    moment = datetime.fromtimestamp(now, UTC)
    slot = moment.replace(hour=int(match[1]), minute=int(match[2]), second=0, microsecond=0)
    if slot > moment:
        slot -= timedelta(days=1)
    return slot.timestamp()


def daily_rotation_due(started: float, now: float, hhmm: str) -> bool:
    """True once the day's ``hhmm`` has passed since the broker started (off for "")."""
    return bool(hhmm) and started < last_slot(now, hhmm) <= now
