"""Pure helpers for building and guarding SQL text shared by every backend."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from importlib import resources
from typing import NamedTuple


class ReadOnlyViolation(ValueError):
    """The statement is not one the analyst SQL endpoint runs (``schemas/analyst_sql.py``)."""


class StatementTooLarge(ReadOnlyViolation):
    """The statement is longer than the guard reads: parsing takes time in proportion to
    (and more than) its length, so a long one is refused before it is parsed."""


def quote(value: str) -> str:
    """Quote a string literal for ClickHouse."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def dt64(value: datetime) -> str:
    """A DateTime64(3, 'UTC') literal for an aware or UTC-naive datetime."""
    text = value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return f"toDateTime64({quote(text)}, 3, 'UTC')"


def tuples_in(columns: Iterable[str], rows: Iterable[tuple[str, ...]]) -> str:
    """``(a, b) IN ((...), (...))`` for literal rows of already-quoted values."""
    cols = ", ".join(columns)
    values = ", ".join("(" + ", ".join(r) + ")" for r in rows)
    return f"({cols}) IN ({values})"


class Migration(NamedTuple):
    version: int
    name: str
    statements: tuple[str, ...]


def split_statements(script: str) -> tuple[str, ...]:
    """Split a DDL script on semicolons that end a line; drop comment-only chunks."""
    chunks = re.split(r";\s*(?:\n|$)", script)
    out = []
    for chunk in chunks:
        body = "\n".join(line for line in chunk.splitlines() if not line.strip().startswith("--")).strip()
        if body:
            out.append(body)
    return tuple(out)


def load_migrations() -> list[Migration]:
    """The versioned DDL files shipped in ``schemas/clickhouse/migrations``, in order."""
    folder = resources.files("schemas") / "clickhouse" / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            version = int(entry.name.split("_", 1)[0])
            found.append(Migration(version, entry.name, split_statements(entry.read_text())))
    found.sort()
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return found
