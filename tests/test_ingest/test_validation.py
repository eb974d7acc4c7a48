from __future__ import annotations

import uuid

import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.validation import Rejection, validate_batch, validate_one, without_conflicting_ids
from schemas.events import Click, SerpView


def click() -> dict:
    for event in ExtensionTraffic(TrafficConfig(seed=2)).events():
        if event["type"] == "click" and event["element_type"] == "organic":
            return event
    raise AssertionError


def test_valid_click_parses_to_model() -> None:
    model = validate_one(0, click())
    assert isinstance(model, Click)
    assert model.original_rank is not None


@pytest.mark.parametrize(
    ("change", "reason", "field"),
    [
        ({"query": "x"}, "forbidden_field", "query"),
        ({"title": "x"}, "forbidden_field", "title"),
        ({"extra": 1}, "unknown_field", "extra"),
        ({"page_index": 1.5}, "wrong_type", "page_index"),
        ({"original_rank": None}, "invalid_value", None),
        ({"event_id": "not-a-uuid"}, "invalid_value", "event_id"),
        ({"sent_at": "2026-11-21T10:00:00"}, "invalid_value", "sent_at"),  # no timezone
        ({"type": "nope"}, "unknown_type", "type"),
        ({"schema_version": 9}, "unsupported_schema_version", "schema_version"),
        ({"ui_lang": "Deutsch (Schweiz)"}, "invalid_value", "ui_lang"),
    ],
)
def test_rejections_name_reason_and_field_only(change: dict, reason: str, field: str | None) -> None:
    result = validate_one(3, {**click(), **change})
    assert result == Rejection(3, reason, field)


def test_missing_type_is_a_missing_field() -> None:
    event = click()
    del event["type"]
    assert validate_one(0, event) == Rejection(0, "missing_field", "type")


def test_batch_keeps_order_and_indices() -> None:
    good = click()
    view = {**good, "type": "serp_view", "event_id": str(uuid.uuid4())}
    for k in ("element_type", "original_rank", "display_rank"):
        view.pop(k)
    accepted, rejected = validate_batch([good, "x", view])
    assert [type(m) for m in accepted] == [Click, SerpView]
    assert rejected == [Rejection(1, "not_an_object", None)]


def test_an_id_reused_in_a_batch_for_other_content_is_rejected_and_a_copy_is_not() -> None:
    """Events are stored once per id, the first: a second event with the id and other
    content would have been counted accepted and never stored. A plain copy (a retry inside
    the batch) is accepted, and stored once. The id's spelling does not matter."""
    first = click()
    copy = {**first, "event_id": first["event_id"].upper()}
    other = {**first, "display_rank": first["display_rank"] % 10 + 1}
    fresh = {**first, "event_id": str(uuid.uuid4())}
    accepted, rejected = without_conflicting_ids(*validate_batch([first, "x", copy, other, fresh, other]))
    assert rejected == [
        Rejection(1, "not_an_object", None),
        Rejection(3, "conflicting_event_id", "event_id"),
        Rejection(5, "conflicting_event_id", "event_id"),
    ]
    assert [str(m.event_id) for m in accepted] == [  # type: ignore[attr-defined]
        first["event_id"].lower(),
        first["event_id"].lower(),
        fresh["event_id"],
    ]
