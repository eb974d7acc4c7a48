"""The store process: owns chDB in embedded mode and serves it on loopback HTTP.

chDB allows one process per data directory, so the workers (writes) and the
ingest ``/v1/sql`` endpoint (reads) all come here. The API is internal:
``POST /execute`` (SQL body), ``POST /query[?read_only=1&<QueryLimits>]`` (SQL body,
JSON rows back), ``POST /query_arrow`` (SQL body, read-only, an Arrow IPC stream back),
``POST /insert?table=T`` (JSONEachRow body), ``POST /insert_new?table=T`` (the raw tables'
once-per-id write, its lookups and insert as one step) and ``GET /status`` (read lanes).
It runs with handler cancellation: a read whose caller hung up is killed.
"""

from __future__ import annotations

import hmac
import logging
import re
from typing import Any

import orjson
from aiohttp import web

from core.store.base import QueryLimits, Store, StoreBusy, StoreError
from core.store.http_store import BUSY, TOKEN_HEADER

log = logging.getLogger(__name__)
STORE = web.AppKey("store", Store)
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status, dumps=lambda o: orjson.dumps(o).decode())


def create_store_app(store: Store, token: str = "") -> web.Application:
    @web.middleware
    async def check_token(request: web.Request, handler: Any) -> web.StreamResponse:
        if token and request.path != "/healthz":
            given = request.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(given, token):
                return _error(401, "bad store token")
        try:
            return await handler(request)
        except StoreError as exc:
            return _error(400, str(exc))
        except StoreBusy as exc:
            return _error(503, f"{BUSY}: {exc}")

    app = web.Application(middlewares=[check_token], client_max_size=256 * 1024 * 1024)
    app[STORE] = store

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": await request.app[STORE].ping()})

    async def execute(request: web.Request) -> web.Response:
        background = request.query.get("lane") == "background"
        await request.app[STORE].execute(await request.text(), background=background)
        return web.json_response({"ok": True})

    async def query(request: web.Request) -> web.Response:
        read_only = request.query.get("read_only") == "1"
        try:
            limits = QueryLimits.from_params(request.query)
        except (KeyError, ValueError):
            return _error(400, "bad query limits")
        result = await request.app[STORE].query(await request.text(), read_only=read_only, limits=limits)
        return web.Response(body=orjson.dumps(result.to_json()), content_type="application/json")

    async def query_arrow(request: web.Request) -> web.Response:
        """A read-only query as an Arrow IPC stream (the columnar path, see Store.query_arrow)."""
        body = await request.app[STORE].query_arrow_stream(await request.text())
        return web.Response(body=body, content_type="application/vnd.apache.arrow.stream")

    async def status(request: web.Request) -> web.Response:
        return web.json_response(await request.app[STORE].status())

    async def insert(request: web.Request) -> web.Response:
        table = request.query.get("table", "")
        if not _TABLE.match(table):
            return _error(400, "bad table name")
        background = request.query.get("lane") == "background"
        await request.app[STORE].insert_json_rows(table, await request.read(), background=background)
        return web.json_response({"ok": True})

    async def insert_new(request: web.Request) -> web.Response:
        """Rows whose ids the lookups do not find, inserted in one step: {"lookups", "ids",
        "lines"} in, {"found": ids} out (``Store.insert_new_json_rows``)."""
        table = request.query.get("table", "")
        if not _TABLE.match(table):
            return _error(400, "bad table name")
        try:
            doc = orjson.loads(await request.read())
            lookups, ids, lines = doc["lookups"], doc["ids"], doc["lines"]
            rows = [(str(i), str(line).encode()) for i, line in zip(ids, lines, strict=True)]
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return _error(400, "bad insert_new body")
        found = await request.app[STORE].insert_new_json_rows(table, rows, [str(q) for q in lookups])
        return web.Response(body=orjson.dumps({"found": sorted(found)}), content_type="application/json")

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/status", status)
    app.router.add_post("/execute", execute)
    app.router.add_post("/query", query)
    app.router.add_post("/query_arrow", query_arrow)
    app.router.add_post("/insert", insert)
    app.router.add_post("/insert_new", insert_new)
    return app
