"""Validate one chunk of an import (JSON lines) into rows ready to store (pure; runs in a
worker process of ``POST /v1/import``).

Every line is validated by the models of ``POST /v1/events`` and written from its model,
so a stored row is exactly what was validated, with its ``received_at`` (the line's own,
else its ``sent_at``, so importing a file twice gives the same rows).

A chunk in which every line is a valid importable event written canonically (an export,
the common case) is validated by the canonical twins (``ingest/import_twins.py``); any
other chunk of valid events by the models themselves; either in one call into
pydantic-core straight from the bytes and written back in one call, as one JSON array
(ClickHouse's JSONEachRow reads arrays too): no Python dict per line and nothing per line
to pickle back to the server. Any other chunk is walked line by line, to name each
rejection with its line number and reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Union

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    create_model,
)

from ingest.import_twins import one_object_per_line, twins_of, validate_canonical
from ingest.registered_arms import NO_REGISTRY, Registry, unregistered, without_unregistered
from ingest.validation import Rejection, validate_batch, without_conflicting_ids
from schemas.event_types import BY_NAME, EVENT_TYPES, FAMILY_BY_TYPE
from schemas.events import utc_text
from schemas.wire import format_received_at
from streams.bulk_import import IMPORTABLE_FAMILIES

IMPORTABLE_TYPES = tuple(t.name for t in EVENT_TYPES if t.family.name in IMPORTABLE_FAMILIES)


@dataclass
class PreparedChunk:
    """A chunk after validation: per family, its rows as one JSONEachRow body (JSON lines
    or a JSON array) and how many; rejections by line number; how many lines it had."""

    rows: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    rejected: list[Rejection] = field(default_factory=list)
    lines: int = 0


_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}")


RECEIVED_MIN = datetime(1970, 1, 1, tzinfo=UTC)
RECEIVED_MAX = datetime(2106, 2, 7, tzinfo=UTC)
"""What the derived tables' ``DateTime`` slices hold: an imported event received outside
this range could be stored raw but never counted, so it is refused with a reason."""


def _received(value: Any) -> datetime:
    """A line's received_at (or, absent, its sent_at) as an aware UTC moment, parsed one
    way on both paths (``datetime.fromisoformat``; UTC when it names no zone)."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        moment = datetime.fromisoformat(value)
    else:
        raise ValueError("received_at must be text")
    try:
        moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    except OverflowError:  # year 1 or 9999 with an offset
        raise ValueError("received_at must lie between 1970-01-01 and 2106-02-06") from None
    if not RECEIVED_MIN <= moment < RECEIVED_MAX:
        raise ValueError("received_at must lie between 1970-01-01 and 2106-02-06")
    return moment


def _stamp(value: Any) -> str:
    """A line's received_at in the wire form (``ValueError`` when it is not one)."""
    moment = _received(value)
    if isinstance(value, str) and _STAMP.fullmatch(value):
        return value  # already the wire form (an export of the raw tables)
    return format_received_at(moment)


ReceivedAt = Annotated[datetime, BeforeValidator(_received), PlainSerializer(utc_text)]
"""An imported line's received_at: parsed as the line-by-line path parses it (``_received``),
written like every timestamp (ISO, milliseconds, Z)."""


def _received_or_sent(value: Any, info: ValidationInfo) -> Any:
    """An absent received_at is the event's sent_at, checked like a given one."""
    if value is None:
        sent = info.data.get("sent_at")
        if sent is None:  # sent_at failed, and so does the line
            raise ValueError("no received_at without a valid sent_at")
        return _received(sent)
    return value


def _with_received_at(model: type[BaseModel]) -> Any:
    """``model`` plus an optional received_at (default: the event's sent_at)."""
    fields = {
        "received_at": (
            Annotated[ReceivedAt | None, AfterValidator(_received_or_sent)],
            Field(default=None, validate_default=True),
        )
    }
    return create_model(f"Imported{model.__name__}", __base__=model, **fields)  # type: ignore[call-overload]


