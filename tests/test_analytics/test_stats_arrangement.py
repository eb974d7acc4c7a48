from __future__ import annotations

import math

import numpy as np
import pytest

from analytics.stats.arrangement import (
    composition,
    ctr,
    distortion,
    element_shares,
    gap,
    performative_power,
    performative_power_lower_bound,
)


def test_design_example_043_to_024() -> None:
    assert gap(0.24, 0.43) == pytest.approx(-0.19)
    assert distortion(0.24, 0.43) == pytest.approx(0.19 / 0.43)
    assert round(distortion(0.24, 0.43), 2) == 0.44


def test_paper_betas() -> None:
    assert distortion(0.43 - 0.27, 0.43) == pytest.approx(0.63, abs=0.005)  # swap 1-3
    assert distortion(0.154 - 0.06, 0.154) == pytest.approx(0.39, abs=0.005)  # swap 2-3


def test_empty_cells_are_nan_not_zero() -> None:
    assert math.isnan(ctr(0, 0))
    assert ctr(0, 10) == 0
    assert math.isnan(distortion(0.2, 0.0))
    assert math.isnan(performative_power_lower_bound({"control": 0.0}))


def test_performative_power_is_the_largest_first_position_gap() -> None:
    deltas = {"control": 0.0, "swap_1_2": -0.19, "swap_1_3": -0.27, "swap_2_3": math.nan}
    assert performative_power_lower_bound(deltas) == pytest.approx(0.27)


def test_the_bound_is_the_largest_drop_of_c1_not_the_largest_change() -> None:
    """Theorem 1 reads sup_a delta_1(a) with delta = control minus arm: an arm that raises
    c_1's clicks does not raise the bound (|delta_1| would)."""
    assert performative_power_lower_bound({"swap_1_2": -0.1, "hide_ads_box": 0.3}) == pytest.approx(0.1)
    found = performative_power({"swap_1_2": (-0.1, -0.15, -0.05), "hide_ads_box": (0.3, 0.2, 0.4)})
    assert (found.value, found.arm) == (pytest.approx(0.1), "swap_1_2")


def test_the_lower_confidence_bound_holds_for_the_maximum_over_arms() -> None:
    """Six arms with no effect at all: the largest point drop is above zero nearly always
    (a maximum of noise), the Bonferroni lower bound is above zero at most 5% of the time."""
    rng = np.random.default_rng(7)
    se, half = 0.02, 1.959964 * 0.02
    above_point = above_bound = 0
    for _ in range(2000):
        draws = rng.normal(0.0, se, 6)
        found = performative_power({f"a{k}": (d, d - half, d + half) for k, d in enumerate(draws)})
        above_point += found.value > 0
        above_bound += found.ci_low > 0
    assert above_point > 1900 and above_bound <= 100


def test_composition_and_its_inputs() -> None:
    assert composition(0.8, 0.7, 0.44) == pytest.approx(0.2464)
    with pytest.raises(ValueError):
        composition(1.2, 0.7, 0.44)


def test_element_shares() -> None:
    assert element_shares({"organic": 60, "ad": 30, "shopping_box": 10}) == {
        "organic": 0.6,
        "ad": 0.3,
        "shopping_box": 0.1,
    }
