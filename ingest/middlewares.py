"""Every answer is JSON, timed and counted; unexpected errors never leak payloads."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

import orjson
from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from core.store import StoreUnavailable
from ingest.app_state import METRICS
from ingest.errors import problem
from ingest.handlers import store_unavailable

log = logging.getLogger(__name__)
_KEPT_HEADERS = frozenset({"allow", "retry-after", "www-authenticate"})
"""Headers of aiohttp's own errors worth keeping (not its text/plain Content-Type/Length)."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
CLIENT_CLOSED = 499
"""The status counted for a request whose client hung up before the answer (nginx's
convention): not a 5xx, so the ingest-errors alert does not page for it."""
REQUEST_TIMEOUT = 408
"""A request whose body did not arrive in time (``body_timeout``): answered, then closed."""


async def answer_and_close(request: web.Request, exc: web.HTTPException) -> web.StreamResponse:
    """Send ``exc`` as the answer, then close the connection at once.

    The rest of such a body may never come (a chunked body with no last chunk) or come a
    byte at a time: aiohttp would otherwise read on for its lingering time (10 s) after
    the answer, or keep the connection for the next request behind it. The answer is
    written here, whole, before the connection is closed, so the client reads it.
    """
    kept = {k: v for k, v in exc.headers.items() if k.lower() in _KEPT_HEADERS}
    response = web.Response(status=exc.status, body=exc.body, content_type="application/json", headers=kept)
    response.force_close()  # "Connection: close"
    try:
        with contextlib.suppress(ConnectionError):  # the client left: nothing to tell it
            await response.prepare(request)
            await response.write_eof()
    finally:
        request.protocol.force_close()
    return response


@web.middleware
async def observe(request: web.Request, handler: Handler) -> web.StreamResponse:
    metrics = request.app[METRICS]
    route = request.match_info.route.resource.canonical if request.match_info.route.resource else "unmatched"
    started = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    except web.HTTPException as exc:
        status = exc.status
        if status == REQUEST_TIMEOUT:
            return await answer_and_close(request, exc)
        if exc.content_type != "application/json":  # aiohttp's own (404, 405, 413...): as JSON
            kept = {k: v for k, v in exc.headers.items() if k.lower() in _KEPT_HEADERS}
            body = {"error": exc.reason.lower().replace(" ", "_"), "message": exc.reason}
            return web.Response(
                status=exc.status, body=orjson.dumps(body), content_type="application/json", headers=kept
            )
        raise
    except asyncio.CancelledError:  # the client hung up (handler_cancellation): not our error
        status = CLIENT_CLOSED
        raise
    except (web.RequestPayloadError, HttpProcessingError):
        # A body that cannot be read as sent: gzip or deflate that does not decode (its
        # Content-Encoding lies), a chunked body cut short. The client's fault, a 400; the
        # bytes are not quoted.
        status = 400
        raise problem(400, "unreadable_body", "the body could not be read as its headers describe") from None
    except StoreUnavailable as exc:  # a handler that did not catch it: still a 503, not a 500
        status = 503
        raise store_unavailable(request, exc) from None
    except Exception:
        # Log the failure without the request body: it may hold what we must not keep.
        log.exception("unhandled error on %s %s", request.method, request.path)
        raise problem(500, "internal_error", "unexpected error; nothing was accepted") from None
    finally:
        metrics.requests.labels(route, str(status)).inc()
        metrics.latency.labels(route).observe(time.perf_counter() - started)
