"""Validate each event of a request on its own, without ever echoing a value.

Rejections carry a reason code and the offending field's name only: a
rejected payload may hold exactly the data we promised never to keep.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from schemas.event_twins import CANONICAL_LIST, CANONICAL_ONE
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
    "conflicting_event_id",
    "install_erased",
)
"""``unregistered_arm``: an event of a registered experiment naming an arm or an engine it does
not run (``ingest/registered_arms.py``). ``conflicting_event_id``: an event whose id an
earlier event of the same request has, with other content (events are stored once per id,
the first; a copy with the same content is accepted, and stored once). ``install_erased``: an
event of an install whose data was erased (``ingest/erased_installs.py``)."""


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


def validate_body(body: bytes, doc: Any) -> tuple[list[BaseModel], list[Rejection]]:
    """``validate_batch`` of a request's events (``doc``, the body as orjson read it), by
    the quickest way that gives the same answer.

    A body whose events are all valid and written canonically (what the extension and the
    crawlers send) is checked by the canonical twins in one call on its bytes
    (``schemas.event_twins.py``): no Python per field, and each twin writes the JSON
    its original would. Any other body is walked as before, so each rejection keeps its
    reason."""
    try:
        if isinstance(doc, list):
            return CANONICAL_LIST.validate_json(body), []
        if isinstance(doc, dict):
            return [CANONICAL_ONE.validate_json(body)], []
    except ValidationError:
        pass
    return validate_batch(doc if isinstance(doc, list) else [doc])


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


def move_to_rejected(
    accepted: list[BaseModel], rejected: list[Rejection], refused: Sequence[tuple[int, str, str]]
) -> tuple[list[BaseModel], list[Rejection]]:
    """``validate_batch``'s answer with the accepted events at the given positions (in
    ``accepted``, with a reason and field each) moved to the rejections, by their index in
    the batch, in order."""
    if not refused:
        return accepted, rejected
    invalid = {r.index for r in rejected}
    indices = [i for i in range(len(accepted) + len(rejected)) if i not in invalid]
    dropped = {position for position, _, _ in refused}
    more = [Rejection(indices[position], reason, name) for position, reason, name in refused]
    kept = [m for position, m in enumerate(accepted) if position not in dropped]
    return kept, sorted([*rejected, *more], key=lambda r: r.index)


def without_conflicting_ids(
    accepted: list[BaseModel], rejected: list[Rejection]
) -> tuple[list[BaseModel], list[Rejection]]:
    """Events that reuse an earlier event's id of the same request with other content are
    rejected: only the first would be stored, and the 202 would count one that never is."""
    # A request's events are all twins (ids as text) or all originals (UUIDs): one kind,
    # so ids that differ as values differ as text, and the common case needs no str().
    if len({getattr(m, "event_id", None) for m in accepted}) == len(accepted):
        return accepted, rejected
    ids = [str(getattr(m, "event_id", "")) for m in accepted]
    repeated = {i for i, n in Counter(ids).items() if n > 1}
    if not repeated:
        return accepted, rejected
    first: dict[str, str] = {}
    refused = []
    for position, (event_id, model) in enumerate(zip(ids, accepted, strict=True)):
        if event_id in repeated:
            content = model.model_dump_json()
            if first.setdefault(event_id, content) != content:
                refused.append((position, "conflicting_event_id", "event_id"))
    return move_to_rejected(accepted, rejected, refused)
