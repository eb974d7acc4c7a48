"""Family tests: the small-sample SEs and df against hand computations, the adjusted
p-values against brute-force step-down/step-up procedures, the intervals' agreement with the
decisions, the report's matrix layout, and one small simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from analytics.stats import family_tests as ft
from analytics.stats import multiplicity as mc
from analytics.stats import variance_reduction as vr
from bench.stats_validation import ARM_WEIGHTS, ARMS, PaperWorld, simulate, true_delta

# three installs, control and one arm, one rank: R_0 = 6/12 = 0.5, R_a = 6/10 = 0.6
UNITS = np.array([[4.0, 2], [6, 3], [2, 5]])
CLICKS = np.array([[[2.0], [1]], [[3], [1]], [[1], [4]]])


def _loo(units: np.ndarray, clicks: np.ndarray, g: int) -> tuple[float, float]:
    keep = np.arange(units.shape[0]) != g
    r0 = clicks[keep, 0, 0].sum() / units[keep, 0].sum()
    ra = clicks[keep, 1, 0].sum() / units[keep, 1].sum()
    return ra - r0, 1 - ra / r0


def test_estimates_and_jackknife_by_hand() -> None:
    inf = ft.gap_inference(UNITS, CLICKS, se="jackknife", df="installs")
    assert inf.estimate["delta"][1, 0] == pytest.approx(0.1)
    assert inf.estimate["beta"][1, 0] == pytest.approx(1 - 0.6 / 0.5)
    assert math.isnan(inf.estimate["delta"][0, 0]) and math.isnan(inf.se["beta"][0, 0])
    # leave install 0 out: 5/8 - 4/8; install 1: 5/7 - 3/6; install 2: 2/5 - 5/10
    loo = np.array([_loo(UNITS, CLICKS, g) for g in range(3)])
    assert loo[:, 0] == pytest.approx([0.125, 5 / 7 - 0.5, -0.1])
    for j, q in enumerate(ft.QUANTITIES):
        dev = loo[:, j] - loo[:, j].mean()
        assert inf.se[q][1, 0] == pytest.approx(math.sqrt(2 / 3 * (dev**2).sum()))
        assert inf.df[q][1, 0] == 2.0
    assert inf.installs == 3


def test_cr1_is_the_sandwich_and_cr2_scales_by_leverage() -> None:
    cr1 = ft.gap_inference(UNITS, CLICKS, se="cr1", df="installs")
    table = vr.adjusted_table(UNITS, CLICKS, np.array([1.0, 1.0]))
    assert cr1.se["delta"][1, 0] == pytest.approx(table.plain_se["delta"][1, 0])
    assert cr1.se["beta"][1, 0] == pytest.approx(table.plain_se["beta"][1, 0])
    cr2 = ft.gap_inference(UNITS, CLICKS, se="cr2", df="installs")
    n0, na, r0, ra = 12.0, 10.0, 0.5, 0.6
    score = [
        (CLICKS[g, 1, 0] - ra * UNITS[g, 1]) / (na * math.sqrt(1 - UNITS[g, 1] / na))
        - (CLICKS[g, 0, 0] - r0 * UNITS[g, 0]) / (n0 * math.sqrt(1 - UNITS[g, 0] / n0))
        for g in range(3)
    ]
    assert cr2.se["delta"][1, 0] == pytest.approx(math.sqrt(sum(s * s for s in score)))


def test_control_sums_give_the_reduced_estimates() -> None:
    rng = np.random.default_rng(2)
    units, clicks = simulate(rng, PaperWorld(installs=30, units_per_install=80.0))
    table = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
    cr1 = ft.gap_inference(units, clicks, se="cr1", control_sums=table.control_sums)
    for q in ft.QUANTITIES:
        np.testing.assert_allclose(cr1.estimate[q], table.adjusted[q], rtol=1e-12)
        np.testing.assert_allclose(cr1.se[q], table.adjusted_se[q], rtol=1e-10)
    # the jackknife of the reduced gap, install 0 left out by hand (control sums held)
    jk = ft.gap_inference(units, clicks, se="jackknife", control_sums=table.control_sums)
    k = table.control_sums["delta"][:, 1, 0]
    loo = []
    for g in range(units.shape[0]):
        keep = np.arange(units.shape[0]) != g
        r = clicks[keep].sum(axis=0)[:, 0] / units[keep].sum(axis=0)
        loo.append(r[1] - r[0] - k[keep].sum() / units[keep].sum())
    x = np.array(loo)
    assert jk.se["delta"][1, 0] == pytest.approx(
        math.sqrt((x.size - 1) / x.size * ((x - x.mean()) ** 2).sum())
    )


def test_bell_mccaffrey_df() -> None:
    rng = np.random.default_rng(3)
    units = np.full((6, 3), 20.0)  # equal installs: df = G - 1 exactly
    clicks = rng.binomial(20, 0.4, (6, 3, 2)).astype(float)
    for se in ("cr2", "jackknife", "cr1"):
        inf = ft.gap_inference(units, clicks, se=se, df="bell-mccaffrey")
        np.testing.assert_allclose(inf.df["delta"][1:], 5.0, rtol=1e-9)
        np.testing.assert_allclose(inf.df["beta"][1:], 5.0, rtol=1e-9)
    # one install with most units: few effective installs
    uneven = units.copy()
    uneven[0] *= 30
    clicks[0] *= 30
    inf = ft.gap_inference(uneven, clicks, df="bell-mccaffrey")
    assert (inf.df["delta"][1:] < 2.5).all() and (inf.df["delta"][1:] > 1.0).all()


@pytest.mark.parametrize("se", ["cr2", "jackknife"])
def test_bell_mccaffrey_df_against_the_matrix(se: str) -> None:
    """The closed form's df equals (tr M)^2 / ||M||_F^2 of the G x G matrix built
    explicitly, with and without slopes, for beta (unequal coefficients)."""
    rng = np.random.default_rng(7)
    units, clicks = simulate(rng, PaperWorld(installs=25, units_per_install=60.0))
    n = units.sum(axis=0)
    ratio = clicks.sum(axis=0) / n[:, None]
    h = units / n
    s = 1 / np.sqrt(1 - h) if se == "cr2" else 1 / (1 - h)
    c_arm, c_base = ft._coefficients(ratio, 0)["beta"]
    for slope in (None, np.full(ratio.shape, 0.05)):
        fast = ft._bm_df(units, n, ratio, s, (c_arm, c_base), 0, slope)
        for a, k in ((1, 0), (4, 2)):
            m = np.zeros((25, 25))
            for j, c, r in ((a, c_arm[a, k], 0.0 if slope is None else slope[a, k]), (0, c_base[a, k], 0.0)):
                u = units[:, j]
                var = ratio[j, k] * (1 - ratio[j, k]) * (u + r * u**2)
                inner = np.diag(var) - (np.outer(u, var) + np.outer(var, u)) / n[j]
                inner += np.outer(u, u) * var.sum() / n[j] ** 2
                alpha = c * s[:, j] / n[j]
                m += np.outer(alpha, alpha) * inner
            assert fast[a, k] == pytest.approx(np.trace(m) ** 2 / (m * m).sum(), rel=1e-9)
    inf = ft.gap_inference(units, clicks, se=se, df="bell-mccaffrey-slopes")
    plain_df = ft.gap_inference(units, clicks, se=se, df="bell-mccaffrey").df["delta"][1:]
    assert (inf.df["delta"][1:] <= plain_df + 1e-9).all()


def test_gap_slopes_find_the_spread_of_effects() -> None:
    """Installs' own gaps vary with a proportional effect (swap 1-3 at c1, beta the same
    for all, levels differ) and not where the arm does nothing."""
    rng = np.random.default_rng(8)
    units, clicks = simulate(rng, PaperWorld(installs=600, units_per_install=200.0))
    r = ft.gap_slopes(units, clicks)
    assert (r[0] == 0).all()
    spread = (0.27 / 0.43 * 0.2) ** 2 / (0.16 * 0.84)  # sd of gaps 0.27/0.43 x sd of c1 levels
    assert r[2, 0] == pytest.approx(spread, rel=0.35)
    assert r[6, 0] < 0.1 * spread  # hide_box: no effect at c1


def _holm_brute(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's procedure as written: test the sorted p_(k) at alpha/(m - k + 1), stop at the
    first failure."""
    order, m = np.argsort(p, kind="stable"), p.size
    out = np.zeros(m, dtype=bool)
    for k, i in enumerate(order):
        if p[i] > alpha / (m - k):
            break
        out[i] = True
    return out


