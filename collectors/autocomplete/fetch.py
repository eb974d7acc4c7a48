"""Polite fetching of suggestions with aiohttp, in one context-managed session.

``EngineClient.fetch`` waits for the engine's circuit breaker and rate limiter, sends
the request within the engine's concurrency limit, retries 429, 5xx, timeouts and
connection errors with exponential backoff, and parses the final answer (parsing is
needed here: a CAPTCHA page with status 200 is a block the breaker must count).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

import aiohttp

from collectors.autocomplete.engines import EngineAdapter
from collectors.autocomplete.parsers import ParsedResponse, parse_response
from collectors.autocomplete.politeness import Politeness
from collectors.common.http import RawResponse, no_answer, raw_response, retryable
from collectors.common.metrics import BACKOFFS, BLOCKS, REQUESTS
from collectors.common.politeness import Backoff, CircuitBreaker, RateLimiter

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fetched:
    raw: RawResponse
    parsed: ParsedResponse
    attempts: int


class EngineClient:
    """Everything polite about one engine: its limiter, breaker and semaphore."""

    def __init__(
        self,
        adapter: EngineAdapter,
        session: aiohttp.ClientSession,
        politeness: Politeness,
        *,
        rng: random.Random,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.adapter = adapter
        self.politeness = politeness
        self._session = session
        self.limiter = RateLimiter(politeness.rate, politeness.jitter, rng=rng)
        self.backoff = Backoff(politeness.backoff_base, politeness.backoff_max, rng=rng)
        self.breaker = CircuitBreaker(
            adapter.engine,
            politeness.breaker_threshold,
            politeness.breaker_cooldown_s,
            politeness.breaker_max_cooldown_s,
            on_change=notify,
        )
        self._slots = asyncio.Semaphore(max(politeness.concurrency, 1))
        self.requests = 0

    async def fetch(self, query: str) -> Fetched:
        url = self.adapter.url(query)
        attempt = 0
        while True:
            raw = await self._send(url)
            if raw.http_status == 0:
                parsed = ParsedResponse(query, (), "error", raw.error)
            else:
                parsed = parse_response(
                    self.adapter.format, raw.body, raw.http_status, query=query, charset=raw.charset
                )
            opened = self.breaker.times_opened
            self.breaker.record(parsed.status)
            engine = self.adapter.engine
            if self.breaker.times_opened > opened:
                BLOCKS.labels(engine).inc()
            if not retryable(raw.http_status) or attempt >= self.politeness.max_retries:
                REQUESTS.labels(engine, parsed.status).inc()
                return Fetched(raw, parsed, attempt + 1)
            REQUESTS.labels(engine, "retry").inc()
            BACKOFFS.labels(engine).inc()
            delay = self.backoff.delay(attempt, raw.retry_after)
            log.info(
                "%s answered %s for %r; retry %d in %.2fs",
                self.adapter.engine,
                raw.http_status or raw.error,
                query,
                attempt + 1,
                delay,
            )
            attempt += 1
            await asyncio.sleep(delay)

    async def _send(self, url: str) -> RawResponse:
        """One request, sent once the breaker is closed, a rate slot is due and a concurrency
        slot is free.

        The breaker is checked again holding the concurrency slot: while this request queued
        for it, the answer of the request holding it may have opened the breaker. Then the
        slot is given back and the request waits out the pause (and takes a new rate slot).
        """
        while True:
            await self._clear_to_send()
            async with self._slots:
                if self.breaker.remaining() == 0:
                    return await self._get(url)

    async def _clear_to_send(self) -> None:
        """Wait for the breaker and a rate slot; the breaker may have opened meanwhile."""
        while True:
            await self.breaker.wait()
            await self.limiter.wait()
            if self.breaker.remaining() == 0:
                return

    async def _get(self, url: str) -> RawResponse:
        self.requests += 1
        try:
            async with self._session.get(url, headers={"Accept-Language": self.adapter.lang}) as resp:
                return await raw_response(resp, url, self.politeness.max_body_bytes)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return no_answer(url, exc)


@contextlib.asynccontextmanager
async def open_clients(
    adapters: Sequence[EngineAdapter],
    politeness: Politeness,
    *,
    notify: Callable[[str], None] | None = None,
) -> AsyncIterator[dict[str, EngineClient]]:
    """One session for all engines, one polite client per engine; closed on exit."""
    rng = random.Random(politeness.seed)
    timeout = aiohttp.ClientTimeout(total=politeness.timeout_s)
    headers = {"User-Agent": politeness.user_agent}
    async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:
        yield {a.engine: EngineClient(a, session, politeness, rng=rng, notify=notify) for a in adapters}
