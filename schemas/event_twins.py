"""Twins of the event models that take only canonical text, checked by constraints alone.

The models of ``schemas/events.py`` read any ISO 8601 timestamp, any UUID spelling and a
day in a few forms, and write each in one canonical form; their Python validators and
serialisers cost most of ingest's CPU per event. A twin here has the same fields, in the
same order, with the same defaults and constraints, except that a timestamp, a day and an
event id must already be written as the original writes them (``2026-11-28T13:19:54.877Z``,
``2026-11-28``, a lowercase hyphenated UUID). So pydantic-core checks a whole request in
one call with no Python per field, and a twin writes exactly the JSON the original
would.

The twins only ever *accept*: a request they refuse goes to the originals, which name each
rejection as before. ``tests/test_schemas/test_event_twins.py`` checks that whatever
a twin accepts the original accepts too, and writes identically.
"""

from __future__ import annotations

from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    TypeAdapter,
    create_model,
    model_validator,
)
from pydantic_core import PydanticUndefined

from schemas.event_types import EVENT_TYPES
from schemas.events import Day, SchemaVersion, Timestamp

_D31 = "(?:0[1-9]|[12][0-9]|3[01])"
_D30 = "(?:0[1-9]|[12][0-9]|30)"
_D28 = "(?:0[1-9]|1[0-9]|2[0-8])"
_COMMON_MONTH_DAY = f"(?:(?:0[13578]|1[02])-{_D31}|(?:0[469]|11)-{_D30}|02-{_D28})"
"""Every month and day that exists in every year (so not the 29th of February)."""
_LEAP_19_22 = "(?:19|2[0-2])(?:0[48]|[2468][048]|[13579][26])|2000"
"""The leap years from 1900 to 2299: divisible by 4, the centuries only by 400."""

TIMESTAMP_TEXT = (
    f"^(?:(?:19[0-9]{{2}}|2[0-2][0-9]{{2}})-{_COMMON_MONTH_DAY}|(?:{_LEAP_19_22})-02-29)"
    r"T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{3}Z$"
)
"""A moment from 1900-01-01 to 2299-12-31 in UTC with milliseconds, as ``utc_text`` writes it
(and as a browser's ``Date.toISOString()`` does)."""

_LEAP_1972_2148 = "19(?:7[26]|8[048]|9[26])|20(?:[02468][048]|[13579][26])|21(?:0[48]|[24][048]|[13][26])"
DAY_TEXT = (
    f"^(?:(?:19[7-9][0-9]|20[0-9]{{2}}|21[0-3][0-9]|214[0-8])-{_COMMON_MONTH_DAY}"
    f"|(?:{_LEAP_1972_2148})-02-29"
    f"|2149-(?:0[13]-{_D31}|0[5]-{_D31}|04-{_D30}|02-{_D28}|06-0[1-6]))$"
)
"""A day from 1970-01-01 to 2149-06-06 (ClickHouse's ``Date``), ``YYYY-MM-DD``."""

UUID_TEXT = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

CanonicalTimestamp = Annotated[str, StringConstraints(strict=True, pattern=TIMESTAMP_TEXT)]
CanonicalDay = Annotated[str, StringConstraints(strict=True, pattern=DAY_TEXT)]
CanonicalUuid = Annotated[str, StringConstraints(strict=True, pattern=UUID_TEXT)]
CanonicalVersion = Annotated[StrictInt, Field(ge=1, le=1)]
"""The integer 1 itself: a Literal would take ``true`` and ``1.0`` as 1."""

_SWAPS: tuple[tuple[Any, Any], ...] = (
    (Timestamp, CanonicalTimestamp),
    (Day, CanonicalDay),
    (UUID, CanonicalUuid),
    (SchemaVersion, CanonicalVersion),
)


def canonical_hint(hint: Any) -> Any:
    """``hint`` with each type that rewrites its input swapped for its canonical text,
    through ``X | None``; every other type (and its constraints) is kept as it is."""
    for original, twin in _SWAPS:
        if hint is original or hint == original:
            return twin
    if get_origin(hint) is Union or type(hint).__name__ == "UnionType":
        return Union[tuple(canonical_hint(arg) for arg in get_args(hint))]  # noqa: UP007
    return hint


def twin_of(model: type[BaseModel]) -> type[BaseModel]:
    """The canonical twin of one event model, with its model validators (the rules between
    fields, such as an organic click's rank) called on the twin."""
    hints = get_type_hints(model, include_extras=True)
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if info.default_factory is not None:
            default: Any = Field(default_factory=info.default_factory)
        else:
            default = ... if info.default is PydanticUndefined else info.default
        fields[name] = (canonical_hint(hints[name]), default)
    validators: dict[str, Any] = {
        name: model_validator(mode=decorator.info.mode)(decorator.func)
        for name, decorator in model.__pydantic_decorators__.model_validators.items()
    }
    twin: type[BaseModel] = create_model(
        f"Canonical{model.__name__}",
        __config__=ConfigDict(extra="forbid", frozen=True),
        __validators__=validators,
        __module__=__name__,
        **fields,
    )
    return twin


TWINS: dict[str, type[BaseModel]] = {t.name: twin_of(t.model) for t in EVENT_TYPES}
"""Each event type's twin, by its ``type``."""

AnyCanonicalEvent: Any = Annotated[Union[tuple(TWINS.values())], Field(discriminator="type")]  # noqa: UP007
CANONICAL_ONE: TypeAdapter[Any] = TypeAdapter(AnyCanonicalEvent)
CANONICAL_LIST: TypeAdapter[list[Any]] = TypeAdapter(list[AnyCanonicalEvent])
