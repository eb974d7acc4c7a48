"""A ClickHouse server through clickhouse-driver (the production backend)."""

from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import ipaddress
import uuid
from typing import Any

import orjson

from core.store.base import (
    INSERT_SETTINGS,
    QueryLimits,
    QueryResult,
    Store,
    StoreBusy,
    StoreError,
    StoreUnavailable,
)


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


class ServerStore(Store):
    """One clickhouse-driver connection, serialised by a lock (the driver is not thread-safe)."""

    def __init__(self, url: str) -> None:
        from clickhouse_driver import Client

        self._client = Client.from_url(url)
        self._lock = asyncio.Lock()
        self._structures: dict[str, str] = {}

    async def _run(
        self, sql: str, params: dict[str, Any] | None = None, *, wait_s: float | None = None, **kw: Any
    ) -> Any:
        """Run on the connection once it is free; ``StoreBusy`` after waiting ``wait_s`` for it."""
        from clickhouse_driver import errors

        try:
            await asyncio.wait_for(self._lock.acquire(), wait_s)
        except TimeoutError:
            raise StoreBusy(f"the store connection stayed busy for {wait_s:g} s") from None
        try:
            return await asyncio.to_thread(self._client.execute, sql, params, **kw)
        except errors.ServerException as exc:
            raise StoreError(str(exc)) from exc
        except (errors.NetworkError, errors.SocketTimeoutError, OSError, EOFError) as exc:
            raise StoreUnavailable(str(exc)) from exc
        finally:
            self._lock.release()

    async def execute(self, sql: str, *, background: bool = False) -> None:
        await self._run(sql)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        # limits first, readonly last: a server applies query settings in order, and under
        # readonly = 1 it would refuse to change the limits
        settings: dict[str, Any] = dict(limits.settings()) if limits is not None else {}
        if read_only:
            settings["readonly"] = 1
        wait_s = limits.max_execution_time_s if limits is not None else None
        rows, cols = await self._run(sql, with_column_types=True, settings=settings, wait_s=wait_s)
        result = QueryResult(
            columns=[c[0] for c in cols],
            types=[c[1] for c in cols],
            rows=[[_jsonable(v) for v in r] for r in rows],
        )
        if limits is not None:
            limits.check_answer_size(sum(len(orjson.dumps(r, default=str)) for r in result.rows))
        return result

    async def _structure(self, table: str) -> str:
        if table not in self._structures:
            rows = await self._run(f"DESCRIBE TABLE {table}")
            self._structures[table] = ", ".join(
                f"{name} {typ}" for name, typ, default_kind, *_ in rows if default_kind != "ALIAS"
            )
        return self._structures[table]

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        if not lines:
            return
        structure = await self._structure(table)
        sql = (
            f"INSERT INTO {table} SELECT * FROM format(JSONEachRow, %(structure)s, %(data)s) "
            f"SETTINGS {INSERT_SETTINGS}"
        )
        await self._run(
            sql,
            {"structure": structure, "data": lines.decode()},
            settings={"max_query_size": len(lines) + 65536},
        )

    async def close(self) -> None:
        await asyncio.to_thread(self._client.disconnect)
