"""The pool of read lanes both stores keep (chDB's connections, a server's clients)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

from core.store.base import QueryLimits, StoreBusy

L = TypeVar("L")


class ReadLanes(asyncio.Queue[L], Generic[L]):
    """Free read lanes. A read waits for one at most as long as it may run (``take``): six
    slow analyst queries on two lanes had made the sixth, and a SELECT 1 after it, wait
    90 s; past that the store is busy (a 503 to say retry, not that it is down)."""

    def __init__(self, lanes: Iterable[L]) -> None:
        super().__init__()
        for lane in lanes:
            self.put_nowait(lane)
        self.size = self.qsize()
        self.waiting = 0

    async def take(self, limits: QueryLimits | None) -> L:
        self.waiting += 1
        try:
            wait = limits.max_execution_time_s if limits is not None else None
            return await asyncio.wait_for(self.get(), wait)
        except TimeoutError:
            raise StoreBusy(f"every read lane stayed busy for {wait:g} s") from None
        finally:
            self.waiting -= 1

    def status(self) -> dict[str, Any]:
        """How busy the lanes are (``saturated``: every lane busy and reads waiting)."""
        busy = self.size - self.qsize()
        return {
            "read_lanes": self.size,
            "reads_busy": busy,
            "reads_waiting": self.waiting,
            "saturated": busy == self.size and self.waiting > 0,
        }

    def drain(self) -> list[L]:
        """Every free lane, taken out (to close them)."""
        out = []
        while not self.empty():
            out.append(self.get_nowait())
        return out
