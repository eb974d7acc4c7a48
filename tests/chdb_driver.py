"""clickhouse-driver's ``Client.execute`` carried out by chDB: the statements the server store
(``core/store/server_store.py``) sends, as the driver would send them, run on the same engine
a ClickHouse server is. No ClickHouse server can be installed here; this runs its SQL, not a
mock of its answers.

Parameters are substituted by the driver's own code. Query settings, which the driver sends
beside the statement, become a trailing ``SETTINGS`` clause, except ``max_query_size``, which
must be known before the statement is parsed and is set on the session. A ``hook`` sees
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
    ) -> Any:
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

    def disconnect(self) -> None:
        self.connection.close()
