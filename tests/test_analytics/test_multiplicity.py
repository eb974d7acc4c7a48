"""Multiplicity: adjusted p-values against hand computations, and the intervals' levels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analytics.stats import multiplicity as mc
from analytics.stats import sequential


def test_adjusted_p_values_by_hand() -> None:
    # sorted: 0.005, 0.01, 0.03, 0.04 (m = 4)
    p = [0.01, 0.04, 0.03, 0.005]
    # Bonferroni: 4p, capped at 1
    assert mc.bonferroni(p) == pytest.approx([0.04, 0.16, 0.12, 0.02])
    # Holm: 4(.005)=.02, 3(.01)=.03, 2(.03)=.06, 1(.04)=.04 -> running max .02 .03 .06 .06
    assert mc.holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # BH: 4p/k = .02 .02 .04 .04 -> running min from the top: the same
    assert mc.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_the_textbook_five() -> None:
    p = np.array([0.01, 0.02, 0.03, 0.04, 0.05])
    assert mc.holm(p) == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    assert mc.benjamini_hochberg(p) == pytest.approx([0.05] * 5)
    # BH never exceeds Holm, Holm never exceeds Bonferroni, all at least p
    rng = np.random.default_rng(0)
    q = rng.uniform(size=50) ** 3
    assert (mc.benjamini_hochberg(q) <= mc.holm(q) + 1e-15).all()
    assert (mc.holm(q) <= mc.bonferroni(q) + 1e-15).all()
    assert (mc.benjamini_hochberg(q) >= q - 1e-15).all()


def test_nan_is_not_a_member_and_ties_are_kept() -> None:
    p = [0.01, math.nan, 0.02]
    assert mc.bonferroni(p)[[0, 2]] == pytest.approx([0.02, 0.04])
    assert math.isnan(mc.holm(p)[1]) and math.isnan(mc.benjamini_hochberg(p)[1])
    assert mc.holm([0.02, 0.02]) == pytest.approx([0.04, 0.04])
    assert mc.holm([]).size == 0
    with pytest.raises(ValueError):
        mc.holm([1.5])


def test_levels_and_quantiles() -> None:
    assert mc.bonferroni_level(0.95, 18) == pytest.approx(1 - 0.05 / 18)
    low, high = mc.simultaneous_quantiles(0.95, 10)
    assert low == pytest.approx(0.0025) and high == pytest.approx(0.9975)
    assert mc.replicates_for(0.95, 10) == 4000
    assert mc.fcr_level(0.95, 3, 18) == pytest.approx(1 - 3 * 0.05 / 18)
    assert mc.fcr_level(0.95, 0, 18) == 1.0
    assert mc.sequence_alpha(0.05, 5) == pytest.approx(0.01)
    # the family's sequences are wider than one sequence at the same n
    assert sequential.half_width_factor(2000, mc.sequence_alpha(0.05, 5)) > sequential.half_width_factor(2000)


def test_percentile_intervals_at_the_family_level() -> None:
    reps = np.arange(1001, dtype=float)[:, None]  # quantile q is 1000 q exactly
    lo, hi = mc.percentile_intervals(reps, 0.95, m=5)
    assert lo[0] == pytest.approx(5.0) and hi[0] == pytest.approx(995.0)


def test_bootstrap_p_values_normal_and_inverted() -> None:
    rng = np.random.default_rng(1)
    reps = rng.normal(0.0, 1.0, size=(200, 1))
    sd = reps.std(ddof=1)
    p = mc.bootstrap_p_values(np.array([1.96 * sd]), reps)
    assert p[0] == pytest.approx(0.05, abs=1e-3)
    # inversion: all 200 replicates above zero -> the floor 2/201
    shifted = np.abs(reps) + 1
    assert mc.percentile_p_values(shifted)[0] == pytest.approx(2 / 201)
    # 10 of 200 at or below zero: 2 (1 + 10) / 201
    some = np.r_[-np.ones(10), np.ones(190)][:, None]
    assert mc.percentile_p_values(some)[0] == pytest.approx(22 / 201)


def test_holm_report_flags_and_never_contradicts_the_other_way() -> None:
    est = np.array([3.0, 2.6, 0.1, 2.45])
    se = np.ones(4)
    from scipy.stats import norm

    p = 2 * norm.sf(np.abs(est))
    report = mc.holm_report(est, se, p)
    # an interval off zero implies Holm rejects
    off = (report.low > 0) | (report.high < 0)
    assert (report.rejected[off]).all()
    assert report.rejected.tolist() == [True, True, False, True]
    # 2.45 sd: p = 0.0143 <= 0.05/2 at its step but above Bonferroni's 0.05/4: the flag
    assert report.interval_lags.tolist() == [False, False, False, True]
    assert report.step_level[0] == pytest.approx(1 - 0.05 / 4)


def test_fcr_intervals_exclude_zero_exactly_for_the_selected() -> None:
    from scipy.stats import norm

    est = np.array([4.0, 2.5, 2.2, 0.3, -0.5, 1.0])
    se = np.ones(6)
    p = 2 * norm.sf(np.abs(est))
    out = mc.bh_fcr_intervals(est, se, p)
    r = int(out.selected.sum())
    assert out.level == pytest.approx(1 - r * 0.05 / 6)
    sel = out.selected
    assert ((out.low[sel] > 0) | (out.high[sel] < 0)).all()
    assert np.isnan(out.low[~sel]).all()


def test_t_reference_agrees_between_p_values_and_intervals() -> None:
    from scipy.stats import t as student_t

    est = np.array([3.2, 2.9, 0.4, 2.5])
    se = np.ones(4)
    p = 2 * student_t.sf(np.abs(est), 20)
    report = mc.holm_report(est, se, p, df=20)
    off = (report.low > 0) | (report.high < 0)
    assert report.rejected[off].all()
    lo, hi = mc.normal_intervals(np.zeros(1), np.ones(1), 0.95, df=20)
    assert hi[0] == pytest.approx(float(student_t.ppf(0.975, 20))) and lo[0] == pytest.approx(-hi[0])
    out = mc.bh_fcr_intervals(est, se, p, df=20)
    assert ((out.low[out.selected] > 0) | (out.high[out.selected] < 0)).all()
