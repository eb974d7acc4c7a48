"""The analysis plan model (issue 38): TOML in, canonical JSON and its hash out."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.analysis_plan import AnalysisPlan, plan_from_toml

PLAN = Path(__file__).resolve().parents[2] / "docs" / "plans" / "powermeter.toml"


def test_the_papers_plan_reads() -> None:
    plan = plan_from_toml(PLAN.read_text())
    assert plan.experiment_id == "powermeter"
    primary = [(q.quantity, q.arm, q.rank) for q in plan.primary]
    assert primary == [("delta", "swap_1_2", 1), ("beta", "swap_1_2", 1)]
    assert plan.correction.family == "all" and plan.correction.method == "holm"
    assert plan.burn_in_days == 4 and plan.intervals.method == "bootstrap" and plan.intervals.level == 0.95
    assert len(plan.secondary) == 10


def test_round_trip_through_canonical_json_keeps_the_plan_and_its_hash() -> None:
    plan = plan_from_toml(PLAN.read_text())
    again = AnalysisPlan.model_validate_json(plan.canonical_json())
    assert again == plan
    assert again.sha256() == plan.sha256()
    assert len(plan.sha256()) == 64


def test_hash_ignores_order_of_keys_and_defaults_left_out() -> None:
    short = 'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "a", rank = 1 }]\n'
    spelled_out = (
        'burn_in_days = 4\nbaseline = "control"\n'
        'primary = [{ rank = 1, arm = "a", quantity = "delta", engine = "google", subset = "all" }]\n'
        'experiment_id = "e1"\n[correction]\nmethod = "holm"\nfamily = "all"\n'
    )
    assert plan_from_toml(short).sha256() == plan_from_toml(spelled_out).sha256()
    changed = short.replace("rank = 1", "rank = 2")
    assert plan_from_toml(changed).sha256() != plan_from_toml(short).sha256()


def test_frozen_quintiles_give_the_report_its_bounds() -> None:
    text = (
        'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "a", rank = 1 }]\n'
        "[quintiles.n_candidates]\nkept = [50, 55, 60, 65]\n"
    )
    plan = plan_from_toml(text)
    assert plan.quintile_bounds_for("n_candidates_q3") == ((50, 55, 60, 65), (50, 55, 60, 65))
    assert plan.quintile_bounds_for("no_ads_no_box_n_candidates_q3") is None
    assert plan.quintile_bounds_for("box") is None


@pytest.mark.parametrize(
    "text",
    [
        'experiment_id = "e1"\nprimary = []\n',
        'experiment_id = "e1"\nprimary = [{ quantity = "gap", arm = "a", rank = 1 }]\n',
        'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "a", rank = 1 }]\nsurprise = 1\n',
        'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "control", rank = 1 }]\n',
        'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "a", rank = 1 }]\n'
        "[quintiles.n_candidates]\nkept = [60, 55, 60, 65]\n",
        'experiment_id = "e1"\nprimary = [{ quantity = "delta", arm = "a", rank = 1 }]\n'
        '[correction]\nmethod = "tukey"\n',
    ],
)
def test_bad_plans_are_refused(text: str) -> None:
    with pytest.raises(ValidationError):
        plan_from_toml(text)


def test_bad_toml_is_a_toml_error() -> None:
    with pytest.raises(tomllib.TOMLDecodeError):
        plan_from_toml("experiment_id = ")
