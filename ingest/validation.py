"""Validate each event of a request on its own, without ever echoing a value.

Rejections carry a reason code and the offending field's name only: a
rejected payload may hold exactly the data we promised never to keep.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.event_types import BY_NAME, EXTENSION_TYPES, AnyEvent
from schemas.events import PRIVACY_FORBIDDEN_FIELDS

_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyEvent)
_LIST_ADAPTER: TypeAdapter[list[Any]] = TypeAdapter(list[AnyEvent])

REASONS = (
    "not_an_object",
    "unknown_type",
    "unsupported_schema_version",
    "forbidden_field",
    "unknown_field",
    "missing_field",
    "wrong_type",
    "invalid_value",
    "unregistered_arm",
)
"""``unregistered_arm``: an event of a registered experiment naming an arm or an engine it does
not run (``ingest/registered_arms.py``)."""


@dataclass(frozen=True)
class Rejection:
    index: int
    reason: str
    field: str | None

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "reason": self.reason, "field": self.field}


def _reason(error: Any) -> str:
    kind = error["type"]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        return "unknown_type" if kind == "union_tag_invalid" else "missing_field"
    if kind == "extra_forbidden":
        return "unknown_field"
    if kind == "missing":
        return "missing_field"
    if kind.endswith("_type") or kind in ("is_instance_of", "model_type", "dataclass_type"):
        return "wrong_type"
    if kind == "literal_error" and error["loc"][-1:] == ("schema_version",):
        return "unsupported_schema_version"
    return "invalid_value"


def _field(error: Any) -> str | None:
    loc = list(error["loc"])
    if error["type"] in ("union_tag_invalid", "union_tag_not_found"):
        return "type"
    if loc and isinstance(loc[0], str) and loc[0] in _TAGS:
        loc = loc[1:]  # drop the discriminator branch name
    return ".".join(str(p) for p in loc) or None


_TAGS = frozenset(BY_NAME)
"""pydantic names a union branch by its tag in an error's location."""


def _extension_event(item: Any) -> bool:
    """An extension event by its declared type (any JSON value may sit in ``type``)."""
    kind = item.get("type")
    return isinstance(kind, str) and kind in EXTENSION_TYPES


def validate_one(index: int, item: Any) -> BaseModel | Rejection:
    if not isinstance(item, dict):
        return Rejection(index, "not_an_object", None)
    if _extension_event(item):
        forbidden = sorted(PRIVACY_FORBIDDEN_FIELDS.intersection(item))
        if forbidden:
            return Rejection(index, "forbidden_field", forbidden[0])
    try:
        model: BaseModel = _ADAPTER.validate_python(item)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False, include_context=False)[0]
        return Rejection(index, _reason(first), _field(first))
    return model


def validate_batch(items: Sequence[Any]) -> tuple[list[BaseModel], list[Rejection]]:
    """Valid events as models (in order) and one rejection per invalid event.

    The common case, a batch that is all valid, is checked in one call; only a
    batch with errors is walked event by event to name each rejection.
    """
    if not any(
        isinstance(i, dict) and _extension_event(i) and not PRIVACY_FORBIDDEN_FIELDS.isdisjoint(i)
        for i in items
    ):
        try:
            return list(_LIST_ADAPTER.validate_python(items)), []
        except ValidationError:
            pass
    accepted: list[BaseModel] = []
    rejected: list[Rejection] = []
    for i, item in enumerate(items):
        result = validate_one(i, item)
        (rejected if isinstance(result, Rejection) else accepted).append(result)  # type: ignore[arg-type]
    return accepted, rejected
