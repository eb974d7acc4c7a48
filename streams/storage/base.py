"""The storage interface every backend implements."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any

from auditstream.errors import AuditstreamError

INSERT_SETTINGS = (
    "date_time_input_format = 'best_effort', input_format_skip_unknown_fields = 1, "
    "input_format_json_named_tuples_as_objects = 1"
)
READ_SETTINGS = "output_format_json_quote_64bit_integers = 0, readonly = 1"


class StoreError(AuditstreamError):
    """ClickHouse rejected a statement (bad SQL, type error): retrying will not help."""


class StoreUnavailable(AuditstreamError):
    """ClickHouse could not be reached: retry later."""


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

    @abc.abstractmethod
    async def execute(self, sql: str) -> None:
        """Run a statement that returns nothing (DDL, INSERT ... SELECT)."""

    @abc.abstractmethod
    async def query(self, sql: str, *, read_only: bool = False) -> QueryResult:
        """Run a query and return its rows."""

    @abc.abstractmethod
    async def insert_json_rows(self, table: str, lines: bytes) -> None:
        """Insert newline-separated JSON objects, columns matched by name."""

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

    async def execute(self, sql: str) -> None:
        raise StoreUnavailable(self.reason)

    async def query(self, sql: str, *, read_only: bool = False) -> QueryResult:
        raise StoreUnavailable(self.reason)

    async def insert_json_rows(self, table: str, lines: bytes) -> None:
        raise StoreUnavailable(self.reason)
