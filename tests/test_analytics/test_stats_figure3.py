from __future__ import annotations

import numpy as np
import pytest

from analytics.stats.arrangement_table import InstallArmCounts, figure3


def simulate(n_installs: int, seed: int) -> list[InstallArmCounts]:
    """Installs with their own click propensity; swap_1_2 moves 0.19 from c1 to c2."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_installs):
        tilt = rng.normal(0, 0.05)
        for arm, c1 in (("control", 0.43), ("swap_1_2", 0.24)):
            units = int(rng.integers(5, 30))
            p1 = float(np.clip(c1 + tilt, 0.01, 0.95))
            c1_clicks = rng.binomial(units, p1)
            c2_clicks = rng.binomial(units - c1_clicks, 0.3)
            rows.append(InstallArmCounts(f"i{i}", arm, units, [c1_clicks, c2_clicks]))
    return rows


def test_planted_gap_lies_inside_its_interval() -> None:
    table = {r.arm: r for r in figure3(simulate(800, seed=1), ranks=2, seed=3)}
    control, swap = table["control"], table["swap_1_2"]
    assert control.ctr[0].ci_low < 0.43 < control.ctr[0].ci_high
    delta = swap.delta[0]
    assert delta.ci_low < -0.19 < delta.ci_high
    assert delta.ci_low < delta.value < delta.ci_high
    beta = swap.beta[0]
    assert beta.ci_low < 0.19 / 0.43 < beta.ci_high
    assert not control.delta  # control has no gap against itself


def test_interval_width_shrinks_like_one_over_sqrt_n() -> None:
    """Four times the installs, half the width: averaged over eight simulated studies, since
    one pair's ratio varies by about +-0.25 (a width is itself an estimate)."""

    def width(installs: int, seed: int) -> float:
        t = {r.arm: r for r in figure3(simulate(installs, seed=seed), ranks=1, seed=2)}
        return t["swap_1_2"].delta[0].ci_high - t["swap_1_2"].delta[0].ci_low

    ratios = [width(400, 5 + 2 * s) / width(1600, 6 + 2 * s) for s in range(8)]
    assert float(np.mean(ratios)) == pytest.approx(2.0, rel=0.1)


def test_missing_arm_gives_nan_not_a_crash() -> None:
    rows = [InstallArmCounts("a", "swap_1_2", 3, [1])]
    (only,) = figure3(rows, ranks=1)
    assert only.arm == "swap_1_2" and only.delta == [] and only.ctr[0].value == pytest.approx(1 / 3)


def test_bounds_of_columns_without_a_finite_replicate_are_nan_without_a_warning() -> None:
    import warnings

    import numpy as np

    from analytics.stats.arrangement_table import _bootstrap_bounds

    reps = np.random.default_rng(0).random((200, 3))
    for nan_columns in ([1], [0, 1, 2]):
        boot = reps.copy()
        boot[:, nan_columns] = np.nan
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            found = _bootstrap_bounds({"control": boot}, "control", 0.95)[("ctr", "control")]
        assert [np.isnan(low) and np.isnan(high) for low, high in found] == [
            i in nan_columns for i in range(3)
        ]
        finite = [i for i in range(3) if i not in nan_columns]
        want = np.quantile(reps[:, finite], [0.025, 0.975], axis=0)
        for i, low, high in zip(finite, *want, strict=True):
            assert found[i] == pytest.approx((low, high), rel=1e-12)


def test_finite_quantiles_are_numpys_nanquantile_exactly() -> None:
    """Columns with no NaN, some, all but one and all; 200 replicates and a few."""
    import numpy as np

    from analytics.stats.arrangement_table import finite_quantiles

    rng = np.random.default_rng(9)
    for rows in (200, 7, 2, 1):
        values = rng.random((rows, 400))
        values[:, 100:200][rng.random((rows, 100)) < 0.3] = np.nan
        values[1:, 200:250] = np.nan  # one finite value
        values[:, 250:260] = np.nan  # none
        values[:, 300:] = np.round(values[:, 300:], 1)  # ties
        want = np.full((2, 400), np.nan)
        some = ~np.isnan(values).all(axis=0)
        want[:, some] = np.nanquantile(values[:, some], [0.025, 0.975], axis=0)
        got = finite_quantiles(values, (0.025, 0.975))
        assert np.array_equal(got, want, equal_nan=True), rows
        clean = values[:, :100]  # and what np.quantile gives without NaNs
        assert np.array_equal(
            finite_quantiles(clean, (0.025, 0.975)), np.quantile(clean, [0.025, 0.975], axis=0)
        )
