"""Request handlers: validate, produce with acks=all, then answer."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections import Counter
from operator import attrgetter
from typing import Any, TypeVar

import orjson
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess
from pydantic import BaseModel, ValidationError

from core.store import QueryResult, StoreError, StoreUnavailable
from core.store.base import QueryLimits, StoreBusy
from ingest.api_keys import ApiKey
from ingest.app_state import (
    ARMS,
    BOARD_STATE,
    CONFIG,
    ERASED,
    KEYS,
    LIMITER,
    METRICS,
    PRODUCER,
    SQL_GUARD,
    STORE,
)
from ingest.clock import CLOCK
from ingest.errors import problem
from ingest.producer import BrokerUnavailable, Paused, StorageBehind
from ingest.registered_arms import without_unregistered
from ingest.sql_guard_pool import checked
from ingest.validation import validate_body, without_conflicting_ids
from schemas.analyst_sql import check_statement_size
from schemas.event_types import FAMILY_BY_TYPE, POSTING_SCOPES, SCOPE_BY_TYPE
from schemas.sql import StatementTooLarge
from schemas.wire import format_received_at

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def authorize(request: web.Request, scope: str | tuple[str, ...]) -> ApiKey:
    """The caller's key, or a 401/403/429 answer raised as an HTTP exception.

    ``scope`` is the scope the route needs, or a tuple of which the key needs one."""
    metrics = request.app[METRICS]
    header = request.headers.get("Authorization", "")
    secret = header[7:].strip() if header[:7].lower() == "bearer " else ""
    if not secret.isascii() or not secret.isprintable():  # keys are printable ASCII
        secret = ""  # (aiohttp hands undecodable header bytes on as surrogates)
    key = request.app[KEYS].lookup(secret) if secret else None
    if key is None:
        metrics.rejected.labels("unauthorized", "unknown").inc()
        raise problem(
            401,
            "unauthorized",
            "missing, unknown or revoked API key",
            {"WWW-Authenticate": "Bearer"},
        )
    needed = (scope,) if isinstance(scope, str) else scope
    if not set(needed) & set(key.scopes):
        metrics.rejected.labels("forbidden", key.name).inc()
        raise problem(403, "forbidden", f"this key lacks the {' or '.join(map(repr, needed))} scope")
    wait = request.app[LIMITER].check(key.id)
    if wait > 0:
        metrics.rejected.labels("rate_limited", key.name).inc()
        raise problem(
            429,
            "rate_limited",
            "over the per-key rate limit",
            {"Retry-After": str(max(1, round(wait + 0.5)))},
        )
    return key


async def read_json(request: web.Request) -> Any:
    return parse_json(await read_body(request))


def parse_json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        raise problem(400, "malformed_json", "the body is not valid JSON") from None


async def read_body(request: web.Request) -> bytes:
    """The body's bytes: 415 unless JSON, 413 past the size limit, 408 past the deadline."""
    config = request.app[CONFIG]
    if request.content_type != "application/json":
        raise problem(415, "unsupported_media_type", "send Content-Type: application/json")
    if request.content_length is not None and request.content_length > config.max_body_bytes:
        raise problem(413, "body_too_large", f"body exceeds {config.max_body_bytes} bytes")
    try:
        # A body that trickles in (a byte every few seconds) or never ends (chunked, no last
        # chunk) would hold the connection for as long as the client likes: the whole body
        # has a deadline, then 408 and the connection closes (ingest/middlewares.py).
        async with asyncio.timeout(config.body_read_timeout_s):
            body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise problem(413, "body_too_large", f"body exceeds {config.max_body_bytes} bytes") from None
    except TimeoutError:
        raise problem(
            408, "body_timeout", f"the request body did not arrive within {config.body_read_timeout_s:g} s"
        ) from None
    return body


def bad_request(exc: ValidationError) -> web.HTTPException:
    """400 ``bad_request`` naming the first invalid field (never its value)."""
    first = exc.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    return problem(400, "bad_request", f"{where}: {first['msg']}")


async def read_model(request: web.Request, model: type[M]) -> M:
    """The JSON body validated as ``model``; 400 ``bad_request`` when it is not one."""
    doc = await read_json(request)
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise bad_request(exc) from None


