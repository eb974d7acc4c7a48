"""Rate limiter, backoff and circuit breaker on a fake clock (no waiting)."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from collectors.common.politeness import Backoff, CircuitBreaker, RateLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.parametrize(("rate", "jitter"), [(1.0, 0.5), (20.0, 0.0), (20.0, 0.25)])
def test_rate_limiter_spacing_is_between_interval_and_interval_plus_jitter(
    rate: float, jitter: float
) -> None:
    clock = FakeClock()
    limiter = RateLimiter(rate, jitter, rng=random.Random(1), clock=clock, sleep=clock.sleep)
    starts = []

    async def go() -> None:
        for _ in range(50):
            await limiter.wait()
            starts.append(clock.now)

    asyncio.run(go())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 1 / rate - 1e-9
    assert max(gaps) <= (1 + jitter) / rate + 1e-9
    if jitter:
        assert max(gaps) - min(gaps) > 0.1 * jitter / rate  # the jitter is really there


def test_rate_limiter_shares_slots_between_concurrent_callers() -> None:
    clock = FakeClock()
    limiter = RateLimiter(10.0, 0.0, clock=clock, sleep=clock.sleep)
    starts: list[float] = []

    async def caller() -> None:
        for _ in range(5):
            await limiter.wait()
            starts.append(clock.now)

    async def go() -> None:
        await asyncio.gather(*(caller() for _ in range(3)))

    asyncio.run(go())
    assert len(starts) == 15
    assert len(set(round(s, 6) for s in starts)) == 15  # never two requests in one slot


def test_backoff_grows_until_the_cap_and_honours_retry_after() -> None:
    backoff = Backoff(0.5, 10.0, rng=random.Random(3))
    delays = [backoff.delay(a) for a in range(6)]
    assert all(b > a for a, b in itertools.pairwise(delays[:5]))
    assert delays[0] >= 0.5 and max(delays) <= 10.0
    assert backoff.delay(0, retry_after=7.0) == 7.0
    assert backoff.delay(0, retry_after=70.0) == 10.0


def test_circuit_breaker_opens_pauses_reopens_longer_and_closes() -> None:
    clock = FakeClock()
    said: list[str] = []
    breaker = CircuitBreaker("google", 3, 10.0, 25.0, on_change=said.append, clock=clock, sleep=clock.sleep)
    breaker.record("blocked")
    breaker.record("ok")  # an answer in between resets the count
    for _ in range(2):
        breaker.record("blocked")
    breaker.record("error")  # errors are neither blocks nor answers
    assert breaker.state == "closed"
    breaker.record("blocked")
    assert breaker.state == "open" and breaker.remaining() == 10.0
    assert said == ["circuit breaker OPEN for google: 3 consecutive blocked responses; pausing 10.0s"]

    asyncio.run(breaker.wait())
    assert clock.slept == [10.0] and breaker.state == "half_open"
    breaker.record("blocked")
    assert breaker.state == "open" and breaker.remaining() == 20.0
    clock.now += 20.0
    breaker.record("blocked")
    assert breaker.remaining() == 25.0  # capped
    clock.now += 25.0
    breaker.record("empty")
    assert breaker.state == "closed" and breaker.times_opened == 3
    assert said[-1] == "circuit breaker closed for google: answers are back"
    for _ in range(3):
        breaker.record("blocked")
    assert breaker.remaining() == 10.0  # back to the base cooldown
