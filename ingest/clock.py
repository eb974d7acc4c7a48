"""Ingest's clock for received_at, with a bench-only offset (benchmarks and soak tests only).

``bench/soak.py`` compresses a months-long study into minutes. received_at is stamped here
with the wall clock, so every simulated day would fall on the same real day and no day would
ever close for the per-install statistics (``studies/arrangement/write/closed_sums.py``). With
``AUDITSTREAM_CLOCK_OFFSET_FILE`` set, ingest adds the whole seconds that file holds. The file
is read again at most once a second by a background task, never on a request; a missing,
empty or invalid file means no offset. Without the setting nothing is read and the clock is
the wall clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aiohttp import web

log = logging.getLogger(__name__)

REREAD_S = 1.0
MAX_OFFSET_S = 100 * 366 * 86400
"""Larger offsets are taken as invalid (a datetime past year 9999 would fail every request)."""


def read_offset(path: Path) -> int:
    """The whole seconds in ``path``; 0 when it is missing, unreadable, not an integer or
    beyond a century."""
    try:
        seconds = int(path.read_text().strip())
    except (OSError, ValueError):
        return 0
    return seconds if abs(seconds) <= MAX_OFFSET_S else 0


class Clock:
    """``now()`` for received_at: the wall clock plus the offset last read from the file."""

    def __init__(self, offset_file: Path | None, reread_s: float = REREAD_S) -> None:
        self.offset_file = offset_file
        self.reread_s = reread_s
        self.offset_s = 0
        self._task: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        now = datetime.now(UTC)
        return now + timedelta(seconds=self.offset_s) if self.offset_s else now

    async def start(self) -> None:
        if self.offset_file is None or self._task is not None:
            return
        await self._read()  # the first request already carries the offset
        log.warning("received_at is offset by %s (benchmarks only)", self.offset_file)
        self._task = asyncio.get_running_loop().create_task(self._reread(), name="clock offset")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _read(self) -> None:
        assert self.offset_file is not None
        self.offset_s = await asyncio.to_thread(read_offset, self.offset_file)

    async def _reread(self) -> None:
        while True:
            await asyncio.sleep(self.reread_s)
            await self._read()


CLOCK = web.AppKey("clock", Clock)
