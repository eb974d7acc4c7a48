"""JSON rows as the typed columns of clickhouse-driver's native insert.

Against a ClickHouse server the store inserts through the driver's insert API
(``INSERT INTO t (columns) VALUES`` with the data beside it, sent as Native blocks), not as
JSON text inside a statement, which the server would parse as SQL before reading it. The
driver wants Python values of each column's type; the rows arrive as the JSON lines every
backend takes. This module turns one into the other, from the table's own description
(``DESCRIBE TABLE``), and keeps the JSON insert's rules: unknown keys are ignored, a key a
row omits takes the column's default, named tuples may be objects, and times are read
best effort (ISO 8601 with ``T`` and ``Z``, or ClickHouse's own form). A value that cannot
be one of its column's type raises ``ValueError`` naming the row and column, as ClickHouse
would refuse the row.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cache, cached_property
from typing import Any

Convert = Callable[[Any], Any]

_LITERAL = re.compile(r"^(?:'(?P<text>(?:[^'\\]|\\.)*)'|(?P<number>-?\d+(?:\.\d+)?)|(?P<nan>nan))$")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    default_kind: str = ""
    default_expression: str = ""

    def given(self, row: dict[str, Any]) -> bool:
        """Whether ``row`` gives this column a value: a ``null`` in a column that cannot hold
        one counts as omitted (the JSON insert stores the default)."""
        return self.name in row and (row[self.name] is not None or "Nullable(" in self.type)

    @cached_property
    def literal_default(self) -> tuple[bool, Any]:
        """(True, value) when the default is a literal (``''``, ``0``, ``nan``) or absent (the
        type's zero, as JSONEachRow fills an omitted key); (False, None) for an expression
        only the server can evaluate (``now64(3)``)."""
        if self.default_kind != "DEFAULT":
            return True, zero(self.type)
        m = _LITERAL.match(self.default_expression.strip())
        if m is None:
            return False, None
        if m["text"] is not None:
            return True, re.sub(r"\\(.)", r"\1", m["text"])
        if m["nan"]:
            return True, math.nan
        return True, converter(self.type)(m["number"])


def columns_of(describe_rows: Sequence[Sequence[Any]]) -> list[Column]:
    """The insertable columns of ``DESCRIBE TABLE``'s rows (not ALIAS or MATERIALIZED)."""
    return [
        Column(str(r[0]), str(r[1]), str(r[2]), str(r[3]))
        for r in describe_rows
        if str(r[2]) not in ("ALIAS", "MATERIALIZED")
    ]


def to_columns(
    columns: Sequence[Column], rows: Sequence[dict[str, Any]]
) -> list[tuple[list[str], list[list[Any]]]]:
    """Inserts of ``rows``: (column names, one list of values per column) each. A column no
    row names is left out (the server fills its default); rows that name a column whose
    default only the server knows, and rows that do not, go in separate inserts."""
    groups: dict[frozenset[str], list[dict[str, Any]]] = {}
    server_defaults = [c for c in columns if not c.literal_default[0]]
    for row in rows:
        groups.setdefault(frozenset(c.name for c in server_defaults if c.given(row)), []).append(row)
    inserts = [_columns(columns, group, given) for given, group in groups.items()]
    if any(not names for names, _ in inserts):
        raise ValueError("a row names none of the table's columns")
    return inserts


def _columns(
    columns: Sequence[Column], rows: Sequence[dict[str, Any]], given: frozenset[str]
) -> tuple[list[str], list[list[Any]]]:
    names, values = [], []
    for column in columns:
        if column.name not in given and not column.literal_default[0]:
            continue
        if not any(column.given(row) for row in rows):
            continue
        _, default = column.literal_default
        convert = converter(column.type)
        out = []
        for n, row in enumerate(rows):
            if not column.given(row):
                out.append(default)
                continue
            try:
                out.append(convert(row[column.name]))
            except (ValueError, TypeError, KeyError, OverflowError) as exc:
                raise ValueError(f"row {n + 1}, column {column.name} ({column.type}): {exc}") from None
        names.append(column.name)
        values.append(out)
    return names, values


def _split_args(inner: str) -> list[str]:
    """Top-level comma-separated parts of a type's arguments."""
    parts, depth, start, quoted = [], 0, 0, False
    for i, ch in enumerate(inner):
        if ch == "'" and (i == 0 or inner[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted and ch == "(":
            depth += 1
        elif not quoted and ch == ")":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    parts.append(inner[start:].strip())
    return parts


def _outer(type_: str) -> tuple[str, list[str]]:
    type_ = type_.strip()
    if "(" not in type_:
        return type_, []
    name = type_[: type_.index("(")]
    return name, _split_args(type_[type_.index("(") + 1 : type_.rindex(")")])


def _time(value: Any) -> datetime:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if not isinstance(value, str):
        raise TypeError(f"not a time: {value!r}")
    text = value.strip().replace("Z", "+00:00")
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _date(value: Any) -> date:
    if not isinstance(value, str):
        raise TypeError(f"not a date: {value!r}")
    return date.fromisoformat(value.strip()[:10])


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TypeError(f"not an integer: {value!r}")


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    raise TypeError(f"not a Bool: {value!r}")


def _text(value: Any) -> str:
    """Numbers and booleans read as their JSON text, as ClickHouse reads them into a String."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    raise TypeError(f"not text: {value!r}")


@cache
def converter(type_: str) -> Convert:
    """A function from a JSON value to the Python value the driver writes for ``type_``."""
    name, args = _outer(type_)
    if name == "LowCardinality":
        return converter(args[0])
    if name == "Nullable":
        inner = converter(args[0])
        return lambda v: None if v is None else inner(v)
    if name == "Array":
        item = converter(args[0])
        return lambda v: [item(x) for x in _listed(v)]
    if name == "Tuple":
        return _tuple(args)
    if name == "Map":
        key, value = converter(args[0]), converter(args[1])
        return lambda v: {key(k): value(x) for k, x in _mapped(v).items()}
    if name in ("DateTime", "DateTime64"):
        return _time
    if name in ("Date", "Date32"):
        return _date
    if name in ("String", "FixedString", "UUID"):
        return _text
    if name == "Bool":
        return _bool
    if re.fullmatch(r"U?Int\d+", name):
        return _int
    if re.fullmatch(r"Float\d+", name):
        return _float
    raise ValueError(f"no native form for the type {type_}")


def _listed(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"not an array: {value!r}")
    return value


def _mapped(value: Any) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"not a map: {value!r}")
    return value


def _element(arg: str) -> tuple[str, str]:
    """A tuple element's name (``""`` when unnamed) and type: ``rank UInt8``, ``UInt8``."""
    if re.match(r"\w+\s+\w", arg) and "(" not in arg.split()[0]:
        name, type_ = arg.split(None, 1)
        return name, type_
    return "", arg


def _tuple(args: list[str]) -> Convert:
    names = [_element(a)[0] for a in args]
    items = [converter(_element(a)[1]) for a in args]

    def convert(value: Any) -> tuple[Any, ...]:
        if isinstance(value, dict):
            value = [value[n] for n in names]
        if not isinstance(value, list) or len(value) != len(items):
            raise TypeError(f"not a tuple of {len(items)}: {value!r}")
        return tuple(f(x) for f, x in zip(items, value, strict=True))

    return convert


def zero(type_: str) -> Any:
    """The value JSONEachRow gives an omitted key of a column with no DEFAULT."""
    name, args = _outer(type_)
    if name == "LowCardinality":
        return zero(args[0])
    if name == "Nullable":
        return None
    if name == "Array":
        return []
    if name == "Map":
        return {}
    if name == "Tuple":
        return tuple(zero(_element(a)[1]) for a in args)
    if name in ("DateTime", "DateTime64"):
        return datetime.fromtimestamp(0, UTC)
    if name in ("Date", "Date32"):
        return date(1970, 1, 1)
    if name == "UUID":
        return "00000000-0000-0000-0000-000000000000"
    if name in ("String", "FixedString"):
        return ""
    if name == "Bool":
        return False
    if re.fullmatch(r"Float\d+", name):
        return 0.0
    return 0
