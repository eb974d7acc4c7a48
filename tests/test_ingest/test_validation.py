from __future__ import annotations

import uuid

import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.validation import Rejection, validate_batch, validate_one
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
