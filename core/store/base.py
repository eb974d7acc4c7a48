"""The storage interface every backend implements."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from core.errors import AuditstreamError

INSERT_SETTINGS = (
    "date_time_input_format = 'best_effort', input_format_skip_unknown_fields = 1, "
    "input_format_json_named_tuples_as_objects = 1"
)
READ_LANE_SETTINGS = "output_format_json_quote_64bit_integers = 0"
"""Set on every read of chDB's read lanes, whose sessions are read-only (``readonly = 2``)."""


@dataclass(frozen=True)
class QueryLimits:
    """Limits for an analyst's query, enforced by ClickHouse itself (the query ends with an
    error when one is passed) and sent with every statement, since the statement may not
    carry SETTINGS of its own (``schemas/analyst_sql.py``)."""

    max_execution_time_s: float = 30.0
    max_memory_usage: int = 2 * 1024**3
    max_result_rows: int = 100_000
    max_rows_to_read: int = 20_000_000_000
    max_result_bytes: int = 64 * 1024**2
    """The answer's size in ClickHouse's columns (wide rows pass the row cap: a 300 MB answer
    grew the store to 2.5 GB, and JSON makes it larger again)."""

    def settings(self) -> dict[str, int | float]:
        return {
            "max_execution_time": self.max_execution_time_s,
            "max_memory_usage": self.max_memory_usage,
            "max_result_rows": self.max_result_rows,
            "max_rows_to_read": self.max_rows_to_read,
            "max_result_bytes": self.max_result_bytes,
        }

    def sql(self) -> str:
        return ", ".join(f"{k} = {v}" for k, v in self.settings().items())

    def check_answer_size(self, size: int) -> None:
        """ClickHouse checks ``max_result_bytes`` from a result's second block on, so a result
        of one block passes it whatever its size (300 MB of ``repeat('x', 1e6)`` did): the
        answer as sent is checked too, the same limit on its bytes."""
        if size > self.max_result_bytes:
            raise StoreError(
                f"Limit for result exceeded: the answer is {size / 1024**2:.1f} MiB, over "
                f"max_result_bytes ({self.max_result_bytes / 1024**2:.0f} MiB); select fewer or "
                "narrower rows (TOO_MANY_ROWS_OR_BYTES)"
            )

    def to_params(self) -> dict[str, str]:
        return {f.name: str(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_params(cls, params: Any) -> QueryLimits | None:
        """From ``to_params`` (the store server's query string); None when absent."""
        if "max_execution_time_s" not in params:
            return None
        return cls(
            float(params["max_execution_time_s"]),
            int(params["max_memory_usage"]),
            int(params["max_result_rows"]),
            int(params["max_rows_to_read"]),
            int(params.get("max_result_bytes", cls.max_result_bytes)),
        )


class StoreError(AuditstreamError):
    """ClickHouse rejected a statement (bad SQL, type error): retrying will not help."""


class StoreUnavailable(AuditstreamError):
    """ClickHouse could not be reached: retry later."""


class StoreBusy(StoreUnavailable):
    """Every read lane stayed busy with other analysts' queries for as long as a query may
    run: retry later (the store itself is fine)."""


@dataclass
class QueryResult:
    """Column names and types with rows as lists of JSON-compatible values."""

    columns: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, r, strict=True)) for r in self.rows]

    def to_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "types": self.types, "rows": self.rows}


class Store(abc.ABC):
    """Async access to ClickHouse. Blocking engines run in a thread."""

    one_writer: bool = False
    """True when every write to the data passes this store's one write lane (chDB's owner, and
    the store server in front of it): an id lookup and its insert are then one step and no
    other writer's copy of the event can come between. A ClickHouse server takes writes from
    every process at once, so its writers settle such copies afterwards
    (``streams/sinks/later_copies.py``)."""

    @abc.abstractmethod
    async def execute(self, sql: str, *, background: bool = False) -> None:
        """Run a statement that returns nothing (DDL, INSERT ... SELECT). ``background``: a
        recompute that may run beside the worker's per-batch writes (the roll-ups), on a
        connection of its own where the backend keeps lanes, so a batch's raw rows and
        minute aggregate never wait behind it."""

    @abc.abstractmethod
    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        """Run a query and return its rows. ``read_only`` queries (the board, analysts) run
        apart from the worker's writes where the backend can; ``limits`` bound an analyst's."""

    @abc.abstractmethod
    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        """Insert newline-separated JSON objects, columns matched by name (``background``:
        as for ``execute``)."""

    async def insert_new_json_rows(
        self, table: str, rows: Sequence[tuple[str, bytes]], lookups: Sequence[str]
    ) -> set[str]:
        """Insert the rows (id, JSON line) whose ids the ``lookups`` (queries of one column of
        ids) do not find, and return the ids they found: the raw tables' once-per-event-id
        write. The default runs the lookups, then the insert. ``ChdbStore`` runs both as one
        step on its write lane (and the store server passes the call on whole), so a
        concurrent writer's guarded ``INSERT ... SELECT`` (an import's) cannot slip between
        them: exactly once in embedded mode. Against a ClickHouse server two writers of one
        event id at the same moment can both insert; they then delete every copy but the
        first (``streams/sinks/later_copies.py``)."""
        found: set[str] = set()
        for sql in lookups:
            found.update(str(row[0]) for row in (await self.query(sql)).rows)
        if fresh := unfound(rows, found):
            await self.insert_json_rows(table, b"\n".join(fresh))
        return found

    async def query_arrow(self, sql: str) -> Any:
        """A read-only query's result as a ``pyarrow.Table``: the columnar path for results of
        hundreds of thousands of rows (per-install statistics), with no JSON in between.
        Backends that can stream Arrow override this; the default converts the rows."""
        import pyarrow as pa

        result = await self.query(sql, read_only=True)
        return pa.Table.from_pydict(
            {name: [row[i] for row in result.rows] for i, name in enumerate(result.columns)}
        )

    async def query_arrow_stream(self, sql: str) -> bytes:
        """``query_arrow``'s result as an Arrow IPC stream (what the store server sends on);
        backends that produce the stream themselves hand it over unopened."""
        import pyarrow as pa

        table = await self.query_arrow(sql)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue().to_pybytes())

    async def status(self) -> dict[str, Any]:
        """How busy the read lanes are (``saturated``: every lane busy and queries waiting)."""
        return {}

    async def ping(self) -> bool:
        try:
            await self.query("SELECT 1")
        except (StoreError, StoreUnavailable):
            return False
        return True

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""


class NoStore(Store):
    """Stands in where no store is configured; every call says so."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def execute(self, sql: str, *, background: bool = False) -> None:
        raise StoreUnavailable(self.reason)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        raise StoreUnavailable(self.reason)

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        raise StoreUnavailable(self.reason)


def unfound(rows: Sequence[tuple[str, bytes]], found: set[str]) -> list[bytes]:
    """The lines of ``rows`` (id, JSON line) whose ids are not in ``found``."""
    return [line for event_id, line in rows if event_id not in found]


def loads_json(raw: bytes) -> Any:
    """orjson, or the standard library where orjson refuses valid JSON: orjson 3.13 fails
    with "failed to allocate memory" on some of chDB's documents with long arrays of small
    numbers, which ``json`` reads fine (an analyst's query must not end in a 500)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        import json

        return json.loads(raw)
