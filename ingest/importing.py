"""``POST /v1/import`` and ``POST /v1/import/recompute``: bulk import for operators.

An earlier study's export or a paper's published data comes in as chunks of JSON lines
(``auditstream import``). Every line is validated by the models ``POST /v1/events``
uses (``ingest/import_chunks.py``: rejections counted with the same reasons, values never
echoed), stamped with its ``received_at`` (the line's own, else its ``sent_at``, so
importing a file twice gives the same rows), and stored once per ``event_id`` without a
detour through Kafka (``streams/bulk_import.py``). Each answer names the days the chunk
touched; the client sends them back to ``/v1/import/recompute`` once the file is in, and
the derived tables are recomputed in bulk. Admin scope only: an import writes history.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.lifetime import exit_with_parent
from core.process_pool import PoolUnavailable, RestartingPool
from core.store import StoreError, StoreUnavailable
from ingest.app_state import ARMS, CONFIG, METRICS, STORE
from ingest.board.compute import Panel, PanelFailed
from ingest.board.routes import COMPUTE
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_json, store_unavailable
from ingest.import_chunks import PreparedChunk, prepare_chunk
from ingest.registered_arms import Registry
from schemas.topics import FAMILIES
from streams.bulk_import import DAY_S, BulkImporter, Span

BY_FAMILY = {f.name: f for f in FAMILIES}
IMPORTER = web.AppKey("bulk_importer", BulkImporter)
PREPARE: web.AppKey[Callable[[bytes, Registry], Awaitable[PreparedChunk]]] = web.AppKey("import_prepare")
IMPORT_LOCK = web.AppKey("import_lock", asyncio.Lock)
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
MAX_LISTED_REJECTIONS = 100
MAX_RECOMPUTE = 1000
"""Days (or studies) one recompute request may name: the client sends one at a time."""


class _SpanIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    experiment_id: str = Field(max_length=200)
    engine: str = Field(max_length=50)
    day_start: int = Field(ge=0, lt=2**32 - DAY_S)
    """A UTC midnight the slices' ``DateTime`` holds (1970-2106)."""


class _StudyIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    experiment_id: str
    engine: str


class _RecomputeIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    spans: list[_SpanIn] = Field(default=[], max_length=MAX_RECOMPUTE)
    installs: list[_StudyIn] = Field(default=[], max_length=MAX_RECOMPUTE)


async def _body(request: web.Request) -> bytes:
    limit = request.app[CONFIG].import_max_body_bytes
    if request.content_type not in NDJSON_TYPES:
        raise problem(415, "unsupported_media_type", "send Content-Type: application/x-ndjson")
    if request.content_length is not None and request.content_length > limit:
        raise problem(413, "body_too_large", f"a chunk may hold at most {limit} bytes")
    # A chunk is large and may come slowly, so its deadline is on progress, not on the whole:
    # no byte for body_read_timeout_s (a client that stalled, a chunked body that never ends)
    # is a 408, and the connection is closed (ingest/middlewares.py).
    idle_s = request.app[CONFIG].body_read_timeout_s
    parts: list[bytes] = []
    size = 0
    while True:
        try:
            async with asyncio.timeout(idle_s):
                part = await request.content.readany()  # read() returns what is buffered so far
        except TimeoutError:
            raise problem(408, "body_timeout", f"no part of the body arrived for {idle_s:g} s") from None
        if not part:
            return b"".join(parts)
        size += len(part)
        if size > limit:
            raise problem(413, "body_too_large", f"a chunk may hold at most {limit} bytes")
        parts.append(part)


async def post_import(request: web.Request) -> web.Response:
    """Store one chunk of JSON lines; answer what was stored and the days to recompute."""
    key = authorize(request, "admin")
    body = await _body(request)
    try:
        chunk = await request.app[PREPARE](body, await request.app[ARMS].current())
    except PoolUnavailable as exc:
        raise problem(503, "import_unavailable", f"{exc}; nothing was stored", {"Retry-After": "5"}) from None
    rejected = chunk.rejected
    metrics = request.app[METRICS]
    for reason, n in Counter(r.reason for r in rejected).items():
        metrics.rejected.labels(reason, key.name).inc(n)
    totals: Counter[str] = Counter()
    spans: set[Span] = set()
    try:
        async with request.app[IMPORT_LOCK]:
            for name, (rows, count) in chunk.rows.items():
                written = await request.app[IMPORTER].write(BY_FAMILY[name], rows, count)
                totals.update(inserted=written.inserted, duplicates=written.duplicates, dead=written.dead)
                spans |= written.spans
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except StoreError as exc:
        raise problem(503, "store_refused", str(exc)[:500]) from None
    return json_response(
        {
            "lines": chunk.lines,
            "accepted": sum(count for _, count in chunk.rows.values()),
            "inserted": totals["inserted"],
            "duplicates": totals["duplicates"],
            "dead_letters": totals["dead"],
            "rejected_by_reason": dict(Counter(r.reason for r in rejected)),
            "rejected": [
                {"line": r.index, "reason": r.reason, "field": r.field}
                for r in rejected[:MAX_LISTED_REJECTIONS]
            ],
            "spans": [s.to_json() for s in sorted(spans)],
        }
    )


async def post_recompute(request: web.Request) -> web.Response:
    """Recompute the derived tables of the given days, then of the given installs' studies."""
    authorize(request, "admin")
    try:
        asked = _RecomputeIn.model_validate(await read_json(request))
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise problem(400, "bad_request", f"{where}: {first['msg']}") from None
    if any(s.day_start % 86400 for s in asked.spans):
        raise problem(400, "bad_request", "day_start must be a UTC midnight (a multiple of 86400)")
    importer = request.app[IMPORTER]
    studies: dict[tuple[str, str], int] = defaultdict(int)
    try:
        async with request.app[IMPORT_LOCK]:
            for s in asked.spans:
                await importer.recompute_day(Span(s.experiment_id, s.engine, s.day_start))
                studies[(s.experiment_id, s.engine)] += 1
            for study in asked.installs:
                await importer.recompute_installs(study.experiment_id, study.engine)
                # where the board computes: the looks' pass is numpy work, kept out of ingest
                look = (("experiment_id", study.experiment_id), ("engine", study.engine))
                await request.app[COMPUTE](Panel("restore_looks", look))
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except (StoreError, PanelFailed) as exc:
        raise problem(503, "store_refused", str(exc)[:500]) from None
    return json_response({"days": len(asked.spans), "installs": len(asked.installs)})


def add_routes(app: web.Application, workers: int = 2) -> None:
    """The import routes; chunks are validated in ``workers`` processes (0: in a thread here)."""
    app[IMPORTER] = BulkImporter(app[STORE], app[CONFIG].dedup_horizon_days)
    app[IMPORT_LOCK] = asyncio.Lock()
    # started on the first import (most services never import), and again if one dies
    pool = RestartingPool(
        "import's validation processes",
        lambda _first: ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=exit_with_parent
        ),
    )

    async def prepare(body: bytes, registry: Registry) -> PreparedChunk:
        if workers == 0:
            return await asyncio.to_thread(prepare_chunk, body, registry)
        return await pool.run(prepare_chunk, body, registry)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        yield
        pool.shutdown()

    app[PREPARE] = prepare
    app.cleanup_ctx.append(lifetime)
    app.router.add_post("/v1/import", post_import)
    app.router.add_post("/v1/import/recompute", post_recompute)
