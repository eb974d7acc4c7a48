"""``POST /v1/import`` and ``POST /v1/import/recompute``: bulk import for operators.

An earlier study's export or a paper's published data comes in as chunks of JSON lines
(``auditstream import``). Every line is validated by the models ``POST /v1/events``
uses (``ingest/import_chunks.py``: rejections counted with the same reasons, values never
echoed), stamped with its ``received_at`` (the line's own, else its ``sent_at``, so
importing a file twice gives the same rows), and stored once per ``event_id`` without a
detour through Kafka (``streams/bulk_import.py``). Each answer names the days the chunk
touched (and the autocomplete and personalization studies); the client sends them back
to ``/v1/import/recompute`` once the file is in, and the derived tables are recomputed in
bulk. Admin scope only: an import writes history.

A recompute can take minutes (a day's slices each, then per study its install rows, hourly
replicate sums and merges), longer than a client or a proxy waits for an answer: it is
answered at once (202) with a handle, runs in the background, and
``GET /v1/import/recompute/{recompute_id}`` says how far it got. Its state is kept in a
file under the data directory, so every ingest process that shares it answers the poll,
and one whose process died is reported failed (the lock it held is gone).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import multiprocessing
import os
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from core.lifetime import exit_with_parent
from core.process_pool import PoolUnavailable, RestartingPool
from core.store import StoreError, StoreUnavailable
from ingest.app_state import ARMS, CONFIG, METRICS, STORE
from ingest.board.compute import PanelFailed
from ingest.board.routes import RESTORE_LOOKS
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_model, store_unavailable
from ingest.import_chunks import PreparedChunk, prepare_chunk
from ingest.registered_arms import Registry
from schemas.topics import FAMILIES
from streams.bulk_import import DAY_S, BulkImporter, CrawlStudy, Span, shock_rule_of

log = logging.getLogger(__name__)
BY_FAMILY = {f.name: f for f in FAMILIES}
IMPORTER = web.AppKey("bulk_importer", BulkImporter)
PREPARE: web.AppKey[Callable[[bytes, Registry], Awaitable[PreparedChunk]]] = web.AppKey("import_prepare")
IMPORT_LOCK = web.AppKey("import_lock", asyncio.Lock)
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
MAX_LISTED_REJECTIONS = 100
MAX_RECOMPUTE = 1000
"""Days (or studies) one recompute request may name."""
MAX_RUNNING_RECOMPUTES = 4
"""Recomputes one ingest process runs at once (more: 503 recompute_busy)."""
KEEP_RECOMPUTES_S = 86400.0
"""How long a finished recompute's state can still be polled."""


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


class _CrawlStudyIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    engine: str = Field(max_length=50)
    study_id: str = Field(max_length=200)


class _SerpStudyIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    study_id: str = Field(max_length=200)


class RecomputeIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    spans: list[_SpanIn] = Field(default=[], max_length=MAX_RECOMPUTE)
    installs: list[_StudyIn] = Field(default=[], max_length=MAX_RECOMPUTE)
    crawl_studies: list[_CrawlStudyIn] = Field(default=[], max_length=MAX_RECOMPUTE)
    """Autocomplete studies (markers' study_id) per engine: every completed crawl analysed again."""
    serp_studies: list[_SerpStudyIn] = Field(default=[], max_length=MAX_RECOMPUTE)
    """Personalization studies: every round compared again."""


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
    crawl_studies: set[CrawlStudy] = set()
    serp_studies: set[str] = set()
    try:
        async with request.app[IMPORT_LOCK]:
            for name, (rows, count) in chunk.rows.items():
                written = await request.app[IMPORTER].write(BY_FAMILY[name], rows, count)
                totals.update(inserted=written.inserted, duplicates=written.duplicates, dead=written.dead)
                spans |= written.spans
                crawl_studies |= written.crawl_studies
                serp_studies |= written.serp_studies
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
            "crawl_studies": [s.to_json() for s in sorted(crawl_studies)],
            "serp_studies": [{"study_id": s} for s in sorted(serp_studies)],
        }
    )


