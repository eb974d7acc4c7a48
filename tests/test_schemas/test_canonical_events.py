"""Accepted means storable: values are checked against their ClickHouse columns and
written in one canonical form (issue 11: a datetime in a Date column, out-of-range
days and timestamps were accepted, then refused or clamped by ClickHouse)."""

from __future__ import annotations

import orjson
import pytest

from ingest.validation import validate_batch
from tests.integration.test_bad_input import good_event


@pytest.mark.parametrize(
    "day",
    ["2026-11-01T00:00:00Z", "1969-12-31", "2149-06-07", "2300-01-01", "20261101", "2026-1-1", 0, 20261101],
)
def test_a_day_must_be_a_calendar_day_a_date_column_holds(day: object) -> None:
    accepted, rejected = validate_batch([{**good_event(), "install_day": day}])
    assert not accepted and [(r.reason, r.field) for r in rejected] == [("invalid_value", "install_day")]


@pytest.mark.parametrize("day", ["1970-01-01", "2026-11-01", "2149-06-06"])
def test_days_at_the_column_limits_pass(day: str) -> None:
    accepted, rejected = validate_batch([{**good_event(), "install_day": day}])
    assert not rejected and orjson.loads(accepted[0].model_dump_json())["install_day"] == day


@pytest.mark.parametrize(
    "sent_at",
    [
        "1899-12-31T23:59:59Z",
        "2300-01-01T00:00:00Z",
        "2026-11-01T00:00:00",
        "9999-12-31T23:59:59-23:59",  # in UTC past what a datetime holds: an OverflowError
        "0001-01-01T00:00:00+23:59",
    ],
)
def test_timestamps_outside_datetime64_or_without_zone_are_refused(sent_at: str) -> None:
    _, rejected = validate_batch([{**good_event(), "sent_at": sent_at}])
    assert [r.field for r in rejected] == ["sent_at"]


def test_timestamps_are_written_in_utc_with_milliseconds() -> None:
    event = {**good_event(), "sent_at": "2026-11-01T01:30:00.123456+02:00"}
    event["event_id"] = event["event_id"].upper()
    (model,), _ = validate_batch([event])
    row = orjson.loads(model.model_dump_json())
    assert row["sent_at"] == "2026-10-31T23:30:00.123Z"
    assert row["event_id"] == event["event_id"].lower()


def test_counts_beyond_their_column_are_refused() -> None:
    _, rejected = validate_batch([{**good_event(), "n_candidates": 2**64}])
    assert [r.field for r in rejected] == ["n_candidates"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sent_at", 1700000000),  # epoch seconds as a number
        ("sent_at", "1700000000"),  # and as text: no scalar is coerced from another kind
        ("sent_at", 1.7e9),
        ("schema_version", True),  # a Literal[1] alone took true and 1.0 as 1
        ("schema_version", 1.0),
        ("schema_version", "1"),
    ],
)
def test_timestamps_and_the_version_are_not_coerced_from_other_kinds(field: str, value: object) -> None:
    _, rejected = validate_batch([{**good_event(), field: value}])
    assert [(r.reason, r.field) for r in rejected] == [("invalid_value", field)]


@pytest.mark.parametrize("version", ["1.0+johns.bank.com", "1.5.0-my-name", "v1.5", "1.2.3.4.5", "1..2"])
def test_an_extension_version_is_a_manifest_version_and_carries_no_words(version: str) -> None:
    _, rejected = validate_batch([{**good_event(), "extension_version": version}])
    assert [(r.reason, r.field) for r in rejected] == [("invalid_value", "extension_version")]


@pytest.mark.parametrize("version", ["1", "1.5.0", "65535.0.0.1"])
def test_manifest_versions_pass(version: str) -> None:
    accepted, rejected = validate_batch([{**good_event(), "extension_version": version}])
    assert not rejected and len(accepted) == 1


@pytest.mark.parametrize("coverage", ["0.5", True, "1", None, 0, 1, 0.25])
def test_a_snapshots_coverage_is_a_number_never_text(coverage: object) -> None:
    from collectors.simulate.serp_traffic import SerpSimulation, SerpStudyConfig

    snapshot = {**next(SerpSimulation(SerpStudyConfig()).round(0)), "coverage": coverage}
    accepted, rejected = validate_batch([snapshot])
    if isinstance(coverage, str | bool):
        assert [(r.reason, r.field) for r in rejected] == [("wrong_type", "coverage")]
    else:
        assert not rejected and orjson.loads(accepted[0].model_dump_json())["coverage"] == coverage
