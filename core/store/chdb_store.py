"""chDB in this process: the embedded engine. Only one process may own a directory.

Within the owner, separate chDB connections to the same directory run at the same
time, so the store keeps lanes: one connection for the worker's writes (and its own
reads), one for its background recomputes (the roll-ups of per-install and per-hour
statistics, which read installs' whole histories and would otherwise hold up the next
batch), a bounded pool for read-only queries (the board, analysts' SQL), and one for
control (cancelling). A heavy analyst query then slows other reads at most; it never
holds up the pipeline. A read that is cancelled (its HTTP request ended) is killed in
chDB too, rather than left running on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.store.base import (
    INSERT_SETTINGS,
    READ_LANE_SETTINGS,
    QueryLimits,
    QueryResult,
    Store,
    StoreError,
    loads_json,
    unfound,
)
from core.store.read_lanes import ReadLanes

log = logging.getLogger(__name__)


class _Lane:
    """One chDB connection; calls on it run one at a time, in a thread (chDB releases the GIL)."""

    def __init__(self, connection: Any, read_only: bool = False) -> None:
        self.read_only = read_only
        self.connection = self._session(connection)
        self.lock = asyncio.Lock()

    def _session(self, connection: Any) -> Any:
        """A read lane's connection is read-only for good (``readonly = 2``: settings such as
        the limits may still be set per statement, ``readonly`` itself not): whatever text
        reaches it, a second statement smuggled past the SQL guard cannot write, though a
        statement's own ``SETTINGS`` binds only to its last statement."""
        if self.read_only:
            connection.query("SET readonly = 2")
        return connection

    async def renew(self, path: Path) -> None:
        """A fresh connection: one whose query failed or was killed can hand the rest of
        that query's output to the next one."""
        import chdb

        async with self.lock:
            fresh = await asyncio.to_thread(lambda: self._session(chdb.connect(str(path))))
            old, self.connection = self.connection, fresh
            with contextlib.suppress(Exception):
                await asyncio.to_thread(old.close)

    def run(self, sql: str, fmt: str) -> bytes:
        try:
            return bytes(self.connection.query(sql, fmt).bytes())
        except Exception as exc:  # chDB raises plain RuntimeError subclasses
            raise StoreError(str(exc)) from exc

    async def __call__(self, sql: str, fmt: str = "CSV") -> bytes:
        async with self.lock:
            return await asyncio.to_thread(self.run, sql, fmt)


class ChdbStore(Store):
    """Owns a chDB data directory: a write lane, a background write lane (the worker's
    roll-ups, ``Store.execute``), ``read_lanes`` read lanes and a control lane."""

    one_writer = True

    def __init__(self, path: Path, read_lanes: int = 2) -> None:
        import chdb  # heavy import, only where chDB is used

        path.mkdir(parents=True, exist_ok=True)
        try:
            connections = [chdb.connect(str(path)) for _ in range(read_lanes + 3)]
        except Exception as exc:
            raise StoreError(f"cannot open chDB at {path}: {exc}") from exc
        self.path = path
        write, background, control, *reading = connections
        self._write, self._background, self._control = _Lane(write), _Lane(background), _Lane(control)
        self._idle = ReadLanes(_Lane(c, read_only=True) for c in reading)

    async def execute(self, sql: str, *, background: bool = False) -> None:
        await (self._background if background else self._write)(sql)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        if not read_only:
            return _result(await self._write(sql + _JSON_ROWS, "JSONCompact"))
        return _result(await self._read(sql, limits, "JSONCompact"))

    async def query_arrow(self, sql: str) -> Any:
        import pyarrow.ipc

        return pyarrow.ipc.open_stream(await self.query_arrow_stream(sql)).read_all()

    async def query_arrow_stream(self, sql: str) -> bytes:
        """``query_arrow``'s result as chDB wrote it (an Arrow IPC stream): what the store
        server passes on as it is, with no table built and written again in between."""
        return await self._read(sql, None, "ArrowStream")

    async def _read(self, sql: str, limits: QueryLimits | None, fmt: str) -> bytes:
        """Run a read-only statement on a free read lane; killed in chDB if the caller goes away."""
        tag = f"auditstream-read-{uuid.uuid4().hex}"
        settings = f"{READ_LANE_SETTINGS}, log_comment = '{tag}'"
        if limits is not None:
            settings += ", " + limits.sql()
        lane = await self._idle.take(limits)
        try:
            task = asyncio.ensure_future(lane(f"{sql}\nSETTINGS {settings}", fmt))
            try:
                raw = await asyncio.shield(task)
            except asyncio.CancelledError:
                await self._kill(tag)
                with contextlib.suppress(StoreError, asyncio.CancelledError):
                    await task  # the lane is free again only once chDB has let go of it
                await lane.renew(self.path)
                raise
            except StoreError:
                await lane.renew(self.path)
                raise
        finally:
            self._idle.put_nowait(lane)
        if limits is not None:
            limits.check_answer_size(len(raw))
        return raw

    async def _kill(self, tag: str) -> None:
        """Stop the read tagged ``tag`` in chDB (its caller went away)."""
        try:
            await self._control(
                f"KILL QUERY WHERE position(query, '{tag}') > 0 AND position(query, 'KILL QUERY') = 0 SYNC"
            )
        except StoreError as exc:
            log.warning("could not cancel a read in chDB: %s", str(exc)[:200])

    async def status(self) -> dict[str, Any]:
        return self._idle.status()

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        if not lines:
            return
        await (self._background if background else self._write)(_insert_sql(table) + lines.decode())

    async def insert_new_json_rows(
        self, table: str, rows: Sequence[tuple[str, bytes]], lookups: Sequence[str]
    ) -> set[str]:
        """The lookups and the insert as one step on the write lane (``Store.insert_new_json_rows``)."""
        lane = self._write
        async with lane.lock:  # held across both: lane.run, not lane(), which takes it again
            found: set[str] = set()
            for sql in lookups:
                raw = await asyncio.to_thread(lane.run, sql + _JSON_ROWS, "JSONCompact")
                found.update(str(row[0]) for row in _result(raw).rows)
            if fresh := unfound(rows, found):
                await asyncio.to_thread(lane.run, _insert_sql(table) + b"\n".join(fresh).decode(), "CSV")
        return found

    async def close(self) -> None:
        lanes = [self._write, self._background, self._control]
        lanes += self._idle.drain()
        for lane in lanes:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(lane.connection.close)


_JSON_ROWS = "\nSETTINGS output_format_json_quote_64bit_integers = 0"
"""A write-lane query's rows as JSON numbers (the read lanes set it in ``READ_LANE_SETTINGS``)."""


def _insert_sql(table: str) -> str:
    return f"INSERT INTO {table} SETTINGS {INSERT_SETTINGS} FORMAT JSONEachRow\n"


def _result(raw: bytes) -> QueryResult:
    if not raw.strip():
        return QueryResult()
    doc = loads_json(raw)
    meta = doc.get("meta", [])
    return QueryResult(
        columns=[m["name"] for m in meta],
        types=[m["type"] for m in meta],
        rows=doc.get("data", []),
    )
