"""An import chunk written canonically, validated and written by the event twins.

An export of the raw tables (and the extension's own events) writes every timestamp, day
and id canonically: such a chunk is checked by the constraint-only twins of
``schemas/event_twins.py`` in one pydantic-core call, with no Python per field, and each
twin writes the JSON its original would. It is the import's common case; the chunk's
validation and writing were most of an import's CPU (bench/README.md, ninth run).

Whatever a twin refuses (a timestamp with an offset, an uppercase id, a received_at out of
range, a bad line) returns ``None``, and the chunk goes the original models' way
(``ingest/import_chunks.py``), which names each rejection. ``received_at`` is written as
that way writes it (ISO, milliseconds, ``Z``), from the line's own or its ``sent_at``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, StringConstraints, TypeAdapter, ValidationError, create_model

from ingest.registered_arms import NO_REGISTRY, Registry, unregistered
from schemas.event_twins import TIMESTAMP_TEXT, TWINS

_ISO_BODY = TIMESTAMP_TEXT[1:-1]
_WIRE_BODY = _ISO_BODY.replace("T(?:", " (?:").removesuffix("Z")
assert _WIRE_BODY != _ISO_BODY and "Z" not in _WIRE_BODY[-8:]
RECEIVED_TEXT = f"^(?:{_ISO_BODY}|{_WIRE_BODY})$"
"""A received_at as an export writes it: the raw tables' wire form (``2026-11-28 13:19:54.877``)
or ISO with ``Z``; either a day that exists, milliseconds, UTC."""

RECEIVED_LOW, RECEIVED_HIGH = "1970-01-01T00:00:00.000Z", "2106-02-07T00:00:00.000Z"
"""``import_chunks.RECEIVED_MIN`` and ``RECEIVED_MAX`` as canonical text, which orders as time."""

ReceivedText = Annotated[str, StringConstraints(strict=True, pattern=RECEIVED_TEXT)]


def _imported_twin(twin: type[BaseModel]) -> type[BaseModel]:
    fields: Any = {"received_at": (ReceivedText | None, None)}
    return create_model(f"Imported{twin.__name__}", __base__=twin, **fields)


def twins_of(types: Sequence[str]) -> TypeAdapter[list[Any]]:
    """A list of the importable types' twins, each with an optional ``received_at``."""
    models: Any = Union[tuple(_imported_twin(TWINS[t]) for t in types)]  # noqa: UP007
    return TypeAdapter(list[Annotated[models, Field(discriminator="type")]])


def canonical_received(model: BaseModel) -> str | None:
    """The line's received_at (else its sent_at) as ISO text, or None when out of range."""
    text: str = getattr(model, "received_at", None) or model.sent_at  # type: ignore[attr-defined]
    if text[10] == " ":
        text = f"{text[:10]}T{text[11:]}Z"
    return text if RECEIVED_LOW <= text < RECEIVED_HIGH else None


def one_object_per_line(models: Sequence[Any], lines: Sequence[bytes]) -> bool:
    """Whether the lines, validated joined with commas as one array, were one object each: a
    line may hold two values ("{...},{...}"), and an object split over two lines ('{e1},{first
    half' then 'rest}') parses as two, so each line must be one object, brace to brace."""
    return len(models) == len(lines) and all(
        line.lstrip()[:1] == b"{" and line.rstrip()[-1:] == b"}" for line in lines
    )


def validate_canonical(
    adapter: TypeAdapter[list[Any]], lines: Sequence[bytes], registry: Registry = NO_REGISTRY
) -> list[Any] | None:
    """The chunk's twins, each with its received_at filled in, or None when any line is not
    one canonical event of its own (the caller then takes the originals' way)."""
    try:
        models = adapter.validate_json(b"[" + b",".join(lines) + b"]")
    except ValidationError:
        return None
    if not one_object_per_line(models, lines):
        return None
    for model in models:
        received = canonical_received(model)
        if received is None:
            return None
        # the twins are frozen; the serialiser reads the field from __dict__
        model.__dict__["received_at"] = received
    if unregistered(models, registry):
        return None
    return list(models)
