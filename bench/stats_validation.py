"""Validation by simulation of issue 38's statistics: multiplicity, variance reduction and
the planner, in the paper's world.

Run: ``python -m bench.stats_validation --studies 500`` (A/A and planted studies each,
plus the planner's three sizes). Figures in ``bench/README.md`` ("Issue 38").

The world (``PaperWorld``): installs with their own c1 propensity (Beta with mean 0.43 and
concentration ``kappa``; c2..c6 share the rest in fixed proportions, means 0.17, 0.10,
0.07, 0.05, 0.04), Gamma activity (coefficient of variation ``activity_cv``) and Poisson
click units; every unit's arm drawn with the registered weights (control 4, six arms 1
each: per-query randomisation, queries independent); every unit clicks one of c1..c6 or
elsewhere. Planted effects are multiplicative per install (the distortion beta is the same
for every install, so installs' gaps differ, as when a swap moves a share of each person's
clicks): swap 1-2 delta1 -0.19 and delta2 +0.08, swap 1-3 delta1 -0.27 and delta3 +0.08,
swap 2-3 delta2 -0.06 and delta3 +0.03, hide ads/box delta2 +0.03, hide ads/box + swap 1-2
as swap 1-2, hide box none. The truths are (k - 1) x mean CTR (activity independent of the
propensity). A/A studies: no effect anywhere.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.stats import t as student_t

from analytics.stats import family_tests, multiplicity, planner
from analytics.stats import variance_reduction as vr

ARMS = ("control", "swap_1_2", "swap_1_3", "swap_2_3", "hide_ads_box", "hide_ads_box_swap_1_2", "hide_box")
ARM_WEIGHTS = np.array([4.0, 1, 1, 1, 1, 1, 1])
MEAN_CTR = np.array([0.43, 0.17, 0.10, 0.07, 0.05, 0.04])
PLANTED_DELTA = {  # arm -> gaps at c1, c2, c3
    "swap_1_2": (-0.19, 0.08, 0.0),
    "swap_1_3": (-0.27, 0.0, 0.08),
    "swap_2_3": (0.0, -0.06, 0.03),
    "hide_ads_box": (0.0, 0.03, 0.0),
    "hide_ads_box_swap_1_2": (-0.19, 0.08, 0.0),
    "hide_box": (0.0, 0.0, 0.0),
}
FAMILY_RANKS = 3
"""The declared family: delta at c1..c3 of the six arms against control (18 hypotheses)."""
REPLICATES = 200
RANKS = MEAN_CTR.size


@dataclass(frozen=True)
class PaperWorld:
    installs: int = planner.PAPER_INSTALLS
    units_per_install: float = planner.PAPER_CLICKS / planner.PAPER_INSTALLS
    kappa: float = 0.43 * 0.57 / planner.PAPER_CTR_SD**2 - 1  # Beta concentration: sd 0.2 at 0.43
    activity_cv: float = 1.0
    planted: bool = True

    @property
    def ctr_sd(self) -> float:
        return math.sqrt(0.43 * 0.57 / (self.kappa + 1))


def factors(planted: bool) -> np.ndarray:
    """Level factors k [arm, rank]: CTR_ar = k_ar CTR_0r for every install."""
    k = np.ones((len(ARMS), RANKS))
    if planted:
        for a, name in enumerate(ARMS[1:], start=1):
            for r, d in enumerate(PLANTED_DELTA[name]):
                k[a, r] = (MEAN_CTR[r] + d) / MEAN_CTR[r]
    return k


def true_delta(planted: bool) -> np.ndarray:
    """[arm, rank]: (k - 1) x mean control CTR (NaN for control)."""
    out = (factors(planted) - 1) * MEAN_CTR[None, :]
    out[0] = np.nan
    return out


def simulate(rng: np.random.Generator, world: PaperWorld) -> tuple[np.ndarray, np.ndarray]:
    """One study's per-install counts: units [install, arm], clicks [install, arm, rank]."""
    n_i = world.installs
    p1 = rng.beta(0.43 * world.kappa, 0.57 * world.kappa, n_i)
    control = np.empty((n_i, RANKS))
    control[:, 0] = p1
    control[:, 1:] = (1 - p1)[:, None] * (MEAN_CTR[1:] / 0.57)[None, :]
    probs = factors(world.planted)[None] * control[:, None, :]  # [install, arm, rank]
    other = 1 - probs.sum(axis=2, keepdims=True)
    shape = 1 / world.activity_cv**2
    activity = rng.gamma(shape, 1 / shape, n_i) if world.activity_cv > 0 else np.ones(n_i)
    n = rng.poisson(world.units_per_install * activity)
    units = rng.multinomial(n, ARM_WEIGHTS / ARM_WEIGHTS.sum())
    clicks = rng.multinomial(units, np.concatenate([probs, np.clip(other, 0, 1)], axis=2))[:, :, :RANKS]
    return units.astype(np.float64), clicks.astype(np.float64)