def _bh_brute(p: np.ndarray, alpha: float) -> np.ndarray:
    """BH as written: the largest k with p_(k) <= k alpha / m; reject the k smallest."""
    order, m = np.argsort(p, kind="stable"), p.size
    passing = [k for k in range(1, m + 1) if p[order[k - 1]] <= k * alpha / m]
    out = np.zeros(m, dtype=bool)
    if passing:
        out[order[: max(passing)]] = True
    return out


def test_adjustments_match_the_procedures_as_written() -> None:
    rng = np.random.default_rng(4)
    for _ in range(200):
        m = int(rng.integers(1, 25))
        p = rng.uniform(size=m) ** 3
        p[rng.integers(0, m, m // 3)] = p[0]  # ties (never exactly at a threshold, where
        # m p and alpha / m can round apart)
        for alpha in (0.05, 0.1):
            np.testing.assert_array_equal(mc.holm(p) <= alpha, _holm_brute(p, alpha))
            np.testing.assert_array_equal(mc.benjamini_hochberg(p) <= alpha, _bh_brute(p, alpha))


def _report_matrix(units: np.ndarray, clicks: np.ndarray, blocks: list[int]) -> np.ndarray:
    """``figure3_arrays``' layout: per install, arm blocks of (units, c_1..c_k), arm a in
    block ``blocks[a]`` (one block left empty, as an arm with no rows)."""
    g, a, k = clicks.shape
    out = np.zeros((g, (a + 1) * (k + 1)))
    for arm, block in enumerate(blocks):
        out[:, block * (k + 1)] = units[:, arm]
        out[:, block * (k + 1) + 1 : (block + 1) * (k + 1)] = clicks[:, arm]
    return out


@pytest.fixture(scope="module")
def study() -> tuple[np.ndarray, dict[str, int], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    units, clicks = simulate(rng, PaperWorld())
    blocks = [3, 0, 1, 2, 4, 7, 5]  # control is block 3; block 6 has no arm
    per_install = _report_matrix(units, clicks, blocks)
    return per_install, {name: b for name, b in zip(ARMS, blocks, strict=True)}, units, clicks


FAMILY = [("delta", arm, r) for arm in ARMS[1:] for r in (1, 2, 3)]


def test_split_per_install_reads_the_blocks(study: tuple) -> None:
    per_install, index, units, clicks = study
    arms, u, y = ft.split_per_install(per_install, index, 7, "control")
    assert arms[0] == "control" and arms[1:] == sorted(ARMS[1:])
    order = [ARMS.index(a) for a in arms]
    np.testing.assert_array_equal(u, units[:, order])
    np.testing.assert_array_equal(y, clicks[:, order])
    with pytest.raises(ValueError):
        ft.split_per_install(per_install, index, 5, "control")
    with pytest.raises(ValueError):
        ft.split_per_install(per_install, index, 7, "nobody")


@pytest.mark.parametrize("method", ft.ADJUSTMENTS)
def test_family_tests_agree_with_their_parts(study: tuple, method: str) -> None:
    per_install, index, units, clicks = study
    out = ft.family_tests(per_install, index, 7, "control", FAMILY, method)
    inf = ft.gap_inference(units, clicks)
    p = np.array([t.p_value for t in out])
    for t in out:
        a = ARMS.index(t.arm)
        assert t.estimate == pytest.approx(inf.estimate[t.quantity][a, t.rank - 1])
        assert t.se == pytest.approx(inf.se[t.quantity][a, t.rank - 1])
        assert t.p_value == pytest.approx(2 * student_t.sf(abs(t.estimate / t.se), t.df))
        assert t.high - t.estimate == pytest.approx(student_t.isf(0.025, t.df) * t.se)
    adjust = {"holm": mc.holm, "bh": mc.benjamini_hochberg, "bonferroni": mc.bonferroni, "none": lambda x: x}
    np.testing.assert_allclose([t.adjusted_p for t in out], adjust[method](p))
    rejected = np.array([t.rejected for t in out])
    brute = {"holm": _holm_brute, "bh": _bh_brute}
    if method in brute:
        np.testing.assert_array_equal(rejected, brute[method](p, 0.05))
    low, high = np.array([t.family_low for t in out]), np.array([t.family_high for t in out])
    off = (low > 0) | (high < 0)
    if method == "bh":  # BY: the selected have intervals, and they exclude 0
        np.testing.assert_array_equal(np.isfinite(low), rejected)
        assert off[rejected].all()
        assert out[0].family_level == pytest.approx(1 - rejected.sum() * 0.05 / len(FAMILY))
    elif method == "none":
        np.testing.assert_array_equal(off, rejected)
        assert out[0].family_level == 0.95
    else:  # Bonferroni's intervals: off zero exactly when Bonferroni rejects
        np.testing.assert_array_equal(off, mc.bonferroni(p) <= 0.05)
        assert rejected[off].all()
        assert out[0].family_level == pytest.approx(1 - 0.05 / len(FAMILY))
    # the swap 1-2 effect at c1 is found whatever the method
    assert next(t for t in out if t.arm == "swap_1_2" and t.rank == 1).rejected


def test_family_members_and_nan(study: tuple) -> None:
    per_install, index, _, _ = study
    for bad in (
        [("delta", "control", 1)],
        [("gamma", "swap_1_2", 1)],
        [("delta", "swap_1_2", 0)],
        [("delta", "swap_1_2", 7)],
        [("delta", "swap_1_2", 1)] * 2,
    ):
        with pytest.raises(ValueError):
            ft.family_tests(per_install, index, 7, "control", bad)
    with pytest.raises(ValueError):
        ft.family_tests(per_install, index, 7, "control", FAMILY, "sidak")
    # an arm seen in one install only has no jackknife SE: not a member of the family's m
    thin = per_install.copy()
    block = index["hide_box"] * 7
    thin[1:, block : block + 7] = 0
    out = ft.family_tests(thin, index, 7, "control", FAMILY, "bonferroni")
    nan = [t for t in out if t.arm == "hide_box"]
    assert all(math.isnan(t.p_value) and not t.rejected for t in nan)
    assert out[0].family_level == pytest.approx(1 - 0.05 / (len(FAMILY) - 3))


def test_reduced_estimates(study: tuple) -> None:
    per_install, index, units, clicks = study
    weights = dict(zip(ARMS, ARM_WEIGHTS.tolist(), strict=True))
    out = ft.reduced_estimates(per_install, index, 7, weights, "control")
    table = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
    inf = ft.gap_inference(units, clicks, control_sums=table.control_sums)
    assert len(out) == 2 * 6 * 6
    for (q, arm, rank), (est, lo, hi) in out.items():
        a = ARMS.index(arm)
        assert est == pytest.approx(table.adjusted[q][a, rank - 1])
        half = student_t.isf(0.025, inf.df[q][a, rank - 1]) * inf.se[q][a, rank - 1]
        assert (lo, hi) == pytest.approx((est - half, est + half))
    # the weights in block order (the arms present, by their block) give the same
    by_block = sorted(index, key=index.__getitem__)
    same = ft.reduced_estimates(per_install, index, 7, [weights[a] for a in by_block], "control")
    assert same.keys() == out.keys()
    for key, values in out.items():
        assert same[key] == pytest.approx(values)
    with pytest.raises(ValueError):
        ft.reduced_estimates(per_install, index, 7, [1.0, 2.0], "control")


def test_small_simulation_levels_and_coverage() -> None:
    """A/A studies of 40 uneven installs: the unadjusted tests reject about 5% of the null
    gaps, and the reduced 95% intervals cover about 95% of the truths (planted)."""
    rng = np.random.default_rng(6)
    rejected, covered = [], []
    truth = true_delta(True)[1:, :3]
    for planted in (False, True):
        world = PaperWorld(installs=40, units_per_install=120.0, planted=planted)
        for _ in range(150):
            units, clicks = simulate(rng, world)
            if not planted:
                inf = ft.gap_inference(units, clicks)
                p = ft.t_p_values(inf.estimate["delta"], inf.se["delta"], inf.df["delta"])[1:, :3]
                rejected.append(p <= 0.05)
            else:
                table = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
                red = ft.gap_inference(units, clicks, control_sums=table.control_sums)
                lo, hi = mc.normal_intervals(red.estimate["delta"], red.se["delta"], 0.95, 1, red.df["delta"])
                covered.append((lo[1:, :3] <= truth) & (truth <= hi[1:, :3]))
    assert 0.035 <= np.mean(rejected) <= 0.065
    assert 0.935 <= np.mean(covered) <= 0.965
