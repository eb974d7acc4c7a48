"""Every answer is JSON, timed and counted; unexpected errors never leak payloads."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from ingest.appkeys import METRICS
from ingest.errors import problem

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


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
        if exc.content_type != "application/json":
            raise problem(
                exc.status, exc.reason.lower().replace(" ", "_"), exc.reason, dict(exc.headers)
            ) from None
        raise
    except Exception:
        # Log the failure without the request body: it may hold what we must not keep.
        log.exception("unhandled error on %s %s", request.method, request.path)
        raise problem(500, "internal_error", "unexpected error; nothing was accepted") from None
    finally:
        metrics.requests.labels(route, str(status)).inc()
        metrics.latency.labels(route).observe(time.perf_counter() - started)
