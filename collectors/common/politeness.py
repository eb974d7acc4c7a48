"""Politeness towards one engine: rate limit with jitter, backoff, circuit breaker.

A blocked crawler records nothing useful, so every collector paces itself with these.
All timings are parameters so tests can run fast; the clock and sleep are injectable
so the state machines can be tested without waiting.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Literal

log = logging.getLogger(__name__)

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class RateLimiter:
    """Spaces request starts at least ``1/rate`` apart, plus jitter, across all callers."""

    def __init__(
        self,
        rate: float,
        jitter: float = 0.5,
        *,
        rng: random.Random | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.jitter = max(jitter, 0.0)
        self._rng = rng or random.Random()
        self._clock = clock
        self._sleep = sleep
        self._next = float("-inf")

    async def wait(self) -> None:
        """Claim the next slot, then sleep until it (a cancelled waiter's slot stays used)."""
        if self.interval <= 0:
            return
        now = self._clock()
        slot = max(now, self._next)
        self._next = slot + self.interval * (1.0 + self._rng.uniform(0.0, self.jitter))
        if slot > now:
            await self._sleep(slot - now)


class Backoff:
    """Exponential delays ``base * 2**attempt`` (capped), stretched by up to 50% jitter.

    The jitter is below 100%, so each delay is longer than the previous one until the
    cap: a retry never comes sooner than the last. ``Retry-After`` wins when longer.
    """

    def __init__(self, base: float, cap: float, *, rng: random.Random | None = None) -> None:
        self.base = base
        self.cap = cap
        self._rng = rng or random.Random()

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        raw = self.base * (2**attempt) * (1.0 + self._rng.uniform(0.0, 0.5))
        if retry_after is not None and retry_after > raw:
            raw = retry_after
        return min(raw, self.cap)


BreakerState = Literal["closed", "open", "half_open"]


class CircuitBreaker:
    """Pauses an engine after ``threshold`` consecutive blocked responses.

    Open: every request of the engine waits out the cooldown. Then half-open: the next
    answer decides; another block reopens it with a doubled cooldown (up to the max),
    an ordinary answer closes it. ``on_change`` gets a human-readable message, so the
    operator sees a block as it happens (docs/metrics.md: "a crawler got blocked").
    """

    def __init__(
        self,
        name: str,
        threshold: int = 5,
        cooldown_s: float = 300.0,
        max_cooldown_s: float = 3600.0,
        *,
        on_change: Callable[[str], None] | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.name = name
        self.threshold = max(threshold, 1)
        self.base_cooldown = cooldown_s
        self.max_cooldown = max_cooldown_s
        self._cooldown = cooldown_s
        self._on_change = on_change
        self._clock = clock
        self._sleep = sleep
        self._open_until: float | None = None
        self.consecutive_blocks = 0
        self.times_opened = 0

    @property
    def state(self) -> BreakerState:
        if self._open_until is None:
            return "closed"
        return "open" if self._clock() < self._open_until else "half_open"

    def remaining(self) -> float:
        return 0.0 if self._open_until is None else max(self._open_until - self._clock(), 0.0)

    async def wait(self) -> None:
        """Return once requests may go out (immediately unless open)."""
        while (left := self.remaining()) > 0:
            await self._sleep(left)

    def record(self, status: str) -> None:
        """Feed one answer's parse status: ``blocked`` counts, ``ok``/``empty`` resets."""
        if status == "blocked":
            self.consecutive_blocks += 1
            if self.state == "half_open":
                self._cooldown = min(self._cooldown * 2, self.max_cooldown)
                self._open(f"still blocked after the pause; pausing {self._cooldown:.1f}s")
            elif self.state == "closed" and self.consecutive_blocks >= self.threshold:
                self._cooldown = self.base_cooldown
                self._open(
                    f"{self.consecutive_blocks} consecutive blocked responses; pausing {self._cooldown:.1f}s"
                )
        elif status in ("ok", "empty"):
            self.consecutive_blocks = 0
            if self._open_until is not None:
                self._open_until = None
                self._cooldown = self.base_cooldown
                self._say(f"circuit breaker closed for {self.name}: answers are back")

    def _open(self, why: str) -> None:
        self._open_until = self._clock() + self._cooldown
        self.times_opened += 1
        self._say(f"circuit breaker OPEN for {self.name}: {why}")

    def _say(self, message: str) -> None:
        log.warning(message)
        if self._on_change is not None:
            self._on_change(message)