_IMPORTED: Any = Union[tuple(_with_received_at(BY_NAME[t].model) for t in IMPORTABLE_TYPES)]  # noqa: UP007
_CHUNK: TypeAdapter[list[Any]] = TypeAdapter(list[Annotated[_IMPORTED, Field(discriminator="type")]])


_TWINS = twins_of(IMPORTABLE_TYPES)


def _by_family(adapter: TypeAdapter[list[Any]], models: Sequence[Any], lines: int) -> PreparedChunk:
    by_family: dict[str, list[Any]] = {}
    for model in models:
        by_family.setdefault(FAMILY_BY_TYPE[model.type].name, []).append(model)
    rows = {name: (adapter.dump_json(group), len(group)) for name, group in by_family.items()}
    return PreparedChunk(rows=rows, lines=lines)


def _canonical(lines: Sequence[bytes], registry: Registry = NO_REGISTRY) -> PreparedChunk | None:
    """The chunk by the canonical twins (``ingest/import_twins.py``), or None."""
    models = validate_canonical(_TWINS, lines, registry)
    return None if models is None else _by_family(_TWINS, models, len(lines))


def _whole(lines: Sequence[bytes], registry: Registry = NO_REGISTRY) -> PreparedChunk | None:
    """The chunk validated and written in one call each, or None when any line fails."""
    try:
        models = _CHUNK.validate_json(b"[" + b",".join(lines) + b"]")
    except ValidationError:
        return None
    if not one_object_per_line(models, lines):
        return None
    if unregistered(models, registry):
        return None
    return _by_family(_CHUNK, models, len(lines))


def prepare_chunk(body: bytes, registry: Registry = NO_REGISTRY) -> PreparedChunk:
    """Parse, validate and serialise one chunk of JSON lines. ``registry``: the arms of the
    registered experiments, as ingest checks them (``ingest/registered_arms.py``)."""
    lines = [line for line in body.split(b"\n") if line.strip()]
    return _canonical(lines, registry) or _whole(lines, registry) or _line_by_line(body, registry)


def _line_by_line(body: bytes, registry: Registry = NO_REGISTRY) -> PreparedChunk:
    out = PreparedChunk()
    items: list[Any] = []
    stamps: list[str | None] = []
    numbers: list[int] = []
    for n, line in enumerate(body.split(b"\n"), start=1):
        if not line.strip():
            continue
        out.lines += 1
        try:
            item = orjson.loads(line)
            stamp = item.pop("received_at", None) if isinstance(item, dict) else None
            stamps.append(None if stamp is None else _stamp(stamp))
        except orjson.JSONDecodeError:
            out.rejected.append(Rejection(n, "malformed_json", None))
            continue
        except ValueError:
            out.rejected.append(Rejection(n, "invalid_value", "received_at"))
            continue
        items.append(item)
        numbers.append(n)
    accepted, refused = without_unregistered(*without_conflicting_ids(*validate_batch(items)), registry)
    refused_at = {r.index: r for r in refused}
    models = iter(accepted)
    rows: dict[str, list[bytes]] = {}
    for index, number in enumerate(numbers):
        if index in refused_at:
            out.rejected.append(Rejection(number, refused_at[index].reason, refused_at[index].field))
            continue
        model: Any = next(models)
        family = FAMILY_BY_TYPE[model.type]
        if family.name not in IMPORTABLE_FAMILIES:
            out.rejected.append(Rejection(number, "not_importable", "type"))
            continue
        try:
            stamp = stamps[index] or _stamp(model.sent_at)
        except ValueError:  # no received_at, and a sent_at the derived tables cannot hold
            out.rejected.append(Rejection(number, "invalid_value", "received_at"))
            continue
        line = model.model_dump_json().encode()[:-1] + b',"received_at":' + orjson.dumps(stamp) + b"}"
        rows.setdefault(family.name, []).append(line)
    out.rows = {name: (b"\n".join(lines), len(lines)) for name, lines in rows.items()}
    out.rejected.sort(key=lambda r: r.index)
    return out
