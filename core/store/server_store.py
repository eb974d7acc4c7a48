"""A ClickHouse server through clickhouse-driver (the production backend), in lanes.

A clickhouse-driver ``Client`` holds one connection and is not thread-safe, so one client
behind one lock would make an analyst's 30-second query hold up every write of the
process. As in embedded mode (``chdb_store.py``), the store keeps lanes, each a client
of its own: the worker's writes (and their own reads), its background recomputes, a
bounded pool of read lanes for read-only queries (the board, analysts' SQL; connected as
``read_url``'s user where one is given, a read-only one in ``deploy/``), and control, which
kills a read whose caller went away (``KILL QUERY`` by the ``query_id`` the read was sent
with). A heavy read slows other reads at most; it never holds up the pipeline. Rows are
inserted through the driver's native insert, as typed columns (``native_rows.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import decimal
import ipaddress
import logging
import struct
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from core.store.base import (
    QueryLimits,
    QueryResult,
    Store,
    StoreError,
    StoreUnavailable,
    unfound,
)
from core.store.native_rows import Column, columns_of, to_columns
from core.store.read_lanes import ReadLanes

log = logging.getLogger(__name__)


def _jsonable(value: Any) -> Any:
    """Driver values to what chDB's JSON output would give for the same column."""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f").rstrip("0").rstrip(".")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _client_of(url: str) -> Any:
    from clickhouse_driver import Client

    return Client.from_url(url)


class ServerLane:
    """One client; its calls run one at a time, in a thread (the driver blocks)."""

    def __init__(self, client: Any, name: str) -> None:
        self.client, self.name = client, name
        self.lock = asyncio.Lock()

    def run(self, sql: str, params: Any = None, **kw: Any) -> Any:
        from clickhouse_driver import errors

        try:
            return self.client.execute(sql, params, **kw)
        except (errors.NetworkError, errors.SocketTimeoutError, OSError, EOFError) as exc:
            raise StoreUnavailable(str(exc)) from exc
        except errors.Error as exc:  # the server's refusals, and the driver's own (a bad UUID)
            raise StoreError(str(exc)) from exc

    async def __call__(self, sql: str, params: Any = None, **kw: Any) -> Any:
        async with self.lock:
            return await asyncio.to_thread(self.run, sql, params, **kw)

    def reset(self) -> None:
        """Drop the connection (the client opens a new one on its next call): one whose query
        was killed or failed part-way may still hold that query's output."""
        with contextlib.suppress(Exception):
            self.client.disconnect()


