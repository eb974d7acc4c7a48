"""The board's compute process, started again when it dies.

Board panels and reports are computed in one child process (``compute``), so the
bootstrap's CPU never holds up the volunteers' events. A ``ProcessPoolExecutor`` whose
process died (an OOM kill, say) is broken for good: every later call raises
``BrokenProcessPool``, and every report failed until ingest itself was restarted. Here the
first call to meet the broken pool replaces it and runs again once on the new one.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from core.settings import Settings
from ingest.board import compute
from ingest.board.compute import Panel

log = logging.getLogger(__name__)


class ComputeUnavailable(Exception):
    """The compute process died again while a panel waited for it."""


class ComputeProcess:
    """Computes panels in a child process; ``state`` is what ``/readyz`` says of it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self.restarts = 0
        self._pool, self._warmed = self._start(warm=True)

    def _start(self, *, warm: bool) -> tuple[ProcessPoolExecutor, Future[Any]]:
        pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=compute.child_init,
            initargs=(compute.store_settings(self._settings),),
        )
        # Started now rather than at the first panel: the child's imports and store take a
        # second or two that the first request would otherwise wait for. At ingest's start
        # its caches are warmed too; after a death the waiting request goes first.
        ready = pool.submit(compute.ready)
        return pool, pool.submit(compute.warm_up) if warm else ready

    async def __call__(self, panel: Panel) -> Any:
        pool = self._pool
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(pool, compute.in_child, panel)
        except BrokenProcessPool:
            if pool is self._pool:  # the first to find it broken starts another
                self.restarts += 1
                log.warning("the board's compute process died; starting another (%d so far)", self.restarts)
                pool.shutdown(wait=False, cancel_futures=True)
                self._pool, self._warmed = self._start(warm=False)
        try:
            return await loop.run_in_executor(self._pool, compute.in_child, panel)
        except BrokenProcessPool:
            raise ComputeUnavailable("the board's compute process died again; try again shortly") from None

    def state(self) -> str:
        """ "starting" until the process has started (and, at ingest's start, warmed its
        caches), "failed" when it could not, else "ready"."""
        return board_state(self._warmed)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def board_state(warmed: Future[Any]) -> str:
    """What ``/readyz`` says of the compute process from its warm-up: "starting" until the
    warm-up has run, "failed" when it could not (the process did not start, or broke), else
    "ready" (a store that did not answer yet leaves it ready but cold)."""
    if not warmed.done():
        return "starting"
    return "failed" if warmed.cancelled() or warmed.exception() is not None else "ready"
