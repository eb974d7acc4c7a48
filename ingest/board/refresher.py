"""Board answers from a cache that one background task keeps fresh.

A request only reads the cache. The first request for a panel registers it and waits for
its first computation; from then on the task recomputes every panel someone asked for in
the last ``keep_s`` seconds, one after the other, every ``interval_s`` seconds, and
panels nobody asks for any more are dropped. Any number of open boards therefore cost
one computation per panel per interval, and a slow computation delays the next refresh,
never an answer. A panel whose answer came out unchanged is refreshed at twice its last
interval, up to ``quiet_s`` (a finished or quiet study then costs the store a few
statements every ``quiet_s`` instead of every interval); a changed answer brings it back
to its own interval. The computation itself runs wherever ``compute`` sends it; the ingest
app gives it a separate process (``compute.in_child``), so the bootstrap never competes
with the volunteers' requests for the ingest process's interpreter.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from core.store import StoreUnavailable
from ingest.board.compute import Panel, PanelFailed

log = logging.getLogger(__name__)


class BoardUnavailable(Exception):
    """A panel has no answer yet and its computation failed (``reason`` says why)."""

    def __init__(self, reason: str, store_down: bool) -> None:
        super().__init__(reason)
        self.store_down = store_down


STORE_DOWN = "the store is down or restarting; retry shortly"
"""What a panel says while the store is away (its cause, with the store's address, is logged)."""


@dataclass
class _Entry:
    wanted_at: float
    value: Any = None
    computed_at: float = -math.inf
    interval_s: float = 0.0
    """Seconds until its next refresh (longer while its answer does not change)."""
    error: BoardUnavailable | None = None
    failure: str = ""
    """The last failure's type and message, to log a repeated one once."""
    done: asyncio.Event = field(default_factory=asyncio.Event)


class BoardRefresher:
    def __init__(
        self,
        compute: Callable[[Panel], Awaitable[Any]],
        interval_s: float = 2.0,
        keep_s: float = 60.0,
        max_panels: int = 256,
        clock: Callable[[], float] = time.monotonic,
        slower: dict[str, float] | None = None,
        quiet_s: float | None = None,
    ) -> None:
        self.compute = compute
        self.interval_s = interval_s
        self.slower = slower or {}
        """Panel kinds refreshed less often than ``interval_s``: their seconds between refreshes."""
        self.quiet_s = quiet_s
        """The longest interval a panel whose answer does not change backs off to (None: no
        backing off)."""
        self.keep_s = keep_s
        self.max_panels = max_panels
        self.clock = clock
        self.computations = 0
        self.rounds = 0
        self._entries: dict[Panel, _Entry] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def get(self, panel: Panel) -> Any:
        """The newest answer for ``panel``, waiting only for a panel's first computation."""
        self._ensure_running()
        entry = self._entries.get(panel)
        if entry is None:
            if len(self._entries) >= self.max_panels:
                self._drop_unwanted(force=True)
            entry = self._entries[panel] = _Entry(wanted_at=self.clock(), interval_s=self._base(panel))
            self._wake.set()
        entry.wanted_at = self.clock()
        await entry.done.wait()
        if entry.computed_at == -math.inf and entry.error is not None:
            raise entry.error
        return entry.value

    def _base(self, panel: Panel) -> float:
        """The panel's own interval: its kind's in ``slower``, else ``interval_s``."""
        return self.slower.get(panel.kind, self.interval_s)

    def _backed_off(self, panel: Panel, last_s: float) -> float:
        """The interval after an unchanged answer: twice the last, up to ``quiet_s``."""
        base = self._base(panel)
        return base if self.quiet_s is None else max(base, min(2 * last_s, self.quiet_s))

    def _ensure_running(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="board-refresher")

    def _drop_unwanted(self, force: bool = False) -> None:
        now = self.clock()
        for panel in [p for p, e in self._entries.items() if now - e.wanted_at > self.keep_s]:
            del self._entries[panel]
        if force and len(self._entries) >= self.max_panels:
            oldest = min(self._entries, key=lambda p: self._entries[p].wanted_at)
            self._entries[oldest].done.set()  # its waiters get what it has
            del self._entries[oldest]

    async def _run(self) -> None:
        while True:
            self._drop_unwanted()
            started = self.clock()
            for panel, entry in list(self._entries.items()):
                fresh = started - entry.computed_at < entry.interval_s
                if not fresh:
                    await self._refresh(panel, entry)
            self.rounds += 1
            # sleep out the interval (and at least as long as the round took, so refreshing
            # never keeps the board's process busy more than half the time), but start at
            # once for a panel never computed
            elapsed = self.clock() - started
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.05, self.interval_s - elapsed, elapsed))
            self._wake.clear()

    async def _refresh(self, panel: Panel, entry: _Entry) -> None:
        # its own interval again, unless the answer comes out unchanged
        last_s, entry.interval_s = entry.interval_s, self._base(panel)
        try:
            value = await self.compute(panel)
            if entry.computed_at > -math.inf and entry.error is None and value == entry.value:
                entry.interval_s = self._backed_off(panel, last_s)
            entry.value = value
            entry.computed_at = self.clock()
            entry.error = None
        except Exception as exc:
            # a panel that keeps failing the same way (type and message) is retried every
            # round but logged once: it wrote a traceback every 2 s before
            failure = f"{type(exc).__name__}: {exc}"
            repeated = entry.error is not None and entry.failure == failure
            entry.failure = failure
            if isinstance(exc, StoreUnavailable):  # its cause names the store's address: the log's only
                entry.error = BoardUnavailable(STORE_DOWN, store_down=True)
                if not repeated:
                    log.warning("board panel %s: %s", panel.kind, str(exc)[:500])
            elif isinstance(exc, PanelFailed):
                entry.error = BoardUnavailable(str(exc), store_down=False)
                if not repeated:
                    log.error("board panel %s failed: %s (repeats are not logged)", panel.kind, exc)
            else:  # the compute process died, say: keep serving, retry next round
                entry.error = BoardUnavailable(f"board computation failed: {type(exc).__name__}", False)
                if not repeated:
                    log.exception("board panel %s failed (repeats are not logged)", panel.kind)
        finally:
            self.computations += 1
            entry.done.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
