"""The files of an export (``auditstream export``), written a page at a time.

Raw events are written as ``auditstream import`` reads them (``collectors/import_upload.py``):
each stored row is turned back into its event with the event's own model (validated, and
dumped as ingest dumps it: UTC timestamps with milliseconds, ``YYYY-MM-DD`` days), plus its
``received_at`` in the raw tables' form, so importing the file stores the same rows. As JSON
lines, gzipped; or as Parquet, one column per field of the family's event types (a field a
type lacks is null, which the import leaves out), nested fields as lists of structs.

Result tables are written as Parquet, with Arrow types from their ClickHouse types (times
as UTC timestamps, days as dates), or as CSV (arrays as JSON text, NULL as an empty cell).
Each writer takes pages and keeps none: a page is one Parquet row group.
"""

from __future__ import annotations

import csv
import gzip
import re
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import IO, Any, Protocol

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel, ValidationError

from schemas.event_types import BY_NAME, EVENT_TYPES
from schemas.topics import FAMILIES, Family

BY_FAMILY = {f.name: f for f in FAMILIES}


class NotAnEvent(ValueError):
    """A stored row its event type's model refuses (a row older than a rule): not written."""


@cache
def _timestamp_fields(model: type[BaseModel]) -> frozenset[str]:
    """The model's timestamp fields (RFC 3339 text on the wire; ClickHouse prints them as
    ``YYYY-MM-DD HH:MM:SS.fff``)."""
    out = set()
    for name, prop in model.model_json_schema()["properties"].items():
        branches = prop.get("anyOf", [prop])
        if any(b.get("format") == "date-time" for b in branches):
            out.add(name)
    return frozenset(out)


def event_of(row: dict[str, Any]) -> dict[str, Any]:
    """A raw row (a page's columns by name) as the event it was, with its ``received_at``.

    NULL is an absent field, and so is ``''`` where the model has a default: a column added
    later holds ``''`` for the rows stored before it (the model's default is what such a
    client meant). ``NotAnEvent`` when the model refuses what is left."""
    kind = BY_NAME.get(str(row.get("type")))
    if kind is None:
        raise NotAnEvent(f"unknown type {row.get('type')!r}")
    model, times = kind.model, _timestamp_fields(kind.model)
    fields: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        value = row.get(name)
        if value is None or (value == "" and not field.is_required()):
            continue
        if name in times and isinstance(value, str):
            value = value.replace(" ", "T") + "Z"
        fields[name] = value
    try:
        event: dict[str, Any] = model.model_validate(fields).model_dump(mode="json")
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise NotAnEvent(f"{where}: {first['msg']}") from None
    event["received_at"] = row["received_at"]
    return event


def events_of(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], refused: list[str]
) -> list[dict[str, Any]]:
    """A page's rows as events; a row its model refuses is left out and said in ``refused``."""
    out = []
    for row in rows:
        named = dict(zip(columns, row, strict=True))
        try:
            out.append(event_of(named))
        except NotAnEvent as exc:
            refused.append(f"{named.get('event_id')}: {exc}")
    return out


# --------------------------------------------------------------------------- Arrow types


def _json_type(prop: dict[str, Any], defs: dict[str, Any]) -> pa.DataType:
    """The Arrow type of one JSON Schema property of an event model."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    (one,) = branches
    if "$ref" in one:
        target = defs[one["$ref"].rsplit("/", 1)[1]]
        return pa.struct([(n, _json_type(p, defs)) for n, p in target["properties"].items()])
    kind = one.get("type")
    if kind == "array":
        return pa.list_(_json_type(one["items"], defs))
    if kind == "integer":
        return pa.uint64() if one.get("maximum", 0) > 2**63 - 1 else pa.int64()
    if kind == "number":
        return pa.float64()
    if kind == "boolean":
        return pa.bool_()
    return pa.string()  # text, ids, days and timestamps as the JSON has them


def event_schema(family: Family) -> pa.Schema:
    """One column per field of the family's event types (first seen first), then
    ``received_at``: what ``auditstream import`` reads back, row by row, as events."""
    fields: dict[str, pa.DataType] = {}
    for event_type in EVENT_TYPES:
        if event_type.family is not family:
            continue
        schema = event_type.model.model_json_schema()
        for name, prop in schema["properties"].items():
            kind = _json_type(prop, schema.get("$defs", {}))
            if fields.setdefault(name, kind) != kind:
                raise TypeError(f"{family.name}: field {name} has two types")
    return pa.schema([*fields.items(), ("received_at", pa.string())])


_WRAPPER = re.compile(r"^(LowCardinality|Nullable)\((.*)\)$", re.S)
_UNITS = {0: "s", 3: "ms", 6: "us", 9: "ns"}


def _split_top(text: str) -> list[str]:
    """``a, b(c, d), e`` -> the top-level parts."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return [*parts, text[start:].strip()]