async def post_events(request: web.Request) -> web.Response:
    app = request.app
    config, metrics = app[CONFIG], app[METRICS]
    key = authorize(request, POSTING_SCOPES)
    body = await read_body(request)
    doc = parse_json(body)  # orjson reads the JSON for every path: one dialect, one 400
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        raise problem(400, "empty_batch", "send one event or a non-empty array")
    if len(items) > config.max_events_per_request:
        raise problem(413, "too_many_events", f"at most {config.max_events_per_request} events per request")
    check_family_scopes(items, key, metrics)
    accepted, rejected = without_conflicting_ids(*validate_body(body, doc))
    if accepted:
        accepted, rejected = without_unregistered(accepted, rejected, await app[ARMS].current())
        accepted, rejected = app[ERASED].without_erased(accepted, rejected)
    for r in rejected:
        metrics.rejected.labels(r.reason, key.name).inc()
    if accepted:
        received_at = format_received_at(app[CLOCK].now())
        records = _records(config.topic_prefix, accepted, received_at)
        try:
            seconds = await app[PRODUCER].send_all(records)
        except BrokerUnavailable:
            metrics.rejected.labels("broker_unavailable", key.name).inc(len(accepted))
            raise problem(
                503,
                "broker_unavailable",
                "Kafka did not acknowledge the events; retry the whole request",
                {"Retry-After": str(config.retry_after_s)},
            ) from None
        except Paused as exc:
            metrics.rejected.labels("broker_rotating", key.name).inc(len(accepted))
            raise problem(
                503, "broker_rotating", f"{exc}; retry the whole request", {"Retry-After": "2"}
            ) from None
        except StorageBehind as exc:
            metrics.rejected.labels("storage_behind", key.name).inc(len(accepted))
            raise problem(
                503,
                "storage_behind",
                f"the service cannot store events at the moment ({exc}); retry the whole request "
                "after Retry-After seconds",
                {"Retry-After": str(config.retry_after_s)},
            ) from None
        metrics.produce_latency.observe(seconds)
        for event_type, n in Counter(map(_TYPE_OF, accepted)).items():
            metrics.accepted.labels(event_type, key.name).inc(n)
    answer: dict[str, Any] = {"accepted": len(accepted), "rejected": [r.to_json() for r in rejected]}
    if not accepted:
        answer = {"error": "all_rejected", "message": "no event in the request was valid", **answer}
    return json_response(answer, status=202 if accepted else 422)


def check_family_scopes(items: list[Any], key: ApiKey, metrics: Any) -> None:
    """403 for the whole request when an event's type needs a scope the key lacks: the
    extension's key is public, so crawl events (which drive shocks and alerts) need the
    crawler scope, and a crawler's key cannot post as a volunteer. Unknown types are left
    to validation, which rejects them per event."""
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        needed = SCOPE_BY_TYPE.get(kind) if isinstance(kind, str) else None
        if needed is not None and needed not in key.scopes:
            metrics.rejected.labels("forbidden", key.name).inc()
            raise problem(403, "forbidden", f"this key lacks the '{needed}' scope that {kind} events need")


_TYPE_OF = attrgetter("type")


def _records(prefix: str, models: list[BaseModel], received_at: str) -> list[tuple[str, bytes, bytes]]:
    """(topic, key, value) for each valid event, serialised from its model.

    Not the JSON as sent: every field is written in its canonical form (UTC
    timestamps, ``YYYY-MM-DD`` days, the event id as ClickHouse prints it), so the
    row ClickHouse stores is exactly what was validated and answered 202. The model's
    serializer is called directly (``model_dump_json`` without its wrapper and its
    ``str``), and what every event of the request shares is made once.
    """
    tail = b',"received_at":' + orjson.dumps(received_at) + b"}"
    topics: dict[str, str] = {}
    out = []
    for model in models:
        family = FAMILY_BY_TYPE[model.type]  # type: ignore[attr-defined]
        topic = topics.get(family.name)
        if topic is None:
            topic = topics[family.name] = family.topic(prefix)
        event: bytes = model.__pydantic_serializer__.to_json(model)
        out.append((topic, family.key(vars(model)), event[:-1] + tail))
    return out


STORE_WARNING_EVERY_S = 10.0
_store_warned_at = -math.inf


