"""A deadline on ingest's stop, so a stuck shutdown cannot outlive its supervisor's patience.

Every event ingest answered 202 is already acknowledged by the broker, so cutting a stop
short loses nothing; it does leave a clue: the stacks of every thread go to the log, and
each cleanup stage that ran slow says so by name.
"""

from __future__ import annotations

import faulthandler
import logging
import sys
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

log = logging.getLogger(__name__)

STOP_DEADLINE_S = 15.0
SLOW_STAGE_S = 1.0


def arm(app: web.Application, deadline_s: float = STOP_DEADLINE_S) -> None:
    """From the stop's first step, dump every stack and exit 1 if still running after
    ``deadline_s`` (aiohttp waits up to its ``shutdown_timeout`` for open requests first)."""

    async def on_shutdown(_: web.Application) -> None:
        log.info("stopping; exit forced in %.0f s if the stop hangs", deadline_s)
        faulthandler.dump_traceback_later(deadline_s, exit=True, file=sys.stderr)

    async def on_cleanup(_: web.Application) -> None:  # after every cleanup context
        faulthandler.cancel_dump_traceback_later()

    app.on_shutdown.append(on_shutdown)
    app.on_cleanup.append(on_cleanup)


async def stage(name: str, step: Callable[[], Awaitable[object] | object]) -> None:
    """Run one cleanup step, logging it by name when it took longer than a second."""
    started = time.monotonic()
    result = step()
    if isinstance(result, Awaitable):
        await result
    took = time.monotonic() - started
    if took > SLOW_STAGE_S:
        log.warning("stopping: %s took %.1f s", name, took)
