"""Retry a store operation until it succeeds: the worker never drops or skips a batch."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from core.store.base import StoreUnavailable

log = logging.getLogger(__name__)
T = TypeVar("T")


async def until_done(
    attempt: Callable[[], Awaitable[T]],
    *,
    what: str,
    count: Callable[[str], None],
    max_backoff_s: float,
    first_delay_s: float = 0.2,
) -> T:
    """``attempt()`` again, with doubling pauses up to ``max_backoff_s``, until it returns.

    A store that is down or restarting (``StoreUnavailable``) is waited out quietly; any
    other failure is one of our statements, or a bug, not the data (refused rows are
    dead-lettered before this), so it is logged with its traceback and retried rather than
    dropped. ``count`` gets ``"unavailable"`` or ``"error"`` for each failed attempt.
    """
    delay = first_delay_s
    while True:
        try:
            return await attempt()
        except StoreUnavailable as exc:
            count("unavailable")
            log.warning("store unavailable for %s, retrying in %.1fs: %s", what, delay, exc)
        except Exception:
            count("error")
            log.exception("%s failed; retrying in %.1fs", what, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, max_backoff_s)