@dataclass(frozen=True)
class RecomputeWork:
    """What one recompute does, each day and each study once, in the order first asked."""

    spans: tuple[Span, ...]
    studies: tuple[tuple[str, str], ...]
    crawl_studies: tuple[CrawlStudy, ...] = ()
    serp_studies: tuple[str, ...] = ()

    @classmethod
    def of(cls, asked: RecomputeIn) -> RecomputeWork:
        spans = dict.fromkeys(Span(s.experiment_id, s.engine, s.day_start) for s in asked.spans)
        studies = dict.fromkeys((s.experiment_id, s.engine) for s in asked.installs)
        crawls = dict.fromkeys(CrawlStudy(s.engine, s.study_id) for s in asked.crawl_studies)
        serps = dict.fromkeys(s.study_id for s in asked.serp_studies)
        return cls(tuple(spans), tuple(studies), tuple(crawls), tuple(serps))

    @property
    def analyses(self) -> int:
        """The crawler studies whose analyses it recomputes."""
        return len(self.crawl_studies) + len(self.serp_studies)

    @property
    def steps(self) -> int:
        return len(self.spans) + len(self.studies) + self.analyses


class RecomputeFailed(Exception):
    """A recompute stopped: ``code`` and ``message`` are what its poll answers."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class RecomputesBusy(Exception):
    """This process already runs ``MAX_RUNNING_RECOMPUTES`` recomputes."""


RECOMPUTE_ID = re.compile(r"rc_[0-9a-f]{20}")
Run = Callable[[Callable[[], None]], Awaitable[None]]
"""A recompute's work: it calls its argument after each step."""


