"""The planner-against-simulator bench (issue 38, Done means 3) on a tiny size: its studies
are counted as the report counts, its simulator world plants the paper's numbers, and its
comparison puts each prediction beside the achieved median half-width."""

from __future__ import annotations

import math

import pytest

from analytics.stats import planner
from bench.planner_check import NAMES, compare, report, simulate_study, simulator_world


def test_a_study_is_counted_as_the_report_counts() -> None:
    study = simulate_study(12, 2.0, seed=5, pilot_days=1.0)
    units, clicks = study.counts.units, study.counts.clicks
    assert units.shape == (12, len(NAMES)) and clicks.shape == (12, len(NAMES), 1)
    # the size's units (3.58 per install-day), unidentified pages dropped: about 86
    assert 60 < units.sum() < 110 and (clicks <= units[:, :, None]).all()
    assert study.pilot is not None and 0 < study.pilot.units.sum() < units.sum()
    assert (study.pilot.units <= units).all()


def test_the_comparison_on_a_tiny_size() -> None:
    [result] = compare([(20, 3.0)], studies=2, seed=7, pilot_days=1.0, panel=200)
    assert result.studies == 2 and all(h > 0 for h in result.achieved)
    assert set(result.predicted) == {"simulator", "simulator, proportional", "paper", "pilot"}
    world = simulator_world(20, 3.0, panel=200)
    assert world.ctr == pytest.approx(0.43, abs=1e-3) and world.delta == pytest.approx(-0.19, abs=1e-3)
    assert 0 < world.ctr_sd < 0.1 and world.arm_factor is not None
    assert result.predicted["simulator"] == pytest.approx(
        (planner.half_width(world, "delta"), planner.half_width(world, "beta"))
    )
    paper = planner.paper_world()
    assert result.predicted["paper"][0] == pytest.approx(
        planner.half_width(planner.World(**{**vars(paper), "installs": 20, "days": 3.0}))
    )
    for name, ratios in result.ratios().items():
        assert all(0.3 < r < 3 for r in ratios), name
        assert result.within_goal(name) == all(abs(r - 1) <= 0.15 for r in ratios)
    assert result.pilot is not None and result.pilot.installs == 20 and result.pilot.days == 1.0
    assert result.pilot_spread is not None and all(math.isfinite(q) for q in result.pilot_spread["delta"])
    lines = report([result])
    assert lines[0].startswith("| size | statistic | achieved") and "20 x 3 days" in lines[2]
