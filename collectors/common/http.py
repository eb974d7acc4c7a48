"""One HTTP exchange as a plain record, and the rules for retrying one.

Fetchers return a :class:`RawResponse` instead of raising, so a crawler records what
it saw (a timeout is a result too) and decides about retries in one place.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp


@dataclass(frozen=True)
class RawResponse:
    """One HTTP exchange; ``http_status`` is 0 when no answer came (``error`` says why)."""

    url: str
    http_status: int
    body: bytes
    fetched_at: datetime
    content_type: str = ""
    charset: str | None = None
    error: str = ""
    retry_after: float | None = None


def retryable(status: int) -> bool:
    """No answer, 429 or 5xx: worth asking again after a pause."""
    return status in (0, 429) or status >= 500


def retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the HTTP-date form is ignored)."""
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


async def read_capped(resp: aiohttp.ClientResponse, cap: int) -> bytes:
    """The body, cut at ``cap`` bytes: an answer far larger than a page is wrong anyway."""
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(64 * 1024):
        chunks.append(chunk)
        size += len(chunk)
        if size >= cap:
            break
    return b"".join(chunks)[:cap]


def network_error(exc: BaseException) -> str:
    """A short reason for ``RawResponse.error``."""
    text = "timeout" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
    return text[:200]


async def raw_response(resp: aiohttp.ClientResponse, url: str, cap: int) -> RawResponse:
    """What both crawlers keep of an answer: status, capped body, type and Retry-After."""
    body = await read_capped(resp, cap)
    return RawResponse(
        url,
        resp.status,
        body,
        datetime.now(UTC),
        resp.content_type,
        resp.charset,
        retry_after=retry_after(resp.headers.get("Retry-After")),
    )


def no_answer(url: str, exc: BaseException) -> RawResponse:
    """A request that got no answer (connection error, timeout)."""
    return RawResponse(url, 0, b"", datetime.now(UTC), error=network_error(exc))


class ServiceUnreachable(Exception):
    """Nothing answered at a service's base URL."""


async def ensure_answers(
    url: str, session: aiohttp.ClientSession | None = None, timeout_s: float = 10.0
) -> None:
    """Raise ``ServiceUnreachable`` at once when nothing answers ``GET /healthz`` at ``url``:
    for a command about to send, whose retries (meant for a service that restarts) would
    otherwise wait for minutes on a wrong URL or a service that never ran."""
    async with contextlib.AsyncExitStack() as stack:
        if session is None:
            session = await stack.enter_async_context(aiohttp.ClientSession())
        try:
            async with session.get(
                url.rstrip("/") + "/healthz", timeout=aiohttp.ClientTimeout(total=timeout_s)
            ):
                pass
        except (TimeoutError, aiohttp.ClientError) as exc:
            why = type(exc).__name__
            raise ServiceUnreachable(f"nothing answers at {url} ({why}); is the service running?") from None