class ServerStore(Store):
    """A write lane, a background lane, ``read_lanes`` read lanes and a control lane, each a
    client of its own. ``connect`` makes a client from a URL (clickhouse-driver's, unless a
    test gives another); ``statements`` gives what the server runs for an executed
    statement (on a cluster, a mutation's ``ON CLUSTER`` form)."""

    def __init__(
        self,
        url: str,
        read_lanes: int = 2,
        read_url: str = "",
        connect: Callable[[str], Any] = _client_of,
        statements: Callable[[str], list[str]] | None = None,
    ) -> None:
        self._write = ServerLane(connect(url), "write")
        self._background = ServerLane(connect(url), "background")
        self._control = ServerLane(connect(url), "control")
        self._idle = ReadLanes(ServerLane(connect(read_url or url), f"read-{i}") for i in range(read_lanes))
        self._structures: dict[str, list[Column]] = {}
        self._statements = statements or (lambda sql: [sql])

    def _lane(self, background: bool) -> ServerLane:
        return self._background if background else self._write

    async def execute(self, sql: str, *, background: bool = False) -> None:
        for part in self._statements(sql):  # on a cluster, a mutation's local form
            await self._lane(background)(part)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        # limits first, readonly last: a server applies query settings in order, and under
        # readonly = 1 it would refuse to change the limits
        settings: dict[str, Any] = dict(limits.settings()) if limits is not None else {}
        if read_only:
            settings["readonly"] = 1
            rows, cols = await self._read(sql, settings, limits)
        else:
            rows, cols = await self._write(sql, with_column_types=True, settings=settings)
        result = QueryResult(
            columns=[c[0] for c in cols],
            types=[c[1] for c in cols],
            rows=[[_jsonable(v) for v in r] for r in rows],
        )
        if limits is not None:
            limits.check_answer_size(sum(len(orjson.dumps(r, default=str)) for r in result.rows))
        return result

    async def _read(self, sql: str, settings: dict[str, Any], limits: QueryLimits | None) -> Any:
        """Run on a free read lane; killed on the server if the caller goes away."""
        lane = await self._idle.take(limits)
        query_id = f"auditstream-read-{uuid.uuid4().hex}"
        try:
            task = asyncio.ensure_future(
                lane(sql, with_column_types=True, settings=settings, query_id=query_id)
            )
            try:
                return await asyncio.shield(task)
            except asyncio.CancelledError:
                await self._kill(query_id)
                with contextlib.suppress(StoreError, StoreUnavailable, asyncio.CancelledError):
                    await task  # the lane is free again only once the server has let go of it
                lane.reset()
                raise
            except (StoreError, StoreUnavailable):
                lane.reset()
                raise
        finally:
            self._idle.put_nowait(lane)

    async def _kill(self, query_id: str) -> None:
        try:
            await self._control("KILL QUERY WHERE query_id = %(id)s SYNC", {"id": query_id})
        except (StoreError, StoreUnavailable) as exc:
            log.warning("could not cancel a read on the server: %s", str(exc)[:200])

    async def status(self) -> dict[str, Any]:
        return self._idle.status()

    def _columns(self, lane: ServerLane, table: str) -> list[Column]:
        """The table's insertable columns (called holding ``lane``); an import's staging tables
        are new each chunk, so the cache is bounded."""
        if table not in self._structures:
            if len(self._structures) >= 256:
                self._structures.clear()
            self._structures[table] = columns_of(lane.run(f"DESCRIBE TABLE {table}"))
        return self._structures[table]

    def _insert(self, lane: ServerLane, table: str, lines: bytes) -> None:
        """Insert JSON lines (or one JSON array) through the driver's native insert (called
        holding ``lane``, in a thread): typed columns in Native blocks, no SQL text to parse."""
        try:
            rows = (
                orjson.loads(lines)
                if lines.lstrip().startswith(b"[")
                else [orjson.loads(line) for line in lines.split(b"\n") if line.strip()]
            )
            if not all(isinstance(row, dict) for row in rows):
                raise ValueError("a row is not a JSON object")
            inserts = to_columns(self._columns(lane, table), rows)
        except ValueError as exc:  # orjson.JSONDecodeError is one
            raise StoreError(f"cannot insert into {table}: {exc}") from exc
        for names, values in inserts:
            sql = f"INSERT INTO {table} ({', '.join(f'`{n}`' for n in names)}) VALUES"
            try:
                lane.run(sql, values, columnar=True, types_check=True)
            except (TypeError, ValueError, OverflowError, struct.error) as exc:  # the driver's checks
                raise StoreError(f"cannot insert into {table}: {exc}") from exc

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        if lines:
            lane = self._lane(background)
            async with lane.lock:
                await asyncio.to_thread(self._insert, lane, table, lines)

    async def insert_new_json_rows(
        self, table: str, rows: Sequence[tuple[str, bytes]], lookups: Sequence[str]
    ) -> set[str]:
        """The lookups and the insert as one step on the write lane, as in embedded mode; the
        lane orders this process's writes only (README, "Limits")."""
        lane = self._write
        async with lane.lock:  # held across both
            found: set[str] = set()
            for sql in lookups:
                found.update(str(row[0]) for row in await asyncio.to_thread(lane.run, sql))
            if fresh := unfound(rows, found):
                await asyncio.to_thread(self._insert, lane, table, b"\n".join(fresh))
        return found

    async def close(self) -> None:
        lanes = [self._write, self._background, self._control]
        lanes += self._idle.drain()
        for lane in lanes:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(lane.client.disconnect)
