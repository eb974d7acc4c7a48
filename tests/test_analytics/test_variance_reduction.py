"""Variance reduction: the control variates' closed form, mean zero by design, unbiased
estimates with honest SEs, and the bootstrap replicates' bookkeeping."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from analytics.stats import variance_reduction as vr
from bench.stats_validation import ARM_WEIGHTS, PaperWorld, factors, simulate, true_delta


def test_control_variates_equal_the_per_query_sums() -> None:
    """e_iar = sum_q (1{a_q = a}/pi_a - 1) x_{-q} with x_{-q} the leave-one-out pooled CTR,
    computed query by query for two installs."""
    pi = np.array([0.5, 0.25, 0.25])
    # install 0: (arm, clicked c1) per query; install 1: a single query (no covariate)
    queries = [[(0, 1), (0, 0), (1, 1), (2, 0), (1, 0)], [(1, 1)]]
    units = np.zeros((2, 3))
    clicks = np.zeros((2, 3, 1))
    for i, qs in enumerate(queries):
        for arm, c in qs:
            units[i, arm] += 1
            clicks[i, arm, 0] += c
    e, f = vr.control_variates(units, clicks, pi * 8)  # weights are normalised
    qs = queries[0]
    total = sum(c for _, c in qs)
    for a in range(3):
        by_hand = sum((float(arm == a) / pi[a] - 1) * (total - c) / (len(qs) - 1) for arm, c in qs)
        assert e[0, a, 0] == pytest.approx(by_hand)
        assert f[0, a] == pytest.approx(sum(float(arm == a) / pi[a] - 1 for arm, _ in qs))
    assert (e[1] == 0).all()


def test_control_variates_have_mean_zero_under_effects() -> None:
    """The arms move the CTR (planted effects), and still the design sums average to zero."""
    rng = np.random.default_rng(11)
    world = PaperWorld(installs=400, units_per_install=40.0)
    sums = []
    for _ in range(60):
        units, clicks = simulate(rng, world)
        e, f = vr.control_variates(units, clicks, ARM_WEIGHTS)
        sums.append(np.r_[e.sum(axis=0)[:, 0], f.sum(axis=0)] / units.sum())
    s = np.array(sums)  # [study, e of each arm at c1 then f of each arm]
    z = s.mean(axis=0) / (s.std(axis=0, ddof=1) / np.sqrt(s.shape[0]))
    assert (np.abs(z) < 3.5).all()


@pytest.mark.parametrize("planted", [False, True])
def test_estimators_are_unbiased_and_their_ses_honest(planted: bool) -> None:
    rng = np.random.default_rng(12 + planted)
    world = PaperWorld(installs=120, units_per_install=150.0, kappa=1.5, planted=planted)
    truth = true_delta(planted)[1, 0]
    plain, adjusted, within, se_plain, se_adjusted = [], [], [], [], []
    for _ in range(300):
        units, clicks = simulate(rng, world)
        t = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
        plain.append(t.plain["delta"][1, 0])
        adjusted.append(t.adjusted["delta"][1, 0])
        se_plain.append(t.plain_se["delta"][1, 0])
        se_adjusted.append(t.adjusted_se["delta"][1, 0])
        within.append(vr.within_install_gap(units, clicks).delta[1, 0])
    for values in (plain, adjusted, within):
        x = np.array(values)
        assert abs(x.mean() - truth) < 3.5 * x.std(ddof=1) / np.sqrt(x.size)
    # the sandwich SE tracks the spread over studies
    assert np.mean(se_plain) == pytest.approx(np.std(plain), rel=0.15)
    assert np.mean(se_adjusted) == pytest.approx(np.std(adjusted), rel=0.15)
    if not planted:  # ICC 0.4 and no spread of effects: the adjustment pays
        assert np.std(adjusted) < 0.9 * np.std(plain)


def test_beta_and_ctr_rows() -> None:
    rng = np.random.default_rng(3)
    units, clicks = simulate(rng, PaperWorld(installs=300, units_per_install=100.0))
    t = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
    assert np.isnan(t.plain["delta"][0]).all() and np.isnan(t.adjusted["beta"][0]).all()
    ctr = clicks.sum(axis=0) / units.sum(axis=0)[:, None]
    assert t.plain["ctr"] == pytest.approx(ctr)
    assert t.plain["beta"][1] == pytest.approx(-(ctr[1] - ctr[0]) / ctr[0])
    assert abs(t.adjusted["beta"][1, 0] - (1 - factors(True)[1, 0])) < 4 * t.adjusted_se["beta"][1, 0]


def test_replicates_with_unit_weights_give_the_point_estimates() -> None:
    rng = np.random.default_rng(4)
    units, clicks = simulate(rng, PaperWorld(installs=50, units_per_install=60.0))
    for theta in vr.THETAS:
        t = vr.adjusted_table(units, clicks, ARM_WEIGHTS, theta=theta)
        plain, adjusted = vr.replicates(units, clicks, np.ones((50, 2)), t)
        for stat in vr.STATISTICS:
            np.testing.assert_allclose(plain[stat][0], t.plain[stat], rtol=1e-12)
            np.testing.assert_allclose(adjusted[stat][1], t.adjusted[stat], rtol=1e-10)
    w = vr.within_install_replicates(units, clicks, np.ones((50, 1)))
    np.testing.assert_allclose(w[0], vr.within_install_gap(units, clicks).delta, rtol=1e-12)


def test_within_install_gap_by_hand() -> None:
    # install 0: control 10 units 5 clicks, arm 4 units 1 click; install 1: control 6 units
    # 3 clicks, arm 0 units (dropped); install 2: control 2/0, arm 2/2
    units = np.array([[10.0, 4], [6, 0], [2, 2]])
    clicks = np.array([[[5.0], [1]], [[3], [0]], [[0], [2]]])
    out = vr.within_install_gap(units, clicks)
    by_hand = (14 * (1 / 4 - 5 / 10) + 4 * (2 / 2 - 0 / 2)) / (14 + 4)
    assert out.delta[1, 0] == pytest.approx(by_hand)
    assert out.installs[1] == 2
    r0 = 8 / 18
    assert out.beta[1, 0] == pytest.approx(-by_hand / r0)


def test_shrinkage_and_between_variance() -> None:
    rng = np.random.default_rng(5)
    world = replace(PaperWorld(installs=3000, units_per_install=80.0, planted=False), kappa=3.0)
    units, clicks = simulate(rng, world)
    rbar, s2 = vr.between_install_variance(units, clicks)
    assert rbar[0] == pytest.approx(0.43, abs=0.01)
    assert np.sqrt(s2[0]) == pytest.approx(world.ctr_sd, rel=0.1)
    rho = vr.shrinkage(units, rbar, s2)
    n = units.sum(axis=1)
    assert (rho[n < 2] == 0).all() and (rho >= 0).all() and (rho < 1).all()
    assert rho[np.argmax(n), 0] > rho[np.argmin(np.where(n >= 2, n, np.inf)), 0]


def test_bad_input() -> None:
    with pytest.raises(ValueError):
        vr.control_variates(np.ones((2, 2)), np.ones((2, 3, 1)), np.ones(2))
    with pytest.raises(ValueError):
        vr.adjusted_table(np.ones((2, 2)), np.ones((2, 2, 1)), np.ones(2), theta="nope")


def test_install_weight_rows_are_the_services_weights() -> None:
    from analytics.stats.bootstrap import weights_for_keys

    keys = np.array([9, 3, 7], dtype=np.uint64)
    rows = vr.install_weight_rows(keys, 50, seed=2)
    assert rows.shape == (3, 50) and rows.dtype == np.float64
    np.testing.assert_array_equal(rows, weights_for_keys(keys, 50, 2).astype(np.float64))
