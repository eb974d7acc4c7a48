"""A process pool that is started again when one of its processes dies.

A ``ProcessPoolExecutor`` whose process died (an OOM kill, a crash in native code) is
broken for good: every later call raises ``BrokenProcessPool``. The board's compute
process and the import's validation processes are such pools inside ingest, and one
death had failed every later report, or every import, until ingest was restarted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


class PoolUnavailable(Exception):
    """The pool's process died again while a call waited for it."""


class RestartingPool:
    """Runs calls in a pool made by ``start`` (given whether it is the first), started on
    the first call and again by the first call that finds it broken, which then runs once
    more on the new one. Restarts are at least ``restart_every_s`` apart: a process that
    dies at every start (or a call that kills it every time) makes calls unavailable for
    that long, not a new process for each."""

    def __init__(
        self, name: str, start: Callable[[bool], ProcessPoolExecutor], restart_every_s: float = 10.0
    ) -> None:
        self.name = name
        self.restarts = 0
        self.restart_every_s = restart_every_s
        self._start = start
        self._pool: ProcessPoolExecutor | None = None
        self._restarted_at = -float("inf")
        self._closed = False

    def started(self) -> ProcessPoolExecutor:
        """The pool, started now if it was not yet."""
        if self._closed:
            raise PoolUnavailable(f"the {self.name} is shut down")
        if self._pool is None:
            self._pool = self._start(True)
        return self._pool

    def broken(self) -> bool:
        """Its process died and no call has started another yet (the executor's own thread
        notices a death at once; ``/readyz`` says so instead of "ready")."""
        return self._pool is not None and bool(getattr(self._pool, "_broken", False))

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        pool = self.started()
        try:
            return await loop.run_in_executor(pool, fn, *args)
        except BrokenProcessPool:
            # the first to find it broken starts another (unless the last start was too recent)
            if pool is self._pool and not self._restart(pool, loop.time()):
                raise self._unavailable() from None
        try:
            return await loop.run_in_executor(self.started(), fn, *args)
        except BrokenProcessPool:
            raise self._unavailable() from None

    def _unavailable(self) -> PoolUnavailable:
        return PoolUnavailable(f"the {self.name} died again; try again shortly")

    def _restart(self, broken: ProcessPoolExecutor, now: float) -> bool:
        """Replace ``broken`` with a new pool, unless the last start was too recent."""
        if now - self._restarted_at < self.restart_every_s:
            return False
        self._restarted_at = now
        self.restarts += 1
        log.warning("a process of the %s died; starting it again (%d so far)", self.name, self.restarts)
        broken.shutdown(wait=False, cancel_futures=True)
        self._pool = self._start(False)
        return True

    def kill(self) -> None:
        """End the pool's processes now: a call overran its time and will not give its process
        back. The pool is then broken, and the next call starts another (as after a death)."""
        processes = getattr(self._pool, "_processes", None) or {}
        for process in list(processes.values()):
            process.kill()

    def shutdown(self) -> None:
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
