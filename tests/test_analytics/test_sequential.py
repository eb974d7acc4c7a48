"""Confidence sequences: valid under peeking where the one-look interval is not, never
narrower than it, and they find a planted effect."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analytics.stats import sequential
from bench.peeking import peek


def test_half_width_is_tightest_near_the_tuning_size_and_wider_than_one_look() -> None:
    n = np.array([100, 1000, 5000, 20000, 200000])
    ratio = sequential.half_width_factor(n) / sequential.normal_half_width_factor(n)
    assert (ratio > 1).all()  # never narrower than the one-look normal interval
    assert ratio[2] == ratio.min()  # tightest (relative to one look) at the tuning size
    # the formula, by hand at n = 5000: rho^2 = (-2 log a + log(-2 log a + 1)) / 5000
    r2 = (-2 * math.log(0.05) + math.log(-2 * math.log(0.05) + 1)) / 5000
    by_hand = math.sqrt(2 * (5000 * r2 + 1) / (5000**2 * r2) * math.log(math.sqrt(5000 * r2 + 1) / 0.05))
    assert sequential.half_width_factor(5000) == pytest.approx(by_hand)


def test_ratio_influence_gives_the_clustered_delta_method_variance() -> None:
    """sd(influence)/sqrt(n) equals the textbook clustered variance of a ratio estimator."""
    rng = np.random.default_rng(3)
    units = rng.integers(1, 30, 500).astype(float)
    clicks = rng.binomial(units.astype(int), 0.4).astype(float)[:, None]
    ratio, influence = sequential.ratio_influence(clicks, units)
    r = clicks.sum() / units.sum()
    textbook = np.sqrt(((clicks[:, 0] - r * units) ** 2).sum() / (500 - 1) / 500) / units.mean()
    assert ratio[0] == pytest.approx(r)
    assert influence.std(ddof=1) / np.sqrt(500) == pytest.approx(textbook)


def test_first_exclusion_is_the_first_look_off_zero() -> None:
    assert sequential.first_exclusion([(1, -1, 1), (2, 0.1, 2), (3, 0.2, 3)]) == 2
    assert sequential.first_exclusion([(1, -1, 1), (2, -2, 0.5)]) is None


def test_peeking_after_every_thousand_units_aa() -> None:
    """100 simulated A/A studies looked at 15 times: the one-look bootstrap interval excludes
    zero at some look far more often than 5%; the sequence stays within 5% (+ MC error).
    bench/peeking.py runs the large version (figures in bench/README.md)."""
    result = peek(studies=100, installs=1500, looks=15, per_look=1000, effect=0.0, seed=11)
    boot, boot_sd = result.rate("bootstrap")
    seq, seq_sd = result.rate("sequential")
    print(f"ever excluded zero: bootstrap {boot:.3f} +- {boot_sd:.3f}, sequential {seq:.3f} +- {seq_sd:.3f}")
    assert seq <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 100)
    assert boot > 0.10
    assert result.narrower == 0  # never narrower than the one-look interval


def test_the_sequence_finds_a_planted_swap_effect() -> None:
    """swap_1_2 lowers CTR_1 by 0.12 (the paper's Google swap is larger): the sequence
    excludes zero in every study, later than the one-look interval does."""
    result = peek(studies=8, installs=1500, looks=15, per_look=1000, effect=0.12, seed=5)
    assert result.ever_excluded["sequential"] == 8
    firsts = result.first_exclusion_units
    print(f"first exclusion (units): sequential {firsts['sequential']}, bootstrap {firsts['bootstrap']}")
    assert np.median(firsts["sequential"]) >= np.median(firsts["bootstrap"])
    assert result.narrower == 0


def test_decision_day_is_the_first_cumulative_look_that_excludes_zero_in_any_row_order() -> None:
    """sequential_decisions on per-(day, install, arm) rows equals evaluating the sequence on
    each day's cumulative per-install counts by hand, whatever order the rows come in."""
    from analytics.stats.arrangement_table import PerInstallArrays, sequential_bounds, sequential_decisions

    rng = np.random.default_rng(11)
    n, days = 4000, 6
    install = rng.integers(0, 800, n).astype(np.uint64)
    arm = rng.integers(0, 2, n)  # 0 control, 1 swap (c1 CTR 0.5 vs 0.35: found within days)
    day = np.sort(rng.integers(0, days, n))
    clicks = (rng.random(n) < np.where(arm == 0, 0.5, 0.35)).astype(float)[:, None]
    rows = PerInstallArrays(install, arm, ["control", "swap_1_2"], np.ones(n), clicks)
    found = sequential_decisions(rows, day, 1, "control")

    expected = None
    for d in range(days):  # by hand: cumulative per install up to day d
        upto = day <= d
        keys = np.unique(install[upto])
        per = np.zeros((keys.size, 4))
        at = np.searchsorted(keys, install[upto])
        for a in (0, 1):
            mine = arm[upto] == a
            np.add.at(per[:, 2 * a], at[mine], 1.0)
            np.add.at(per[:, 2 * a + 1], at[mine], clicks[upto][mine, 0])
        low, high = sequential_bounds(per, {"control": 0, "swap_1_2": 1}, 2, "control", 0.05)[
            ("delta", "swap_1_2")
        ][0]
        if expected is None and (low > 0 or high < 0):
            expected = d
    assert expected is not None and found == {"swap_1_2": expected}
    shuffled = rng.permutation(n)
    again = PerInstallArrays(install[shuffled], arm[shuffled], rows.arm_names, rows.units, clicks[shuffled])
    assert sequential_decisions(again, day[shuffled], 1, "control") == found


def test_moment_bounds_equal_the_explicit_influences() -> None:
    """``sequential_bounds`` takes each sd from the columns' Gram matrix; the explicit
    per-install influences (``ratio_influence``, ``gap_influence``, ``interval``) give the
    same intervals, including arms without units, identical installs and two installs."""
    from analytics.stats.arrangement_table import sequential_bounds

    rng = np.random.default_rng(5)
    for n, arms in ((2, 2), (3, 3), (60, 3), (5000, 4)):
        units = rng.poisson(3, (n, arms)) * (rng.random((n, arms)) < 0.7)
        clicks = np.stack([rng.binomial(units, p) for p in (0.4, 0.1, 0.001)], axis=2)
        if n == 60:
            units[:, 2], clicks[:, 2] = 0, 0  # an arm nobody saw
        if n == 3:
            units[:], clicks[:] = 2, 1  # every install on the same ratio: zero spread
        per = np.concatenate([np.column_stack([units[:, a], clicks[:, a]]) for a in range(arms)], axis=1)
        index = {("control" if a == 0 else f"arm{a}"): a for a in range(arms)}
        got = sequential_bounds(per.astype(float), index, 4, "control", 0.05)
        want = {}
        ratio = {
            a: sequential.ratio_influence(clicks[:, k].astype(float), units[:, k].astype(float))
            for a, k in index.items()
        }
        for a in index:
            want[("ctr", a)] = sequential.interval(*ratio[a])
            if a != "control":
                delta, infl_delta, beta, infl_beta = sequential.gap_influence(*ratio[a], *ratio["control"])
                want[("delta", a)] = sequential.interval(delta, infl_delta)
                want[("beta", a)] = sequential.interval(beta, infl_beta)
        assert set(got) == set(want)
        for key, (low, high) in want.items():
            mine = np.array(got[key])
            assert np.allclose(mine[:, 0], low, rtol=1e-9, atol=1e-12, equal_nan=True), (n, key)
            assert np.allclose(mine[:, 1], high, rtol=1e-9, atol=1e-12, equal_nan=True), (n, key)
