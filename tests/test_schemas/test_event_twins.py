"""The canonical twins only ever accept what the originals accept, and write it identically
(``schemas/event_twins.py``): every day and timestamp text around the ranges' edges, and
every field of every event type swapped for a bank of awkward values."""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

import orjson
import pytest
from pydantic import TypeAdapter, ValidationError

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.validation import validate_batch, validate_body
from schemas.event_twins import CANONICAL_ONE, TWINS, CanonicalDay, CanonicalTimestamp
from schemas.event_types import EVENT_TYPES
from schemas.events import Day, Timestamp
from tests.integration.test_bad_input import good_event

CRAWL = {"schema_version": 1, "sent_at": "2026-11-23T10:00:00.000Z", "engine": "google"}


def samples() -> dict[str, dict[str, Any]]:
    """One valid event of each type, written canonically."""
    view = good_event(1)
    click = next(e for e in ExtensionTraffic(TrafficConfig(seed=1)).events() if e["type"] == "click")
    ids = {"event_id": str(uuid.uuid4())}
    crawl = {**CRAWL, **ids, "crawl_id": "c1", "root": "coffee", "study_id": "s1", "max_depth": 2}
    return {
        "serp_view": {**view, "sent_at": "2026-11-23T10:00:00.000Z"},
        "click": {**click, "sent_at": "2026-11-23T10:00:00.000Z"},
        "install_profile": {
            "schema_version": 1,
            "sent_at": "2026-11-23T10:00:00.000Z",
            **ids,
            "type": "install_profile",
            "install_id": "install-0001",
            "install_day": "2026-11-20",
            "extension_version": "1.4.0",
            "experiment_id": "demo",
            "consent": "given",
            "age_band": "25-34",
            "search_languages": ["de", "en"],
            "country": "DE",
        },
        "serp_snapshot": {
            **CRAWL,
            **ids,
            "type": "serp_snapshot",
            "study_id": "s1",
            "round_id": "r0001",
            "profile_id": "p1",
            "role": "control",
            "treatment": "",
            "query": "coffee",
            "results": [{"rank": 1, "type": "organic", "url": "https://example.org/"}],
            "status": "ok",
            "coverage": 0.95,
            "loaded_at": "2026-11-23T10:00:01.250Z",
        },
        "autocomplete_node": {
            **CRAWL,
            **ids,
            "type": "autocomplete_node",
            "crawl_id": "c1",
            "root": "coffee",
            "query": "coffee",
            "depth": 0,
            "suggestions": [{"rank": 1, "text": "coffee shop"}],
            "status": "ok",
        },
        "crawl_started": {**crawl, "type": "crawl_started"},
        "crawl_completed": {**crawl, "type": "crawl_completed", "n_nodes": 3, "n_edges": 2},
    }


def twin_dump(event: Any) -> str | None:
    try:
        return str(CANONICAL_ONE.validate_json(json.dumps(event)).model_dump_json())
    except ValidationError:
        return None


def original_dump(event: Any) -> str | None:
    accepted, _ = validate_batch([event])
    return accepted[0].model_dump_json() if accepted else None


def test_every_type_has_a_twin_with_the_same_fields_in_the_same_order() -> None:
    for row in EVENT_TYPES:
        twin = TWINS[row.name]
        assert list(twin.model_fields) == list(row.model.model_fields)
        for name, info in row.model.model_fields.items():
            assert twin.model_fields[name].is_required() == info.is_required(), (row.name, name)


def test_each_canonical_sample_goes_the_quick_way_and_writes_what_the_original_writes() -> None:
    for kind, event in samples().items():
        assert original_dump(event) is not None, kind
        assert twin_dump(event) == original_dump(event), kind


