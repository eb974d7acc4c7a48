"""The board's compute process (``compute``), started again when it dies.

Board panels and reports are computed in one child process, so the bootstrap's CPU never
holds up the volunteers' events; ``core.process_pool.RestartingPool`` replaces it when it
dies, so the board and the reports come back without restarting ingest.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from core.process_pool import RestartingPool
from core.settings import Settings
from ingest.board import compute
from ingest.board.compute import Panel


class ComputeProcess:
    """Computes panels in a child process; ``state`` is what ``/readyz`` says of it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._warmed: Future[Any] | None = None
        self.pool = RestartingPool("board's compute process", self._start)
        self.pool.started()

    def _start(self, first: bool) -> ProcessPoolExecutor:
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
        self._warmed = pool.submit(compute.warm_up) if first else ready
        return pool

    async def __call__(self, panel: Panel) -> Any:
        return await self.pool.run(compute.in_child, panel)

    async def run(self, job: Callable[..., Any], *args: Any) -> Any:
        """Another job of the compute process (``looks_job.restore_in_child``)."""
        return await self.pool.run(job, *args)

    def state(self) -> str:
        """ "starting" until the process has started (and, at ingest's start, warmed its
        caches), "failed" when it could not, "down" when it died (the next board refresh or
        report starts it again), else "ready"."""
        if self.pool.broken():
            return "down"
        return board_state(self._warmed) if self._warmed is not None else "starting"

    def shutdown(self) -> None:
        self.pool.shutdown()


def board_state(warmed: Future[Any]) -> str:
    """What ``/readyz`` says of the compute process from its warm-up: "starting" until the
    warm-up has run, "failed" when it could not (the process did not start, or broke), else
    "ready" (a store that did not answer yet leaves it ready but cold)."""
    if not warmed.done():
        return "starting"
    return "failed" if warmed.cancelled() or warmed.exception() is not None else "ready"
