"""chDB in this process: the embedded engine. Only one process may own a directory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson

from streams.storage.base import INSERT_SETTINGS, READ_SETTINGS, QueryResult, Store, StoreError


class ChdbStore(Store):
    """Owns a chDB data directory. chDB releases the GIL, so calls run in threads."""

    def __init__(self, path: Path) -> None:
        from chdb import session  # heavy import, only where chDB is used

        path.mkdir(parents=True, exist_ok=True)
        try:
            self._session: Any = session.Session(str(path))
        except Exception as exc:  # chDB raises plain RuntimeError subclasses
            raise StoreError(f"cannot open chDB at {path}: {exc}") from exc
        self.path = path

    def _run(self, sql: str, fmt: str = "CSV") -> bytes:
        try:
            return bytes(self._session.query(sql, fmt).bytes())
        except Exception as exc:
            raise StoreError(str(exc)) from exc

    async def execute(self, sql: str) -> None:
        await asyncio.to_thread(self._run, sql)

    async def query(self, sql: str, *, read_only: bool = False) -> QueryResult:
        settings = READ_SETTINGS if read_only else "output_format_json_quote_64bit_integers = 0"
        raw = await asyncio.to_thread(self._run, f"{sql}\nSETTINGS {settings}", "JSONCompact")
        if not raw.strip():
            return QueryResult()
        doc = orjson.loads(raw)
        meta = doc.get("meta", [])
        return QueryResult(
            columns=[m["name"] for m in meta],
            types=[m["type"] for m in meta],
            rows=doc.get("data", []),
        )

    async def insert_json_rows(self, table: str, lines: bytes) -> None:
        if not lines:
            return
        sql = f"INSERT INTO {table} SETTINGS {INSERT_SETTINGS} FORMAT JSONEachRow\n"
        await asyncio.to_thread(self._run, sql + lines.decode())

    async def close(self) -> None:
        await asyncio.to_thread(self._session.close)
