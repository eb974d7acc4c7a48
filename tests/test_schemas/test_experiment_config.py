"""An experiment's arms per engine (engine_arms): checked, and what each engine runs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from schemas.experiments import ExperimentConfig

BASE: dict[str, Any] = {
    "experiment_id": "e1",
    "engines": ["google", "bing"],
    "arms": {"control": 2, "swap_1_2": 1, "hide_box": 1},
    "salt": "salt-0001",
    "start": "2026-11-01",
}


def test_engines_not_listed_run_every_arm_and_listed_ones_their_own() -> None:
    config = ExperimentConfig.model_validate({**BASE, "engine_arms": {"bing": ["control", "swap_1_2"]}})
    assert config.arms_on("google") == {"control": 2, "swap_1_2": 1, "hide_box": 1}
    assert config.arms_on("bing") == {"control": 2, "swap_1_2": 1}
    public = config.public()
    assert public["engine_arms"] == {
        "bing": [{"arm": "control", "weight": 2 / 3}, {"arm": "swap_1_2", "weight": 1 / 3}]
    }
    assert [a["weight"] for a in public["arms"]] == [0.5, 0.25, 0.25]
    assert ExperimentConfig.model_validate(BASE).public()["engine_arms"] == {}


@pytest.mark.parametrize(
    ("engine_arms", "says"),
    [
        ({"duckduckgo": ["control", "swap_1_2"]}, "not in engines"),
        ({"bing": ["swap_1_2", "hide_box"]}, "'control' arm"),
        ({"bing": ["control", "swap_2_3"]}, "not in arms"),
        ({"bing": ["control", "control"]}, "twice"),
        ({"bing": ["control"]}, "at least 2"),
    ],
)
def test_engine_arms_are_checked(engine_arms: dict[str, list[str]], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        ExperimentConfig.model_validate({**BASE, "engine_arms": engine_arms})


@pytest.mark.parametrize("weight", ["1", True, None, [1]])
def test_an_arm_weight_is_a_number_not_text_or_a_boolean(weight: object) -> None:
    with pytest.raises(ValidationError, match=r"arms\.control"):
        ExperimentConfig.model_validate({**BASE, "arms": {"control": weight, "swap_1_2": 1}})
    numbers = ExperimentConfig.model_validate({**BASE, "arms": {"control": 2, "swap_1_2": 0.5}})
    assert numbers.arms == {"control": 2.0, "swap_1_2": 0.5}


@pytest.mark.parametrize(
    "start", ["0001-01-01", "9999-12-31", "1969-12-31", 0, 1764201600, "2026-11-01T00:00:00", "2026-1-1"]
)
def test_a_start_is_a_calendar_day_the_store_can_hold(start: object) -> None:
    """Days ClickHouse's Date would clamp (0001-01-01 read back as 1970-01-01) and numbers or
    times read as days are refused, as in the events."""
    with pytest.raises(ValidationError, match="start"):
        ExperimentConfig.model_validate({**BASE, "start": start})
    with pytest.raises(ValidationError, match="end"):
        ExperimentConfig.model_validate({**BASE, "end": "2150-01-01"})
    config = ExperimentConfig.model_validate({**BASE, "start": "2149-06-06"})
    assert config.model_dump(mode="json")["start"] == "2149-06-06"
    assert ExperimentConfig.model_validate(config.model_dump()) == config  # dates from Python pass


@pytest.mark.parametrize("tiny", [5e-324, 2e-293, 1e-10])
def test_an_arm_whose_share_would_round_to_nothing_is_refused_by_name(tiny: float) -> None:
    """Schemathesis registered arms of 5e-324 and 2e-293 beside 1.0: the public config then
    gave a share of 0.0, which its document says is above 0."""
    with pytest.raises(ValidationError, match=r"at least 1e-09 of their sum.*'swap_1_2'"):
        ExperimentConfig.model_validate({**BASE, "arms": {"control": 1.0, "swap_1_2": tiny}})


def test_every_share_an_accepted_config_publishes_is_above_zero() -> None:
    config = ExperimentConfig.model_validate({**BASE, "arms": {"control": 1.0, "swap_1_2": 2e-9}})
    assert all(a["weight"] > 0 for a in config.public()["arms"])  # type: ignore[union-attr]