BANK: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 0.5, 2**64 - 1, 2**64, "", "x", "1", "true", "google",
    "control", "organic", "declined", "none", "top", "ok", "2026-11-28", "2026-02-29", "2024-02-29",
    "2026-11-28T10:00:00.000Z", "2026-11-28T10:00:00Z", "2026-11-28T10:00:00.000+00:00",
    "2026-11-28T10:00:00.000z", "2026-11-28 10:00:00.000Z", "2026-11-28T10:00:00.0000Z",
    "0E55FF66-45F4-445C-AD23-A22FDFD7FDAD", "0e55ff66-45f4-445c-ad23-a22fdfd7fdad",
    "0e55ff6645f4445cad23a22fdfd7fdad", "{0e55ff66-45f4-445c-ad23-a22fdfd7fdad}", "é", "a" * 600,
    [], [1], [1, 1], ["de", "de"], [{"rank": 1, "text": "x"}], {}, {"rank": 1},
]  # fmt: skip


@pytest.mark.parametrize("kind", sorted(TWINS))
def test_whatever_a_twin_accepts_the_original_accepts_and_writes_identically(kind: str) -> None:
    event = samples()[kind]
    variants = [{**event, "unknown_field": 1}]
    for field in [*event, *TWINS[kind].model_fields]:
        variants.append({k: v for k, v in event.items() if k != field})
        variants.extend({**event, field: value} for value in BANK)
    quick = 0
    for variant in variants:
        dumped = twin_dump(variant)
        if dumped is not None:
            quick += 1
            assert dumped == original_dump(variant), variant
    assert quick > len(event)  # the quick way takes more than the sample itself


def test_cross_field_rules_hold_on_the_quick_way() -> None:
    click = {**samples()["click"], "element_type": "organic"}
    click.pop("original_rank", None)
    declined = {**samples()["install_profile"], "consent": "declined"}
    twice = {**samples()["install_profile"], "search_languages": ["de", "de"]}
    for event in (click, declined, twice):
        assert twin_dump(event) is None and original_dump(event) is None


def _agree(twin: TypeAdapter[Any], original: TypeAdapter[Any], text: str) -> bool:
    """Whether the twin accepts ``text`` exactly when the original accepts it unchanged."""
    try:
        twin.validate_python(text)
        quick = True
    except ValidationError:
        quick = False
    try:
        written = original.dump_python(original.validate_python(text), mode="json")
        canonical = written == text
    except ValidationError:
        canonical = False
    return quick == canonical


def test_a_day_is_taken_the_quick_way_exactly_when_the_original_takes_it_unchanged() -> None:
    twin, original = TypeAdapter(CanonicalDay), TypeAdapter(Day)
    years = [*range(1965, 1975), *range(1996, 2005), *range(2096, 2105), *range(2144, 2155)]
    for year, month, day in itertools.product(years, range(0, 14), range(0, 33)):
        text = f"{year:04d}-{month:02d}-{day:02d}"
        assert _agree(twin, original, text), text


def test_a_timestamp_is_taken_the_quick_way_exactly_when_the_original_takes_it_unchanged() -> None:
    twin, original = TypeAdapter(CanonicalTimestamp), TypeAdapter(Timestamp)
    edges = (1900, 2000, 2100, 2200, 2300)
    years = [year for edge in edges for year in range(edge - 5, edge + 5)]
    for year, month, day in itertools.product(years, range(0, 14), range(0, 33)):
        text = f"{year:04d}-{month:02d}-{day:02d}T12:34:56.789Z"
        assert _agree(twin, original, text), text
    for hour, minute, second in itertools.product(range(0, 26), range(0, 61, 7), (0, 9, 59, 60, 61)):
        text = f"2026-11-28T{hour:02d}:{minute:02d}:{second:02d}.000Z"
        assert _agree(twin, original, text), text
    for text in ("1900-01-01T00:00:00.000Z", "2299-12-31T23:59:59.999Z", "2026-11-28T10:00:00.5Z"):
        assert _agree(twin, original, text), text


def test_a_body_with_one_bad_event_is_walked_and_names_it() -> None:
    events = list(samples().values())
    bad = [*events, {**events[0], "arm": "https://example.org/"}]
    accepted, rejected = validate_body(orjson.dumps(bad), bad)
    assert len(accepted) == len(events)
    assert [(r.index, r.reason, r.field) for r in rejected] == [(len(events), "invalid_value", "arm")]
    accepted, rejected = validate_body(orjson.dumps(events), events)
    assert not rejected and [m.model_dump_json() for m in accepted] == [original_dump(e) for e in events]
