"""The chDB owner reached over loopback HTTP (see ``core.store.server``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import aiohttp
import orjson

from core.store.base import (
    QueryLimits,
    QueryResult,
    Store,
    StoreBusy,
    StoreError,
    StoreUnavailable,
    loads_json,
)

TOKEN_HEADER = "X-Auditstream-Store-Token"
BUSY = "store busy"
"""How the store server's 503 says its read lanes were busy, not the store down."""


_BROKEN = (aiohttp.ServerDisconnectedError, aiohttp.ClientConnectionResetError, aiohttp.ClientOSError)
"""A connection that broke: the store process died or restarted (one that could not be
made, ``ClientConnectorError``, is not: no new connection would fare better)."""

BACKGROUND = {"lane": "background"}
"""The query parameter of a background statement (``Store.execute``): the store server runs
it on its own lane."""


class HttpStore(Store):
    """Client of the store process; every other embedded process talks to chDB this way."""

    one_writer = True

    def __init__(
        self, url: str, token: str = "", timeout_s: float = 120.0, watch_every_s: float = 4.0
    ) -> None:
        self._url = url.rstrip("/")
        self._watch_every_s = watch_every_s
        self._headers = {TOKEN_HEADER: token} if token else {}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._retired: list[aiohttp.ClientSession] = []

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout, headers=self._headers)
        return self._session

    async def _renew(self, failed: aiohttp.ClientSession) -> None:
        """After a connection broke: later calls use a new session, because the pooled
        connections of the old one lead to a store process that is gone (it was restarted).
        The old one is left to finish what it has in flight; the one retired before it
        (an earlier outage's) is closed now, so an outage keeps at most one."""
        if self._session is not failed:
            return  # another call renewed it already
        self._session = None
        earlier, self._retired = self._retired, [failed]
        for session in earlier:
            await session.close()

    async def _post(
        self, path: str, data: bytes, params: dict[str, str] | None = None, *, read: bool = False
    ) -> bytes:
        """POST to the store; a read whose connection broke is sent once more on a new one
        (after the store process restarted, every pooled connection is dead). A write is
        not: it may have been done, and its caller retries it as a whole."""
        session = self._client()
        try:
            return await self._watched(session, path, data, params)
        except aiohttp.ClientConnectorError as exc:  # nothing listens: a new connection fares no better
            raise self._unreachable(exc) from exc
        except _BROKEN as exc:
            await self._renew(session)
            if not read:
                raise self._unreachable(exc) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc) from exc
        try:
            return await self._watched(self._client(), path, data, params)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise self._unreachable(exc) from exc

    async def _watched(
        self, session: aiohttp.ClientSession, path: str, data: bytes, params: dict[str, str] | None
    ) -> bytes:
        """``_send``, given up when the store stops answering: a store process that hangs (stopped,
        or stuck on a dead disk) keeps its connections open, and every request waited the
        whole 120 s timeout. While a call runs, the store's ``/status`` (which needs no read
        lane, so a busy store answers it) is asked every ``watch_every_s``; two unanswered in a
        row end the call as unavailable, which its caller retries (a write whole)."""
        call = asyncio.ensure_future(self._send(session, path, data, params))
        unanswered = 0
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=self._watch_every_s)
                if done:
                    return call.result()
                unanswered = 0 if await self._answers(session) else unanswered + 1
                if unanswered >= 2:
                    raise StoreUnavailable(f"store at {self._url} stopped answering while a call waited")
        finally:
            if not call.done():
                call.cancel()
                with contextlib.suppress(BaseException):
                    await call

    async def _answers(self, session: aiohttp.ClientSession) -> bool:
        timeout = aiohttp.ClientTimeout(total=self._watch_every_s)
        try:
            async with session.get(self._url + "/status", timeout=timeout) as resp:
                return resp.status == 200
        except (aiohttp.ClientError, TimeoutError):
            return False

    def _unreachable(self, exc: BaseException) -> StoreUnavailable:
        return StoreUnavailable(f"store at {self._url} unreachable: {exc!r}")

    async def _send(
        self, session: aiohttp.ClientSession, path: str, data: bytes, params: dict[str, str] | None
    ) -> bytes:
        async with session.post(self._url + path, data=data, params=params) as resp:
            body = await resp.read()
            if resp.status == 200:
                return body
            try:
                message = orjson.loads(body).get("error", "") if body else resp.reason
            except (orjson.JSONDecodeError, AttributeError):
                message = f"{resp.reason} (no JSON error body)"
            if resp.status == 400:
                raise StoreError(message)
            if resp.status == 503 and str(message).startswith(BUSY):
                raise StoreBusy(message)
            raise StoreUnavailable(f"store answered {resp.status}: {message}")

    async def execute(self, sql: str, *, background: bool = False) -> None:
        await self._post("/execute", sql.encode(), BACKGROUND if background else None)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        params = {"read_only": "1"} if read_only else {}
        if limits is not None:
            params.update(limits.to_params())
        doc = loads_json(await self._post("/query", sql.encode(), params, read=read_only))
        return QueryResult(doc["columns"], doc["types"], doc["rows"])

    async def query_arrow(self, sql: str) -> Any:
        import pyarrow.ipc

        return pyarrow.ipc.open_stream(await self._post("/query_arrow", sql.encode(), read=True)).read_all()

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        if lines:
            await self._post("/insert", lines, {"table": table, **(BACKGROUND if background else {})})

    async def insert_new_json_rows(
        self, table: str, rows: Sequence[tuple[str, bytes]], lookups: Sequence[str]
    ) -> set[str]:
        """Passed on whole, so the store process runs it as one step (``Store.insert_new_json_rows``)."""
        if not rows:
            return set()
        doc = {
            "lookups": list(lookups),
            "ids": [event_id for event_id, _ in rows],
            "lines": [line.decode() for _, line in rows],
        }
        found = loads_json(await self._post("/insert_new", orjson.dumps(doc), {"table": table}))
        return set(found["found"])

    async def status(self) -> dict[str, Any]:
        try:
            async with self._client().get(self._url + "/status", timeout=aiohttp.ClientTimeout(total=2)) as r:
                return dict(await r.json()) if r.status == 200 else {"error": f"store answered {r.status}"}
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            return {"error": f"store unreachable: {exc!r}"}

    async def close(self) -> None:
        sessions, self._retired = [*self._retired, self._session], []
        for session in sessions:
            if session is not None:
                await session.close()
