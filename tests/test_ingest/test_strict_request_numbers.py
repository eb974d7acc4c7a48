"""Integers and booleans in request bodies are what the OpenAPI document says: ``true``, "7"
or 7.0 where an integer is expected is refused, not stored as 1 or 7 (schemathesis found
``burn_in_days: true`` stored as 1)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ingest.reports import ExperimentReportRequest, TimelineRequest
from schemas.experiments import ExperimentConfig

BASE = {"experiment_id": "lax-1", "engines": ["google"], "arms": {"control": 1, "b": 1},
        "salt": "00000000", "start": "2026-01-01"}  # fmt: skip


@pytest.mark.parametrize("value", [True, "7", 7.0])
def test_an_experiments_burn_in_is_an_integer(value: object) -> None:
    with pytest.raises(ValidationError):
        ExperimentConfig.model_validate({**BASE, "burn_in_days": value})
    assert ExperimentConfig.model_validate({**BASE, "burn_in_days": 7}).burn_in_days == 7


@pytest.mark.parametrize(
    "field, value",
    [("ranks", "3"), ("include_unidentified", "yes"), ("seed", True), ("burn_in_days", 2.0)],
)
def test_report_options_are_their_documented_types(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        ExperimentReportRequest.model_validate({"experiment_id": "x", field: value})
    if field != "ranks" and field != "include_unidentified":
        with pytest.raises(ValidationError):
            TimelineRequest.model_validate({"experiment_id": "x", field: value})
