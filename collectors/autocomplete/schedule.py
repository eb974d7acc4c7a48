"""Crawl rounds at fixed UTC times of day (the paper crawled at 9am and 6pm).

``next_run`` is pure; ``run_on_schedule`` sleeps until each next time and runs the
job, for ever or ``runs`` times. A round that overruns a slot simply starts at the
next slot after it ends; rounds never overlap.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, time, timedelta

from collectors.common.exceptions import CrawlConfigError

_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_schedule(spec: str) -> tuple[time, ...]:
    """``"09:00,18:00"`` -> sorted, distinct UTC times of day."""
    out = set()
    for part in spec.split(","):
        m = _TIME.match(part.strip())
        if not m:
            raise CrawlConfigError(f"--schedule expects HH:MM[,HH:MM...] in UTC, got {part.strip()!r}")
        out.add(time(int(m[1]), int(m[2]), tzinfo=UTC))
    return tuple(sorted(out))


def next_run(now: datetime, times: Sequence[time]) -> datetime:
    """The first scheduled instant strictly after ``now`` (an aware datetime)."""
    if not times:
        raise ValueError("no times")
    now = now.astimezone(UTC)
    for day in (now.date(), now.date() + timedelta(days=1)):
        for t in sorted(times, key=lambda t: (t.hour, t.minute)):
            at = datetime.combine(day, time(t.hour, t.minute), tzinfo=UTC)
            if at > now:
                return at
    raise AssertionError("unreachable: tomorrow always has a later time")


async def run_on_schedule(
    times: Sequence[time],
    job: Callable[[datetime], Awaitable[None]],
    *,
    notify: Callable[[str], None] = print,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    runs: int | None = None,
) -> None:
    """Sleep until each next time and run ``job(scheduled_at)``; ``runs`` bounds the rounds."""
    done = 0
    while runs is None or done < runs:
        at = next_run(now(), times)
        notify(f"next crawl round at {at:%Y-%m-%d %H:%M} UTC")
        while (left := (at - now()).total_seconds()) > 0:
            await sleep(min(left, 60.0))  # re-check the wall clock: it can jump (suspend, NTP)
        await job(at)
        done += 1