class Recomputes:
    """Recomputes running in the background of this process, and the state of every
    recompute of the processes that share ``directory`` (one JSON file each, replaced whole).

    The process running one holds an exclusive lock on its ``.lock`` file; a recompute
    still "running" on file whose lock is free belongs to a process that died."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._by_work: dict[RecomputeWork, str] = {}
        self._states: dict[str, dict[str, Any]] = {}
        """The live state of each recompute running here (what its file says, unless the
        file could not be written or read back)."""

    def start(self, work: RecomputeWork, run: Run) -> dict[str, Any]:
        """Start ``work`` (or find the same work already running here); its state."""
        same = self._by_work.get(work)
        if same is not None and same in self._states:
            return dict(self._states[same])
        if len(self._tasks) >= MAX_RUNNING_RECOMPUTES:
            raise RecomputesBusy
        self.directory.mkdir(parents=True, exist_ok=True)
        self._forget_old()
        job_id = "rc_" + uuid.uuid4().hex[:20]
        lock = open(self._path(job_id, ".lock"), "w")  # noqa: SIM115 - held until the task ends
        fcntl.flock(lock, fcntl.LOCK_EX)
        state: dict[str, Any] = {
            "id": job_id,
            "status": "running",
            "days": len(work.spans),
            "installs": len(work.studies),
            "studies": work.analyses,
            "steps": work.steps,
            "done": 0,
        }
        self._write(state)
        self._states[job_id] = state
        self._by_work[work] = job_id
        self._tasks[job_id] = asyncio.create_task(self._run(state, work, run, lock))
        return dict(state)

    async def _run(self, state: dict[str, Any], work: RecomputeWork, run: Run, lock: TextIO) -> None:
        def step() -> None:
            state["done"] += 1
            self._write(state)

        try:
            await run(step)
            state["status"] = "done"
        except RecomputeFailed as exc:
            state.update(status="failed", error=exc.code, message=exc.message)
        except asyncio.CancelledError:
            state.update(status="failed", error="interrupted", message="the service stopped; send it again")
            raise
        except Exception:
            log.exception("recompute %s failed", state["id"])
            state.update(status="failed", error="internal_error", message="unexpected error; send it again")
        finally:
            self._write(state)
            lock.close()  # and with it the lock
            self._tasks.pop(state["id"], None)
            self._by_work.pop(work, None)
            self._states.pop(state["id"], None)

    def state(self, job_id: str) -> dict[str, Any] | None:
        """A recompute's state (None: no such recompute, or forgotten)."""
        if not RECOMPUTE_ID.fullmatch(job_id):
            return None
        try:
            state: dict[str, Any] = orjson.loads(self._path(job_id, ".json").read_bytes())
        except (FileNotFoundError, orjson.JSONDecodeError):
            return None
        if state["status"] == "running" and job_id not in self._tasks and not self._held(job_id):
            state.update(
                status="failed", error="interrupted", message="the process running it stopped; send it again"
            )
        return state

    def _held(self, job_id: str) -> bool:
        """Whether a process still holds the recompute's lock (runs it)."""
        try:
            with open(self._path(job_id, ".lock")) as lock:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except FileNotFoundError:
            return False
        return False

    def _path(self, job_id: str, suffix: str) -> Path:
        return self.directory / f"{job_id}{suffix}"

    def _write(self, state: dict[str, Any]) -> None:
        path = self._path(state["id"], ".json")
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(orjson.dumps(state))
        os.replace(tmp, path)

    def _forget_old(self) -> None:
        """Drop the files of recomputes that ended (or died) over ``KEEP_RECOMPUTES_S`` ago."""
        cutoff = time.time() - KEEP_RECOMPUTES_S
        for path in self.directory.glob("rc_*.json"):
            job_id = path.name.removesuffix(".json")
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < cutoff and job_id not in self._tasks and not self._held(job_id):
                    path.unlink()
                    self._path(job_id, ".lock").unlink(missing_ok=True)

    async def close(self) -> None:
        """Stop the recomputes running here (each is marked failed: interrupted)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


RECOMPUTES = web.AppKey("recomputes", Recomputes)


async def _recompute(app: web.Application, work: RecomputeWork, step: Callable[[], None]) -> None:
    """Recompute the derived tables of the days, then of the studies' installs, then the
    crawler studies' analyses: the same statements in the same order as when it was
    answered in the request (each under the import lock, so a chunk being stored is not
    half seen)."""
    importer = app[IMPORTER]
    try:
        for span in work.spans:
            async with app[IMPORT_LOCK]:
                await importer.recompute_day(span)
            step()
        for experiment_id, engine in work.studies:
            async with app[IMPORT_LOCK]:
                await importer.recompute_installs(experiment_id, engine)
                # where the board computes: the looks' pass is numpy work, kept out of ingest
                await app[RESTORE_LOOKS](experiment_id, engine)
            step()
        for crawls in work.crawl_studies:
            async with app[IMPORT_LOCK]:
                await importer.recompute_crawl_study(crawls)
            step()
        for study_id in work.serp_studies:
            async with app[IMPORT_LOCK]:
                await importer.recompute_serp_study(study_id)
            step()
    except StoreUnavailable as exc:
        log.warning("recompute stopped, the store is unavailable: %s", str(exc)[:500])
        raise RecomputeFailed("store_unavailable", "the store is down or restarting; send it again") from None
    except (StoreError, PanelFailed) as exc:
        raise RecomputeFailed("store_refused", str(exc)[:500]) from None


async def post_recompute(request: web.Request) -> web.Response:
    """Start recomputing the derived tables of the given days, then of the given installs'
    studies, then the given crawler studies' analyses (each named once however often it is
    asked): 202 and the recompute's state."""
    authorize(request, "admin")
    asked = await read_model(request, RecomputeIn)
    if any(s.day_start % 86400 for s in asked.spans):
        raise problem(400, "bad_request", "day_start must be a UTC midnight (a multiple of 86400)")
    if not await request.app[STORE].ping():  # a store that is down: said now, not by the poll
        raise store_unavailable(request, StoreUnavailable("the store does not answer SELECT 1"))
    work = RecomputeWork.of(asked)
    app = request.app
    try:
        state = app[RECOMPUTES].start(work, lambda step: _recompute(app, work, step))
    except RecomputesBusy:
        raise problem(
            503,
            "recompute_busy",
            f"{MAX_RUNNING_RECOMPUTES} recomputes are running; retry after Retry-After seconds",
            {"Retry-After": str(app[CONFIG].retry_after_s)},
        ) from None
    location = f"/v1/import/recompute/{state['id']}"
    return json_response(state, status=202, headers={"Location": location})


async def get_recompute(request: web.Request) -> web.Response:
    """How far a recompute got: status running, done or failed (with error and message)."""
    authorize(request, "admin")
    state = request.app[RECOMPUTES].state(request.match_info["recompute_id"])
    if state is None:
        raise problem(404, "unknown_recompute", "no recompute has this id (one is kept a day after it ends)")
    return json_response(state)


def add_routes(app: web.Application, workers: int = 2) -> None:
    """The import routes; chunks are validated in ``workers`` processes (0: in a thread here)."""
    config = app[CONFIG]
    shock_rule = shock_rule_of(config)
    app[IMPORTER] = BulkImporter(
        app[STORE], config.dedup_horizon_days, shock_rule, config.personalization_round_wait_s
    )
    app[IMPORT_LOCK] = asyncio.Lock()
    app[RECOMPUTES] = Recomputes(app[CONFIG].run_dir / "recompute")
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
        await app[RECOMPUTES].close()
        pool.shutdown()

    app[PREPARE] = prepare
    app.cleanup_ctx.append(lifetime)
    app.router.add_post("/v1/import", post_import)
    app.router.add_post("/v1/import/recompute", post_recompute)
    app.router.add_get("/v1/import/recompute/{recompute_id}", get_recompute)
