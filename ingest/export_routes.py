"""``GET /v1/export/{kind}`` and ``GET /v1/export/{kind}/{table}``: a study's data, to publish.

``auditstream export`` asks for the manifest first (each table's columns, types, key and
rows, the experiment's registration and analysis plan, the service's version and clock),
then reads every table a page at a time: its raw events (written out as ``auditstream
import`` reads them) and its result tables. What a study is, per kind, and how a table is
paged is ``schemas/export_tables.py``: each page is one bounded query on a read lane, the
next one starting after the last row's key, so an export never holds a study in memory,
is not cut at the analysts' 100,000 rows, and never holds up intake or the worker. A
page over ``PAGE_BYTES`` is read again with half the rows.

Admin scope: an export is every row of a study, a crawler study's queries among them.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import Any

import orjson
from aiohttp import web

from core.store import QueryResult, StoreError, StoreUnavailable
from core.store.base import QueryLimits, StoreBusy
from ingest.app_state import STORE
from ingest.clock import CLOCK
from ingest.errors import problem
from ingest.experiments import load
from ingest.handlers import authorize, json_response, store_busy, store_unavailable
from ingest.plans import read_plan
from schemas.export_tables import (
    ARRANGEMENT,
    KINDS,
    BadCursor,
    StudyKind,
    columns_sql,
    count_sql,
    next_after,
    page_sql,
)
from schemas.topics import Family
from schemas.wire import format_received_at

log = logging.getLogger(__name__)

MAX_PAGE_ROWS = 100_000
DEFAULT_PAGE_ROWS = 10_000
PAGE_BYTES = 32 * 1024**2
"""A page's size in ClickHouse's columns at most (its JSON is a few times that)."""
QUERY_S = 600.0
"""How long one page's query may run (an aggregating view is computed whole per page)."""
MAX_STUDY = 200


def _kind(request: web.Request) -> StudyKind:
    kind = KINDS.get(request.match_info["kind"])
    if kind is None:
        raise problem(404, "unknown_export", f"the study kinds are {', '.join(KINDS)}")
    return kind


def _study(request: web.Request, kind: StudyKind) -> str:
    study = request.query.get("study", "")
    if len(study) > MAX_STUDY or (not study and not kind.prefix):
        raise problem(400, "bad_request", f"study: {kind.study} of at most {MAX_STUDY} characters")
    return study


def _limit(request: web.Request) -> int:
    text = request.query.get("limit", str(DEFAULT_PAGE_ROWS))
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_PAGE_ROWS:
        raise problem(400, "bad_request", f"limit: an integer from 1 to {MAX_PAGE_ROWS}")
    return int(text)


def _after(request: web.Request) -> Any:
    text = request.query.get("after")
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise problem(
            400, "bad_request", "after: the `next` of the page before, as it was answered"
        ) from None


NOT_A_KEY = ("CANNOT_PARSE", "ILLEGAL_TYPE_OF_ARGUMENT", "TYPE_MISMATCH", "NO_COMMON_TYPE")
"""ClickHouse's errors for a cursor value that is no value of its key column (text where a
time or an id goes): the caller's ``after`` (400), not a failure of the service's."""
TOO_LARGE = "TOO_MANY_ROWS_OR_BYTES"


async def _query(
    request: web.Request, sql: str, limits: QueryLimits | None = None, cursor: bool = False
) -> QueryResult:
    """The service's own statement on a read lane: 503 when the store is down or busy, or
    refuses it (a bug: logged); 400 when it refuses a caller's ``cursor``; a page over the
    size limit is raised as it is."""
    try:
        return await request.app[STORE].query(sql, read_only=True, limits=limits)
    except StoreBusy:
        raise store_busy(request) from None
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except StoreError as exc:
        if TOO_LARGE in str(exc):
            raise
        if cursor and any(code in str(exc) for code in NOT_A_KEY):
            raise problem(400, "bad_request", "after: not a key of this table") from None
        log.error("export query failed: %s", str(exc)[:500])
        raise problem(503, "store_refused", str(exc)[:500]) from None


def _family(family: Family | None) -> str | None:
    return None if family is None else family.name


async def get_manifest(request: web.Request) -> web.Response:
    """What a study's export holds: each table with its columns, key and rows now; for an
    experiment its registration and analysis plan."""
    authorize(request, "admin")
    kind = _kind(request)
    study = _study(request, kind)
    tables = []
    for table in kind.tables:
        columns = await _query(request, columns_sql(kind, table, study))
        rows = await _query(request, count_sql(kind, table, study))
        tables.append(
            {
                "name": table.name,
                "events": _family(table.events),
                "key": list(table.key),
                "columns": [
                    {"name": n, "type": t} for n, t in zip(columns.columns, columns.types, strict=True)
                ],
                "rows": int(rows.rows[0][0]),
                "documented_as": list(table.documented_as),
            }
        )
    registration, plan = None, None
    if kind is ARRANGEMENT:
        try:
            config = await load(request.app[STORE], study)
            answer = await read_plan(request.app[STORE], study)
        except StoreUnavailable as exc:
            raise store_unavailable(request, exc) from None
        registration = config.model_dump(mode="json") if config is not None else None
        plan = answer if answer["plan"] is not None else None
    return json_response(
        {
            "kind": kind.name,
            "study": study,
            "study_is": kind.study,
            "selected_by": kind.where(study),
            "exported_at": format_received_at(request.app[CLOCK].now()),
            "version": metadata.version("auditstream"),
            "tables": tables,
            "registration": registration,
            "plan": plan,
        }
    )


async def get_page(request: web.Request) -> web.Response:
    """Up to ``limit`` rows of one of a study's tables, in key order, after ``after``;
    ``next`` is what to send as ``after`` for the next page (null after the last)."""
    authorize(request, "admin")
    kind = _kind(request)
    table = kind.table(request.match_info["table"])
    if table is None:
        names = ", ".join(t.name for t in kind.tables)
        raise problem(404, "unknown_export", f"the tables of a {kind.name} study are {names}")
    study = _study(request, kind)
    limit = _limit(request)
    after = _after(request)
    while True:
        try:
            sql = page_sql(kind, table, study, after, limit)
        except BadCursor as exc:
            raise problem(400, "bad_request", f"after: {exc}") from None
        limits = QueryLimits(QUERY_S, max_result_rows=limit + 1, max_result_bytes=PAGE_BYTES)
        try:
            result = await _query(request, sql, limits, cursor=after is not None)
            break
        except StoreError:  # too large: the same page, half as many rows
            if limit == 1:
                raise problem(
                    503, "store_refused", f"one row of {table.name} is over {PAGE_BYTES} bytes"
                ) from None
            limit //= 2
    cursor = next_after(table, result.columns, result.rows, limit)
    return json_response(
        {
            "table": table.name,
            "columns": result.columns,
            "types": result.types,
            "rows": result.rows,
            "next": None if cursor is None else orjson.dumps(cursor).decode(),
        }
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/export/{kind}", get_manifest)
    app.router.add_get("/v1/export/{kind}/{table}", get_page)