def store_unavailable(request: web.Request, exc: StoreUnavailable) -> web.HTTPException:
    """503 with Retry-After: ClickHouse is down or restarting, the request may be retried.
    The cause (which names the store's internal address) goes to the log, not the caller:
    once per ``STORE_WARNING_EVERY_S`` (every refused request of an outage would flood it)."""
    global _store_warned_at
    now = time.monotonic()
    if now - _store_warned_at >= STORE_WARNING_EVERY_S:
        _store_warned_at = now
        log.warning("store unavailable for %s %s: %s", request.method, request.path, str(exc)[:500])
    return problem(
        503,
        "store_unavailable",
        "the store is down or restarting; retry after Retry-After seconds",
        {"Retry-After": str(request.app[CONFIG].retry_after_s)},
    )


def store_busy(request: web.Request) -> web.HTTPException:
    """503 with Retry-After: every read lane is taken by other queries (the store is fine)."""
    return problem(
        503,
        "store_busy",
        "every read lane of the store is busy with other queries; retry after Retry-After seconds",
        {"Retry-After": str(request.app[CONFIG].retry_after_s)},
    )


async def read_query(
    request: web.Request, sql: str, failed_status: int = 400, limits: QueryLimits | None = None
) -> QueryResult:
    """A read-only query for a handler: 503 when the store is down, ``failed_status`` when
    ClickHouse refuses the statement (400 for a caller's SQL, 500 for the service's own)."""
    try:
        return await request.app[STORE].query(sql, read_only=True, limits=limits)
    except StoreBusy:
        raise store_busy(request) from None
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except StoreError as exc:
        if failed_status >= 500:
            log.error("query failed: %s", str(exc)[:500])
        raise problem(failed_status, "query_failed", str(exc)[:2000]) from None


async def post_sql(request: web.Request) -> web.Response:
    """Run one analyst statement. One over the size cap is refused before it is parsed; the
    guard parses in processes of its own (``ingest/sql_guard_pool.py``), never in this event
    loop; a key holds one of its few slots from the check until its answer is sent."""
    key = authorize(request, "read")
    config = request.app[CONFIG]
    doc = await read_json(request)
    sql = doc.get("sql") if isinstance(doc, dict) else None
    if not isinstance(sql, str):
        raise problem(400, "bad_request", 'send {"sql": "SELECT ..."}')
    try:
        check_statement_size(sql, config.sql_max_statement_bytes)
    except StatementTooLarge as exc:
        raise problem(413, "statement_too_large", str(exc)) from None
    guard = request.app[SQL_GUARD]
    with guard.in_flight.slot(key.id, config.retry_after_s):
        text = await checked(guard, sql, config.retry_after_s)
        result = await read_query(request, text, limits=config.sql_limits)
        response = json_response(result.to_json())
        await response.prepare(request)  # sent within the slot: a slow reader still holds it
        await response.write_eof()
    return response


async def healthz(request: web.Request) -> web.Response:
    return json_response({"ok": True})


async def readyz(request: web.Request) -> web.Response:
    """Ready means events can be accepted: the broker answers and the worker is storing what was
    accepted (else ``reason`` is broker_unavailable or storage_behind). The store's read lanes and
    the board's compute process ("starting" while it starts and warms its caches after a
    restart, then "ready" or "failed") are reported beside it: they slow the board, reports and
    analysts' SQL, not intake."""
    producer = request.app[PRODUCER]
    state: dict[str, Any] = {"store": await request.app[STORE].status()}
    if BOARD_STATE in request.app:
        state["board"] = request.app[BOARD_STATE]()
    if not producer.ready:
        # the producer's error names the broker's address: it goes to the log, not the caller
        reason = {
            "reason": "broker_unavailable",
            "message": "Kafka does not answer (the ingest log says why)",
        }
        return json_response({"ready": False, **reason, **state}, status=503)
    if producer.paused:
        reason = {"reason": "broker_rotating", "message": "the embedded broker is being replaced (seconds)"}
        return json_response({"ready": False, **reason, **state}, status=503)
    behind = producer.storage_behind
    if behind:
        reason = {
            "reason": "storage_behind",
            "message": f"{behind}; intake answers 503 until the worker catches up",
        }
        return json_response({"ready": False, **reason, **state}, status=503)
    return json_response({"ready": True, **state})


async def metrics(request: web.Request) -> web.Response:
    """Prometheus metrics, for a key with the ``metrics`` scope: they name keys and count
    requests per key, so they are not for whoever reaches the port."""
    authorize(request, "metrics")
    m = request.app[METRICS]
    m.observe_producer(request.app[PRODUCER])
    registry = m.registry
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # several ingest processes share a port
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    resp = web.Response(body=generate_latest(registry))
    resp.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    return resp
