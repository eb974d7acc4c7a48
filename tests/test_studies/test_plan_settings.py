"""What a report follows under an analysis plan (``studies/arrangement/plan_settings.py``)."""

from __future__ import annotations

from schemas.analysis_plan import AnalysisPlan
from studies.arrangement.plan_settings import follow

PLAN = AnalysisPlan.model_validate(
    {
        "experiment_id": "e",
        "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}],
        "secondary": [{"quantity": "beta", "arm": "swap_1_2", "rank": 1, "engine": "bing", "subset": "box"}],
        "burn_in_days": 2,
        "intervals": {"method": "sequential", "level": 0.9},
        "correction": {"method": "bh"},
    }
)
DEFAULTS = {
    "experiment_id": "e",
    "engine": "google",
    "subset": "all",
    "burn_in_days": None,
    "unit_mode": None,
    "intervals": "bootstrap",
    "level": 0.95,
    "correction": "none",
    "baseline": "control",
    "include_unidentified": False,
    "targets": None,
    "seed": 0,
}


def test_unset_settings_are_the_plans() -> None:
    followed = follow(DEFAULTS, {"experiment_id"}, PLAN)
    assert followed.departures == {}
    assert followed.settings == {
        "engine": "google",
        "burn_in_days": 2,
        "unit_mode": "click",
        "intervals": "sequential",
        "level": 0.9,
        "baseline": "control",
        "correction": "bh",
        "include_unidentified": False,
        "targets": None,
    }


def test_settings_set_to_the_plans_values_or_named_by_it_are_no_departure() -> None:
    asked = {**DEFAULTS, "engine": "bing", "subset": "box", "burn_in_days": 2, "level": 0.9, "seed": 3}
    assert follow(asked, set(asked), PLAN).departures == {
        "intervals": {"asked": "bootstrap", "planned": "sequential"},
        "correction": {"asked": "none", "planned": "bh"},
    }


def test_each_setting_asked_against_the_plan_is_a_departure() -> None:
    asked = {
        **DEFAULTS,
        "engine": "yahoo",
        "subset": "ads",
        "burn_in_days": 0,
        "include_unidentified": True,
        "targets": [{"dimension": "age", "bin": "18-29", "share": 1.0}],
        "baseline": "swap_1_3",
    }
    given = {"engine", "subset", "burn_in_days", "include_unidentified", "targets", "baseline"}
    departures = follow(asked, given, PLAN).departures
    assert set(departures) == given
    assert departures["subset"] == {"asked": "ads", "planned": ["all", "box"]}
    assert departures["burn_in_days"] == {"asked": 0, "planned": 2}
    assert follow({**asked, "targets": []}, given, PLAN).departures.get("targets") is None


def test_a_plan_without_the_whole_selection_reports_its_first_primary_subset() -> None:
    boxed = AnalysisPlan.model_validate(
        {
            "experiment_id": "e",
            "subsets": ["box"],
            "primary": [{"quantity": "delta", "arm": "a", "rank": 1, "subset": "box"}],
        }
    )
    assert follow(DEFAULTS, {"experiment_id"}, boxed).settings["subset"] == "box"


def test_the_correction_family_is_the_plans_tests_in_this_selection() -> None:
    from studies.arrangement.plan_settings import correction_family

    arms = {"control", "swap_1_2", "swap_1_3"}
    # secondary beta_1 is on bing and box: not in a google/all report; family "all" is the default
    assert correction_family(PLAN, "google", "all", "control", arms, 6) == [("delta", "swap_1_2", 1)]
    assert correction_family(PLAN, "bing", "box", "control", arms, 6) == [("beta", "swap_1_2", 1)]
    assert correction_family(PLAN, "google", "all", "swap_1_3", arms, 6) == []  # another baseline
    assert correction_family(None, "google", "all", "control", arms, 2) == [
        ("delta", "swap_1_2", 1),
        ("delta", "swap_1_2", 2),
        ("delta", "swap_1_3", 1),
        ("delta", "swap_1_3", 2),
    ]
