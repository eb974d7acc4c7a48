"""clickhouse-driver's ``Client.execute`` carried out by chDB: the statements the server store
(``core/store/server_store.py``) sends, as the driver would send them, run on the same engine
a ClickHouse server is. No ClickHouse server can be installed here; this runs its SQL, not a
mock of its answers.

Parameters are substituted by the driver's own code. A native insert (``INSERT INTO t (...)
VALUES`` with columns beside it) is written to chDB as the JSON of the typed values the
driver would have encoded (times with their microseconds, tuples as arrays). Query
settings, which the driver sends beside the statement, become a trailing ``SETTINGS``
clause, except ``max_query_size``, which must be known before the statement is parsed and
is set on the session. A ``hook`` sees
each statement before it runs (a test holds one back there to time two writers).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from clickhouse_driver import Client, errors


class ChdbDriverClient:
    def __init__(self, path: Path, hook: Callable[[str], None] | None = None) -> None:
        import chdb

        self.connection = chdb.connect(str(path))
        self.connection.query("SET output_format_json_quote_64bit_integers = 0")  # numbers, as the driver's
        self.hook = hook
        self._driver = Client("localhost")  # never connects: its parameter substitution only

    def execute(
        self,
        sql: str,
        params: dict[str, Any] | None = None,
        *,
        with_column_types: bool = False,
        settings: dict[str, Any] | None = None,
        query_id: str | None = None,
        columnar: bool = False,
        types_check: bool = False,
    ) -> Any:
        if columnar:
            return self._insert(sql, params)
        text = self._driver.substitute_params(sql, params, self._driver.connection.context) if params else sql
        settings = dict(settings or {})
        if (size := settings.pop("max_query_size", None)) is not None:
            self.connection.query(f"SET max_query_size = {int(size)}")
        if settings:
            if "SETTINGS" in text.upper():
                raise NotImplementedError("settings beside a statement with SETTINGS of its own")
            text += " SETTINGS " + ", ".join(f"{k} = {v}" for k, v in settings.items())
        if self.hook is not None:
            self.hook(text)
        try:
            raw = bytes(self.connection.query(text, "JSONCompact").bytes())
        except Exception as exc:  # chDB raises RuntimeError subclasses; the driver, this
            raise errors.ServerException(str(exc)) from exc
        doc = orjson.loads(raw) if raw.strip() else {"meta": [], "data": []}
        rows = [tuple(r) for r in doc["data"]]
        if with_column_types:
            return rows, [(m["name"], m["type"]) for m in doc["meta"]]
        return rows

    def _insert(self, sql: str, columns: list[list[Any]]) -> list[Any]:
        head = sql.strip()
        if not head.upper().endswith("VALUES"):
            raise NotImplementedError(f"not a native insert: {head[:80]}")
        lines = b"\n".join(
            orjson.dumps(dict(zip(_names(head), row, strict=True))) for row in zip(*columns, strict=True)
        )
        text = head[: -len("VALUES")] + (
            "SETTINGS date_time_input_format = 'best_effort', input_format_json_named_tuples_as_objects = 0 "
            "FORMAT JSONEachRow\n"
        )
        if self.hook is not None:
            self.hook(head)
        try:
            self.connection.query(text + lines.decode(), "CSV")
        except Exception as exc:
            raise errors.ServerException(str(exc)) from exc
        return []

    def disconnect(self) -> None:
        self.connection.close()


def _names(insert: str) -> list[str]:
    inside = insert[insert.index("(") + 1 : insert.rindex(")")]
    return [n.strip().strip("`") for n in inside.split(",")]