def arrow_type(clickhouse: str) -> pa.DataType:
    """The Arrow type a ClickHouse column's values are written as."""
    text = clickhouse.strip()
    while match := _WRAPPER.match(text):
        text = match.group(2).strip()
    if text.startswith("Array(") and text.endswith(")"):
        return pa.list_(arrow_type(text[6:-1]))
    if text.startswith("Tuple(") and text.endswith(")"):
        members = [part.split(None, 1) for part in _split_top(text[6:-1])]
        if all(len(m) == 2 for m in members):
            return pa.struct([(name, arrow_type(kind)) for name, kind in members])
        return pa.string()
    if text in ("Date", "Date32"):
        return pa.date32()
    if text.startswith("DateTime64"):
        scale = int(_split_top(text[text.index("(") + 1 : -1])[0])
        return pa.timestamp(_UNITS.get(scale, "ns"), "UTC")
    if text.startswith("DateTime"):
        return pa.timestamp("s", "UTC")
    numbers = {f"{s}Int{b}": getattr(pa, f"{s.lower()}int{b}")() for s in ("", "U") for b in (8, 16, 32, 64)}
    numbers |= {"Float32": pa.float32(), "Float64": pa.float64(), "Bool": pa.bool_()}
    return numbers.get(text, pa.string())  # String, UUID, FixedString, Enum, and what JSON text can say


def _column(values: list[Any], kind: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(kind):  # ClickHouse prints UTC times without a zone
        return pa.array(values, pa.string()).cast(pa.timestamp(kind.unit)).cast(kind)
    if pa.types.is_date(kind):
        return pa.array(values, pa.string()).cast(kind)
    if pa.types.is_string(kind):
        return pa.array([v if v is None or isinstance(v, str) else orjson.dumps(v).decode() for v in values])
    return pa.array(values, kind)


def result_table(schema: pa.Schema, rows: Sequence[Sequence[Any]]) -> pa.Table:
    """A page of a result table as Arrow, in ``schema`` (from its ClickHouse types)."""
    columns = [_column([r[i] for r in rows], f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


# --------------------------------------------------------------------------- writers


class PageWriter(Protocol):
    rows: int

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None: ...

    def close(self) -> None: ...


class EventsWriter:
    """A family's events: JSON lines, gzipped (``.jsonl.gz``), or Parquet (``.parquet``)."""

    def __init__(self, path: Path, family: str) -> None:
        self.path, self.rows, self.refused = path, 0, list[str]()
        self._parquet = path.suffix == ".parquet"
        self._schema = event_schema(BY_FAMILY[family])
        self._writer: pq.ParquetWriter | None = None
        self._lines: gzip.GzipFile | None = None
        if self._parquet:
            self._writer = pq.ParquetWriter(path, self._schema)
        else:
            self._lines = gzip.open(path, "wb")  # noqa: SIM115 - closed in close()

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        events = events_of(columns, rows, self.refused)
        if self._writer is not None and events:
            self._writer.write_table(pa.Table.from_pylist(events, schema=self._schema))
        elif self._lines is not None:
            self._lines.write(b"".join(orjson.dumps(e) + b"\n" for e in events))
        self.rows += len(events)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._lines is not None:
            self._lines.close()


class ResultsWriter:
    """A result table: Parquet in Arrow types from ``types``, or CSV with a header."""

    def __init__(self, path: Path, columns: Sequence[str], types: Sequence[str]) -> None:
        self.path, self.rows = path, 0
        self._schema = pa.schema([(n, arrow_type(t)) for n, t in zip(columns, types, strict=True)])
        self._writer: pq.ParquetWriter | None = None
        self._text: IO[str] | None = None
        if path.suffix == ".parquet":
            self._writer = pq.ParquetWriter(path, self._schema)
        else:
            self._text = open(path, "w", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
            csv.writer(self._text).writerow(columns)

    def write(self, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        if list(columns) != self._schema.names:
            raise ValueError(f"{self.path.name}: the columns changed during the export")
        if self._writer is not None and rows:
            self._writer.write_table(result_table(self._schema, rows))
        elif self._text is not None:
            csv.writer(self._text).writerows([_cell(v) for v in row] for row in rows)
        self.rows += len(rows)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._text is not None:
            self._text.close()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return orjson.dumps(value).decode()
    return value


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of an export's file, as ``auditstream import`` reads them."""
    from collectors.import_upload import read_lines

    for line in read_lines(str(path)):
        yield orjson.loads(line)