WEBB = np.sqrt(np.array([0.5, 1.0, 1.5]))


def wild_p_values(
    units: np.ndarray,
    clicks: np.ndarray,
    rng: np.random.Generator,
    replicates: int = 9999,
    kind: str = "rademacher",
) -> np.ndarray:
    """Restricted wild cluster bootstrap-t (WCR; Cameron, Gelbach & Miller 2008) p-values
    [arm, rank] for H0: delta = 0 of every arm against control, studentised by the CR1
    sandwich. Under H0 both arms share the pooled ratio R~; each replicate multiplies
    install g's restricted residual sums in both arms by one weight w_g (Rademacher, or
    Webb's six points) and refits. Every replicate's estimate and CR1 variance are
    matrix products of the weights with per-install columns (the variance expanded as a
    quadratic in w), so 9,999 replicates cost a few products. p = (1 + #{|t*| >= |t|}) /
    (B + 1)."""
    u, y = units, clicks
    g_n = u.shape[0]
    n = u.sum(axis=0)
    # the observed t, CR1
    obs = family_tests.gap_inference(u, y, se="cr1")
    t_obs = np.abs(obs.estimate["delta"] / obs.se["delta"])  # [arm, rank]
    r_null = (y.sum(axis=0) + y[:, 0].sum(axis=0)[None]) / (n + n[0])[:, None]  # [arm, rank]
    p_a = (y - r_null[None] * u[:, :, None]) / n[None, :, None]
    p_0 = (y[:, :1] - r_null[None] * u[:, :1, None]) / n[0]
    d = p_a - p_0
    h_a, h_0 = (u / n[None])[:, :, None], (u[:, :1] / n[0])[:, :, None]
    cols = np.concatenate([x.reshape(g_n, -1) for x in (p_a, p_0, d * h_a, d * h_0)], axis=1)
    if kind == "rademacher":
        w = rng.integers(0, 2, (replicates, g_n)) * 2.0 - 1
    else:
        w = WEBB[rng.integers(0, 3, (replicates, g_n))] * (rng.integers(0, 2, (replicates, g_n)) * 2.0 - 1)
    prod = (w @ cols).reshape(replicates, 4, *d.shape[1:])
    m_a, m_0, w_da, w_d0 = prod[:, 0], prod[:, 1], prod[:, 2], prod[:, 3]
    w2d2 = ((w**2) @ (d**2).reshape(g_n, -1)).reshape(replicates, *d.shape[1:])
    var = (
        w2d2
        - 2 * m_a * w_da
        + 2 * m_0 * w_d0
        + m_a**2 * (h_a**2).sum(0)
        - 2 * m_a * m_0 * (h_a * h_0).sum(0)
        + m_0**2 * (h_0**2).sum(0)
    ) * (g_n / (g_n - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        t_star = np.abs(m_a - m_0) / np.sqrt(var)
    p = (1 + (t_star >= t_obs[None]).sum(axis=0)) / (replicates + 1)
    p[0] = np.nan
    return p


def bootstrap_t_p_values(units: np.ndarray, clicks: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Bootstrap-t p-values [arm, rank] for delta = 0 from the service's Poisson replicates
    (weights [install, replicate]): t*_b = (delta*_b - delta) / SE*_b, SE*_b the CR1
    sandwich of replicate b (installs weighted by W_gb, G*_b those with W > 0);
    p = (1 + #{|t*| >= |t|}) / (B + 1), at least 2/(B + 1)... 1/(B + 1) with 200."""
    u, y = units, clicks
    obs = family_tests.gap_inference(u, y, se="cr1")
    t_obs = np.abs(obs.estimate["delta"] / obs.se["delta"])
    w = weights.T[:, :, None]  # [replicate, install, 1]
    wu, wy = w * u[None], w[..., None] * y[None]  # [B, G, A], [B, G, A, K]
    n_star = wu.sum(axis=1)  # [B, A]
    with np.errstate(invalid="ignore", divide="ignore"):
        r_star = wy.sum(axis=1) / n_star[:, :, None]  # [B, A, K]
        e = (wy - r_star[:, None] * wu[..., None]) / n_star[:, None, :, None]
        score = e - e[:, :, :1]
        g_star = (weights > 0).sum(axis=0)[:, None, None]  # [B, 1, 1]
        se_star = np.sqrt((score**2).sum(axis=1) * g_star / (g_star - 1))
        t_star = np.abs((r_star - r_star[:, :1]) - obs.estimate["delta"][None]) / se_star
    p = (1 + (t_star >= t_obs[None]).sum(axis=0)) / (weights.shape[1] + 1)
    p[0] = np.nan
    return p


@dataclass
class Rates:
    """One p-value method's decisions over studies."""

    any_holm: list[bool] = field(default_factory=list)
    any_bh: list[bool] = field(default_factory=list)
    fdp_bh: list[float] = field(default_factory=list)
    power_holm: list[float] = field(default_factory=list)
    power_bh: list[float] = field(default_factory=list)

    def add(self, p: np.ndarray, null: np.ndarray, alpha: float) -> None:
        holm = multiplicity.holm(p) <= alpha
        bh = multiplicity.benjamini_hochberg(p) <= alpha
        self.any_holm.append(bool((holm & null).any()))
        self.any_bh.append(bool((bh & null).any()))
        self.fdp_bh.append(float((bh & null).sum() / max(int(bh.sum()), 1)))
        if (~null).any():
            self.power_holm.append(float(holm[~null].mean()))
            self.power_bh.append(float(bh[~null].mean()))


@dataclass
class Tally:
    """Per-study results gathered over studies."""

    any_unadjusted: list[bool] = field(default_factory=list)
    any_bonferroni: list[bool] = field(default_factory=list)
    any_holm: list[bool] = field(default_factory=list)
    any_bh: list[bool] = field(default_factory=list)
    fdp_bh: list[float] = field(default_factory=list)
    fdp_unadjusted: list[float] = field(default_factory=list)
    power_holm: list[float] = field(default_factory=list)
    any_holm_vr: list[bool] = field(default_factory=list)
    fdp_bh_vr: list[float] = field(default_factory=list)
    power_bh: list[float] = field(default_factory=list)
    covered: dict[str, list[np.ndarray]] = field(default_factory=dict)
    width: dict[str, list[np.ndarray]] = field(default_factory=dict)
    rates: dict[str, Rates] = field(default_factory=dict)

    def add(self, name: str, covered: np.ndarray, width: np.ndarray) -> None:
        self.covered.setdefault(name, []).append(covered)
        self.width.setdefault(name, []).append(width)


def run_study(
    rng: np.random.Generator,
    world: PaperWorld,
    tally: Tally,
    alpha: float = 0.05,
    t_reference: bool = True,
    aux: np.random.Generator | None = None,
) -> None:
    """One study into ``tally``. ``aux``: the wild bootstrap's weights come from it (not from
    ``rng``, so the simulated studies do not depend on which alternatives are measured)."""
    units, clicks = simulate(rng, world)
    keys = rng.integers(0, 2**63, world.installs, dtype=np.int64).astype(np.uint64)
    w = vr.install_weight_rows(keys, REPLICATES, 0)
    table = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
    plain, adjusted = vr.replicates(units, clicks, w, table)
    cuped = vr.replicates(
        units, clicks, w, vr.adjusted_table(units, clicks, ARM_WEIGHTS, theta="regression")
    )[1]
    within = vr.within_install_gap(units, clicks)
    within_reps = vr.within_install_replicates(units, clicks, w)
    truth = true_delta(world.planted)[1:, :FAMILY_RANKS]  # [6, 3]
    fam = (slice(1, None), slice(0, FAMILY_RANKS))

    # the family's p-values by the report's method (``family_tests``' defaults: leave-one-
    # install-out jackknife SE, Bell-McCaffrey df) and decisions
    chosen = family_tests.gap_inference(units, clicks)
    reduced = family_tests.gap_inference(units, clicks, control_sums=table.control_sums)
    p = family_tests.t_p_values(chosen.estimate["delta"], chosen.se["delta"], chosen.df["delta"])[fam].ravel()
    null = (truth == 0).ravel()
    reject = {
        "unadjusted": p <= alpha,
        "bonferroni": multiplicity.bonferroni(p) <= alpha,
        "holm": multiplicity.holm(p) <= alpha,
        "bh": multiplicity.benjamini_hochberg(p) <= alpha,
    }
    tally.any_unadjusted.append(bool((reject["unadjusted"] & null).any()))
    tally.any_bonferroni.append(bool((reject["bonferroni"] & null).any()))
    tally.any_holm.append(bool((reject["holm"] & null).any()))
    tally.any_bh.append(bool((reject["bh"] & null).any()))
    for name, target in (("bh", tally.fdp_bh), ("unadjusted", tally.fdp_unadjusted)):
        r = reject[name]
        target.append(float((r & null).sum() / max(int(r.sum()), 1)))
    if (~null).any():
        tally.power_holm.append(float(reject["holm"][~null].mean()))
        tally.power_bh.append(float(reject["bh"][~null].mean()))
    # the same family on the variance-reduced estimates, by the same method
    p_vr = family_tests.t_p_values(reduced.estimate["delta"], reduced.se["delta"], reduced.df["delta"])[
        fam
    ].ravel()
    tally.any_holm_vr.append(bool(((multiplicity.holm(p_vr) <= alpha) & null).any()))
    r_vr = multiplicity.benjamini_hochberg(p_vr) <= alpha
    tally.fdp_bh_vr.append(float((r_vr & null).sum() / max(int(r_vr.sum()), 1)))

    # the alternatives, on the same studies: p-values for the family, and the intervals
    # (plain and variance-reduced) each SE method gives
    # before issue 38's revision: the plain bootstrap SE (the service's replicates), and the
    # variance-reduced sandwich, with t(N - 1)
    est = table.plain["delta"][fam].ravel()
    reps = plain["delta"][(slice(None), *fam)].reshape(REPLICATES, -1)
    df_before = world.installs - 1 if t_reference else None
    t_vr = np.abs(table.adjusted["delta"][fam] / table.adjusted_se["delta"][fam]).ravel()
    alternatives = {
        f"plain bootstrap SE, t({world.installs - 1}) (before)": multiplicity.bootstrap_p_values(
            est, reps, df=df_before
        ),
        f"variance-reduced sandwich, t({world.installs - 1})": 2 * student_t.sf(t_vr, world.installs - 1),
    }
    df_label = {
        "installs": "t(G-1)",
        "bell-mccaffrey": "Bell-McCaffrey df",
        "bell-mccaffrey-slopes": "BM df, slopes",
    }
    for se in family_tests.SE_METHODS:
        for df_name in family_tests.DF_METHODS:
            inf = family_tests.gap_inference(units, clicks, se=se, df=df_name)
            red = family_tests.gap_inference(
                units, clicks, se=se, df=df_name, control_sums=table.control_sums
            )
            label = f"{se}, {df_label[df_name]}"
            alternatives[label] = family_tests.t_p_values(
                inf.estimate["delta"], inf.se["delta"], inf.df["delta"]
            )[fam].ravel()
            for kind, res in (("plain", inf), ("reduced", red)):
                half = (student_t.isf(0.025, res.df["delta"]) * res.se["delta"])[fam]
                mid = res.estimate["delta"][fam]
                tally.add(f"{kind} {label}", (mid - half <= truth) & (truth <= mid + half), 2 * half)
    if aux is not None:
        for kind in ("rademacher", "webb"):
            alternatives[f"wild bootstrap-t, null imposed, {kind}"] = wild_p_values(
                units, clicks, aux, kind=kind
            )[fam].ravel()
        alternatives["Poisson bootstrap-t, 200 replicates"] = bootstrap_t_p_values(units, clicks, w)[
            fam
        ].ravel()
    for name, p_alt in alternatives.items():
        tally.rates.setdefault(name, Rates()).add(p_alt, null, alpha)

    # intervals for the family's gaps, the truth inside or not
    def percentile(replicas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        flat = replicas[(slice(None), *fam)].reshape(REPLICATES, -1)
        lo, hi = multiplicity.percentile_intervals(flat, 0.95)
        return lo.reshape(truth.shape), hi.reshape(truth.shape)

    def weibull(replicas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Percentiles at (B + 1) q (numpy's "weibull"): with 200 replicates the service's
        linear rule puts the 2.5% quantile at order statistic 5.975 of 200, an expected
        2.97% tail, so its nominal 95% interval covers ~94% even when the bootstrap
        distribution is exact; (B + 1) q puts it at 2.5%."""
        flat = replicas[(slice(None), *fam)].reshape(REPLICATES, -1)
        lo, hi = np.nanquantile(flat, [0.025, 0.975], axis=0, method="weibull")
        return lo.reshape(truth.shape), hi.reshape(truth.shape)

    z = 1.959963984540054
    t_n = float(student_t.ppf(0.975, world.installs - 1))
    intervals = {
        "plain bootstrap": percentile(plain["delta"]),
        "adjusted bootstrap": percentile(adjusted["delta"]),
        "CUPED-regression bootstrap": percentile(cuped["delta"]),
        "plain bootstrap, (B+1)q quantiles": weibull(plain["delta"]),
        "adjusted bootstrap, (B+1)q quantiles": weibull(adjusted["delta"]),
        "within-install bootstrap": percentile(within_reps),
        "plain sandwich": (
            table.plain["delta"][fam] - z * table.plain_se["delta"][fam],
            table.plain["delta"][fam] + z * table.plain_se["delta"][fam],
        ),
        "adjusted sandwich": (
            table.adjusted["delta"][fam] - z * table.adjusted_se["delta"][fam],
            table.adjusted["delta"][fam] + z * table.adjusted_se["delta"][fam],
        ),
        "adjusted sandwich, t(N-1)": (
            table.adjusted["delta"][fam] - t_n * table.adjusted_se["delta"][fam],
            table.adjusted["delta"][fam] + t_n * table.adjusted_se["delta"][fam],
        ),
        "within-install sandwich": (
            within.delta[fam] - z * within.delta_se[fam],
            within.delta[fam] + z * within.delta_se[fam],
        ),
    }
    for name, (lo, hi) in intervals.items():
        tally.add(name, (lo <= truth) & (truth <= hi), hi - lo)
    # beta_1 of swap_1_2 (truth 1 - k)
    beta_truth = 1 - factors(world.planted)[1, 0]
    for name, res in (
        ("beta1 swap_1_2 plain, jackknife", chosen),
        ("beta1 swap_1_2 reduced, jackknife", reduced),
    ):
        lo_b, hi_b = multiplicity.normal_intervals(
            res.estimate["beta"][1:2, 0], res.se["beta"][1:2, 0], 0.95, 1, res.df["beta"][1:2, 0]
        )
        tally.add(name, (lo_b <= beta_truth) & (beta_truth <= hi_b), hi_b - lo_b)
    for name, reps_b in (
        ("beta1 swap_1_2 plain", plain["beta"]),
        ("beta1 swap_1_2 adjusted", adjusted["beta"]),
    ):
        lo, hi = multiplicity.percentile_intervals(reps_b[:, 1, :1], 0.95)
        tally.add(name, np.array([lo[0] <= beta_truth <= hi[0]]), hi - lo)


def summarise(label: str, tally: Tally, studies: int) -> list[str]:
    def share(values: list[bool] | list[float]) -> str:
        m = float(np.mean(values))
        return f"{m:.3f} (MC sd {math.sqrt(max(m * (1 - m), 1e-12) / studies):.3f})"

    lines = [
        f"== {label}: {studies} studies; family p-values: {family_tests.SE} SE, {family_tests.DF} df "
        "(MC sd of an FDR: at most the one shown)"
    ]
    lines.append(f"family-wise error over true nulls: unadjusted {share(tally.any_unadjusted)}")
    lines.append(
        f"  Bonferroni {share(tally.any_bonferroni)}, Holm {share(tally.any_holm)}, BH {share(tally.any_bh)}"
    )
    lines.append(
        f"false discovery rate: BH {np.mean(tally.fdp_bh):.3f}, "
        f"unadjusted {np.mean(tally.fdp_unadjusted):.3f}"
    )
    lines.append(
        f"on the variance-reduced estimates, same method: Holm FWER {share(tally.any_holm_vr)}, "
        f"BH FDR {np.mean(tally.fdp_bh_vr):.3f}"
    )
    if tally.power_holm:
        lines.append(
            f"power (share of non-nulls found): Holm {np.mean(tally.power_holm):.3f}, "
            f"BH {np.mean(tally.power_bh):.3f}"
        )
    lines.append("alternatives: Holm FWER, BH FWER, BH FDR; power Holm, BH")
    for name, rates in tally.rates.items():
        line = f"  {name}: {share(rates.any_holm)}, {share(rates.any_bh)}, {share(rates.fdp_bh)}" + (
            f"; {np.mean(rates.power_holm):.3f}, {np.mean(rates.power_bh):.3f}" if rates.power_holm else ""
        )
        lines.append(line)
    for name, cov in tally.covered.items():
        c = np.array(cov)  # [study, ...]
        pooled = c.mean()
        line = f"coverage {name}: pooled {pooled:.3f}"
        if c.ndim == 3:
            line += f", swap_1_2 delta1 {c[:, 0, 0].mean():.3f}"
        lines.append(line)
    plain_w = np.array(tally.width["plain bootstrap"])
    for name in (
        "adjusted bootstrap",
        "CUPED-regression bootstrap",
        "within-install bootstrap",
        "adjusted sandwich",
    ):
        ratio = np.array(tally.width[name]) / plain_w
        lines.append(
            f"median width ratio {name} / plain bootstrap: swap_1_2 delta1 {np.median(ratio[:, 0, 0]):.3f}, "
            f"all 18 gaps {np.median(ratio):.3f}"
        )
    bw = np.array(tally.width["beta1 swap_1_2 adjusted"]) / np.array(tally.width["beta1 swap_1_2 plain"])
    lines.append(f"median width ratio beta1 swap_1_2 adjusted / plain: {np.median(bw):.3f}")
    chosen = "jackknife, BM df, slopes"
    ratio = np.array(tally.width[f"reduced {chosen}"]) / np.array(tally.width[f"plain {chosen}"])
    bj = np.array(tally.width["beta1 swap_1_2 reduced, jackknife"]) / np.array(
        tally.width["beta1 swap_1_2 plain, jackknife"]
    )
    lines.append(
        f"median width ratio reduced / plain, {chosen}: swap_1_2 delta1 {np.median(ratio[:, 0, 0]):.3f}, "
        f"all 18 gaps {np.median(ratio):.3f}, beta1 swap_1_2 {np.median(bj):.3f}"
    )
    return lines


PLANNER_SIZES = ((85, 537.0), (300, 200.0), (1000, 60.0))
"""(installs, units per install): the paper's study, and two others of about the same
click count spread over more installs (the planner's inverse trades them)."""


def planner_check(rng: np.random.Generator, studies: int, world: PaperWorld) -> list[str]:
    """Predicted against simulated median half-width of swap_1_2's delta1 (plain and adjusted
    bootstrap), at three study sizes."""
    lines = ["== planner: swap_1_2 delta1, predicted / simulated median half-width"]
    for installs, per in PLANNER_SIZES:
        w_sim = replace(world, installs=installs, units_per_install=per)
        half: dict[str, list[float]] = {"plain": [], "adjusted": []}
        for _ in range(studies):
            units, clicks = simulate(rng, w_sim)
            keys = rng.integers(0, 2**63, installs, dtype=np.int64).astype(np.uint64)
            wts = vr.install_weight_rows(keys, REPLICATES, 0)
            table = vr.adjusted_table(units, clicks, ARM_WEIGHTS)
            plain, adjusted = vr.replicates(units, clicks, wts, table)
            for name, reps in (("plain", plain), ("adjusted", adjusted)):
                lo, hi = multiplicity.percentile_intervals(reps["delta"][:, 1, :1], 0.95)
                half[name].append(float(hi[0] - lo[0]) / 2)
        kbar = float((ARM_WEIGHTS * factors(world.planted)[:, 0]).sum() / ARM_WEIGHTS.sum())
        plan = planner.World(
            installs=installs,
            days=1.0,
            clicks_per_day=per,
            ctr=0.43,
            delta=float(true_delta(world.planted)[1, 0]),
            ctr_sd=world.ctr_sd,
            activity_cv=world.activity_cv,
            pooled_factor=kbar,
        )
        parts = []
        for name, adjusted_flag in (("plain", False), ("adjusted", True)):
            predicted = planner.half_width(plan, "delta", adjusted_flag)
            simulated = float(np.median(half[name]))
            parts.append(f"{name} {predicted:.4f} / {simulated:.4f} ({predicted / simulated - 1:+.1%})")
        lines.append(f"  {installs} installs x {per:.0f} units: " + "; ".join(parts))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=500, help="A/A and planted studies each")
    parser.add_argument("--planner-studies", type=int, default=200, help="studies per planner size")
    parser.add_argument(
        "--kappa", type=float, default=PaperWorld().kappa, help="Beta concentration of c1 propensity"
    )
    parser.add_argument("--activity-cv", type=float, default=1.0)
    parser.add_argument("--installs", type=int, default=planner.PAPER_INSTALLS)
    parser.add_argument(
        "--units", type=float, default=PaperWorld().units_per_install, help="units per install"
    )
    parser.add_argument("--skip-planner", action="store_true")
    parser.add_argument("--seed", type=int, default=38)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    world = PaperWorld(
        installs=args.installs, units_per_install=args.units, kappa=args.kappa, activity_cv=args.activity_cv
    )
    aux = np.random.default_rng([args.seed, 1])
    start = time.perf_counter()
    print(
        f"stats_validation {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC: {world.installs} installs, "
        f"{world.units_per_install:.0f} units each on average, c1 propensity sd {world.ctr_sd:.3f} "
        f"(kappa {world.kappa:.2f}, ICC {1 / (world.kappa + 1):.3f}), activity cv {world.activity_cv}",
        file=sys.stderr,
    )
    for label, planted in (("A/A", False), ("planted", True)):
        tally = Tally()
        w = replace(world, planted=planted)
        for _ in range(args.studies):
            run_study(rng, w, tally, aux=aux)
        for line in summarise(label, tally, args.studies):
            print(line, file=sys.stderr)
    if not args.skip_planner:
        for line in planner_check(rng, args.planner_studies, world):
            print(line, file=sys.stderr)
    print(f"took {time.perf_counter() - start:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
