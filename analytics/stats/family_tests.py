"""Small-sample inference for Figure 3's gaps and distortions, and the tests of a declared
family of them (issue 38).

A report's family of gaps (delta, beta of some arms at some ranks, against the baseline)
is tested with one p-value per member and one of ``multiplicity``'s adjustments. With the
paper's 85 installs of very uneven size, a standard error estimated from the installs
(the bootstrap's or the sandwich's) is too small and too variable for the tails the family
looks at (0.05/18 for Holm's first step): over 500 A/A studies Holm's family-wise error
was 0.062, and 0.080 with planted effects (``bench/README.md``, "Issue 38"). The functions
here use a standard error and reference distribution that hold at that size: which one,
and the measured alternatives, in ``SE_METHODS`` and ``bench/README.md``.

Every statistic is a smooth function of the two arms' pooled ratios
R_b = sum_g y_gb / sum_g n_gb over installs g (units n, clicks y at one rank):
delta = R_a - R_0 and beta = 1 - R_a / R_0. R_b is exactly the least-squares coefficient of
arm b in the per-query regression of "clicked" on the arm dummies, so the small-sample
corrections of cluster-robust regression apply with per-install sums alone: install g's
leverage in arm b is h_gb = n_gb / N_b, its residual sum e_gb = y_gb - R_b n_gb.

Input everywhere: units [install, arm] and clicks [install, arm, rank], or the report's
per-install matrix (``figure3_arrays``: [install, arm x (units, c_1..c_k)], arm-major).
Pure numpy, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from analytics.stats import multiplicity
from analytics.stats import variance_reduction as vr

QUANTITIES = ("delta", "beta")
ADJUSTMENTS = ("holm", "bh", "bonferroni", "none")
SE_METHODS = ("cr1", "cr2", "jackknife")
"""cr1: the sandwich, sum of squared install scores x G/(G - 1) (``adjusted_table``'s SE);
cr2: Bell & McCaffrey's bias-reduced sandwich, each residual sum scaled by
(1 - h_gb)^(-1/2); jackknife: leave one install out, (G - 1)/G x sum of squared deviations
of the G estimates (for a gap, CR3's residual scaling 1/(1 - h_gb), centred)."""
DF_METHODS = ("installs", "bell-mccaffrey", "bell-mccaffrey-slopes")
"""installs: Student's t with G - 1 degrees of freedom; bell-mccaffrey: Satterthwaite's
df of the variance estimate under a working model of independent queries (``_bm_df``);
bell-mccaffrey-slopes: the same with installs' own gaps varying, their variance estimated
from the data (``gap_slopes``)."""

SE = "jackknife"
"""The standard error ``family_tests`` and ``reduced_estimates`` use by default."""
DF = "bell-mccaffrey-slopes"
"""Their reference df by default. Why this pair: ``bench/README.md``, "Issue 38"."""


@dataclass(frozen=True)
class Inference:
    """Per quantity ("delta", "beta"), estimate, standard error and reference degrees of
    freedom [arm, rank] (the baseline's row NaN)."""

    estimate: dict[str, np.ndarray]
    se: dict[str, np.ndarray]
    df: dict[str, np.ndarray]
    installs: int


def _coefficients(ratio: np.ndarray, baseline: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each quantity's gradient in (R_a, R_0) [arm, rank]: delta (1, -1), beta
    (-1/R_0, R_a/R_0^2)."""
    base = ratio[baseline][None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "delta": (np.ones_like(ratio), -np.ones_like(ratio)),
            "beta": (-1 / base + 0 * ratio, ratio / base**2),
        }


def _values(ratio: np.ndarray, baseline: int) -> dict[str, np.ndarray]:
    base = ratio[..., baseline : baseline + 1, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = np.where(base > 0, 1 - ratio / np.where(base > 0, base, 1), np.nan)
    return {"delta": ratio - base, "beta": beta}


def _bm_df(
    u: np.ndarray,
    n: np.ndarray,
    ratio: np.ndarray,
    scale: np.ndarray,
    c: tuple[np.ndarray, np.ndarray],
    b: int,
    slope: np.ndarray | None = None,
) -> np.ndarray:
    """Bell & McCaffrey's (2002) Satterthwaite df [arm, rank] of V = sum_g (sum_j c_j s_gj
    e_gj / N_j)^2 (j the arm and the baseline) under a working model: independent queries
    with variance sigma_j^2 = R_j (1 - R_j) and, with ``slope`` (tau^2 / sigma_a^2 [arm,
    rank]), installs' own gaps varying with variance tau^2 (a random slope on the arm), so
    install g's residual sum in arm j has variance m_gj = sigma_j^2 (n_gj + r_j n_gj^2),
    r_a = slope and r_0 = 0.

    V is a quadratic form in the residuals; its Satterthwaite df is (tr M)^2 / ||M||_F^2 for
    the G x G matrix M_gh = sum_j alpha_gj alpha_hj (m_gj 1{g = h} - (n_gj m_hj + m_gj n_hj)
    / N_j + n_gj n_hj S_j / N_j^2), alpha_gj = c_j s_gj / N_j, S_j = sum_g m_gj: a diagonal
    plus three rank-one terms per arm, so tr M and ||M||_F^2 have closed forms and no G x G
    matrix is formed. Equal installs give G - 1; uneven ones about (sum n_g)^2 / sum n_g^2
    without slopes, fewer with them (installs with many units then weigh as n_g^2)."""
    var = np.clip(ratio * (1 - ratio), 0, None)  # [arm, rank]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        diag = np.zeros((u.shape[0], *ratio.shape))  # [install, arm, rank]
        terms: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (lambda, p, q): lambda p q'
        for coef, col, r in ((c[0], slice(None), slope), (c[1], slice(b, b + 1), None)):
            u_j, n_j = u[:, col, None], n[col, None]
            m_j = var[col][None] * (u_j + (0 if r is None else r[None] * u_j**2))
            alpha = coef[None] * scale[:, col, None] / n_j
            a_j, b_j = alpha * m_j, alpha * u_j  # [install, arm, rank]
            diag = diag + alpha**2 * m_j
            total = m_j.sum(axis=0)
            terms += [(-1 / n_j, a_j, b_j), (-1 / n_j, b_j, a_j), (total / n_j**2, b_j, b_j)]
        trace = diag.sum(axis=0) + sum(lam * (p * q).sum(axis=0) for lam, p, q in terms)
        frob = (diag**2).sum(axis=0) + 2 * sum(lam * (diag * p * q).sum(axis=0) for lam, p, q in terms)
        for lk, pk, qk in terms:
            for ll, pl, ql in terms:
                frob = frob + lk * ll * (pk * pl).sum(axis=0) * (qk * ql).sum(axis=0)
        return np.where(frob > 0, trace**2 / np.where(frob > 0, frob, 1), np.nan)


def gap_slopes(units: np.ndarray, clicks: np.ndarray, baseline: int = 0) -> np.ndarray:
    """tau^2 / (R_a (1 - R_a)) [arm, rank]: the variance of installs' own gaps
    y_ga / n_ga - y_g0 / n_g0 beyond their binomial noise, by DerSimonian & Laird's method of
    moments over the installs with units in both arms (weights 1/v_g, v_g = R_a (1 - R_a) /
    n_ga + R_0 (1 - R_0) / n_g0; floored at 0). An install's level cancels in its own gap,
    so this is the spread of effects alone: ~0 where the arm does the same to everyone."""
    u, y = vr._arrays(units, clicks)
    n = u.sum(axis=0)
    ratio = vr._ratio(y.sum(axis=0), n[:, None])
    var = ratio * (1 - ratio)
    base = slice(baseline, baseline + 1)
    both = ((u > 0) & (u[:, base] > 0))[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        own = np.where(both, y / u[:, :, None] - (y[:, base] / u[:, base, None]), 0.0)
        v = var[None] / u[:, :, None] + var[None, base] / u[:, base, None]
        w = np.where(both & (v > 0), 1 / v, 0.0)
        sw = w.sum(axis=0)
        mean = (w * own).sum(axis=0) / sw
        q = (w * (own - mean) ** 2).sum(axis=0)
        k = both.sum(axis=0)
        tau2 = np.maximum(0.0, (q - (k - 1)) / (sw - (w**2).sum(axis=0) / sw))
        out = np.where((k >= 2) & (var > 0), tau2 / var, 0.0)
    out[baseline] = 0.0
    return np.nan_to_num(out)


def gap_inference(
    units: np.ndarray,
    clicks: np.ndarray,
    baseline: int = 0,
    se: str = SE,
    df: str = DF,
    control_sums: Mapping[str, np.ndarray] | None = None,
) -> Inference:
    """delta and beta of every arm against ``baseline`` at every rank, with standard
    errors by ``se`` (``SE_METHODS``) and reference df by ``df`` (``DF_METHODS``).

    ``control_sums`` (``variance_reduction.Table.control_sums``): the variance-reduced
    estimates instead, estimate - sum_g k_g / sum_g n_g with the per-install control sums
    k_g held fixed (as the bootstrap holds them); cr1/cr2 subtract the centred k_g / N from
    each install's score, the jackknife leaves install g's k_g and n_g out with its counts.
    The df stays the plain estimate's (the control sums are known functions of the same
    installs' counts; a Bell-McCaffrey df for them would need their own working model).

    G is the number of installs with any units; an estimate that loses an arm when one
    install is left out has no jackknife SE (NaN)."""
    if se not in SE_METHODS:
        raise ValueError(f"se must be one of {SE_METHODS}")
    if df not in DF_METHODS:
        raise ValueError(f"df must be one of {DF_METHODS}")
    u, y = vr._arrays(units, clicks)
    keep = u.sum(axis=1) > 0
    u, y = u[keep], y[keep]
    sums = {k: np.asarray(v, dtype=np.float64)[keep] for k, v in (control_sums or {}).items()}
    g_n = u.shape[0]
    n = u.sum(axis=0)  # [arm]
    total = n.sum()
    ratio = vr._ratio(y.sum(axis=0), n[:, None])  # [arm, rank]
    coef = _coefficients(ratio, baseline)
    values = _values(ratio, baseline)
    b = slice(baseline, baseline + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(n > 0, u / np.where(n > 0, n, 1), 0.0)  # [install, arm]
        resid = (y - ratio[None] * u[:, :, None]) / n[None, :, None]  # e_gb / N_b
        # an install with all of an arm's units (h = 1) makes its scale infinite: no SE
        scale = {
            "cr1": np.ones_like(h),
            "cr2": 1 / np.sqrt(np.clip(1 - h, 0, None)),
            "jackknife": 1 / (1 - h),
        }
    slopes = gap_slopes(u, y, baseline) if df == "bell-mccaffrey-slopes" else None
    estimate, spread, dfs = {}, {}, {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for q in QUANTITIES:
            c_arm, c_base = coef[q]
            value = values[q].copy()
            k = sums.get(q)
            if k is not None:
                value = value - k.sum(axis=0) / total
            if se == "jackknife":
                left = vr._ratio(y.sum(axis=0)[None] - y, (n[None] - u)[:, :, None])  # [install, arm, rank]
                loo = _values(left, baseline)[q]
                if k is not None:
                    loo = loo - (k.sum(axis=0)[None] - k) / (total - u.sum(axis=1))[:, None, None]
                dev = loo - loo.mean(axis=0)
                var = (g_n - 1) / g_n * (dev**2).sum(axis=0)
            else:
                score = c_arm[None] * scale[se][:, :, None] * resid + c_base[None] * (
                    scale[se][:, b, None] * resid[:, b]
                )
                if k is not None:
                    score = score - (k - k.mean(axis=0)) / total
                var = (score**2).sum(axis=0) * (g_n / (g_n - 1) if se == "cr1" else 1.0)
            if df == "installs":
                nu = np.full(value.shape, float(g_n - 1))
            else:
                nu = _bm_df(u, n, ratio, scale[se], (c_arm, c_base), baseline, slopes)
            value[baseline] = np.nan
            estimate[q] = value
            spread[q] = np.sqrt(var) + 0 * value
            dfs[q] = nu + 0 * value
    return Inference(estimate, spread, dfs, g_n)


def t_p_values(estimate: np.ndarray, se: np.ndarray, df: np.ndarray | float) -> np.ndarray:
    """Two-sided p-values 2 P(T_df > |estimate / se|) (NaN where undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.abs(np.asarray(estimate, dtype=np.float64) / np.asarray(se, dtype=np.float64))
        p = 2 * student_t.sf(z, df)
    return np.where(np.isfinite(z), p, np.nan)


def split_per_install(
    per_install: np.ndarray, arm_index: Mapping[str, int], width: int, baseline: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The report's per-install matrix [install, arm block x (units, c_1..c_k)] (arm-major,
    ``figure3_arrays``) as the arms present (``arm_index``: name -> block; the baseline
    first, then by name), units [install, arm] and clicks [install, arm, rank], installs
    without units in any of these arms left out."""
    m = np.asarray(per_install, dtype=np.float64)
    if m.ndim != 2 or width < 2 or m.shape[1] % width:
        raise ValueError("per_install is [install, arms x width] with width = 1 + ranks")
    if baseline not in arm_index:
        raise ValueError(f"baseline {baseline!r} has no column block")
    arms = sorted(arm_index, key=lambda a: (a != baseline, a))
    blocks = m.reshape(m.shape[0], -1, width)[:, [arm_index[a] for a in arms]]
    units, clicks = blocks[:, :, 0], blocks[:, :, 1:]
    has = units.sum(axis=1) > 0
    return arms, units[has], clicks[has]


@dataclass(frozen=True)
class FamilyTest:
    """One member of a tested family.

    ``p_value`` is unadjusted, ``adjusted_p`` by the family's method (Holm, BH's q-value,
    Bonferroni; the p-value itself for "none"), ``rejected`` at alpha = 1 - level.
    ``low``/``high``: the unadjusted interval at ``level``. ``family_low``/``family_high``
    at ``family_level``: Bonferroni's simultaneous intervals for holm and bonferroni
    (``multiplicity.HolmReport`` on why Bonferroni's beside Holm's decisions), the
    Benjamini-Yekutieli FCR-adjusted intervals of the BH-selected members for bh (NaN for
    the others), the unadjusted ones for none."""

    quantity: str
    arm: str
    rank: int
    estimate: float
    se: float
    df: float
    p_value: float
    adjusted_p: float
    rejected: bool
    low: float
    high: float
    family_low: float
    family_high: float
    family_level: float


def _weights(
    arm_weights: Mapping[str, float] | Sequence[float] | np.ndarray,
    arms: list[str],
    arm_index: Mapping[str, int],
) -> np.ndarray:
    if isinstance(arm_weights, Mapping):
        return np.array([float(arm_weights[a]) for a in arms])
    w = np.asarray(arm_weights, dtype=np.float64)
    by_block = sorted(arm_index, key=lambda a: arm_index[a])
    if w.shape != (len(by_block),):
        raise ValueError("one registered weight per arm present")
    return np.array([w[by_block.index(a)] for a in arms])


def _inference(
    per_install: np.ndarray,
    arm_index: Mapping[str, int],
    width: int,
    baseline: str,
    arm_weights: Mapping[str, float] | Sequence[float] | np.ndarray | None,
    se: str,
    df: str,
) -> tuple[list[str], Inference]:
    arms, units, clicks = split_per_install(per_install, arm_index, width, baseline)
    sums = None
    if arm_weights is not None:
        sums = vr.adjusted_table(units, clicks, _weights(arm_weights, arms, arm_index)).control_sums
    return arms, gap_inference(units, clicks, 0, se, df, sums)


def family_tests(
    per_install: np.ndarray,
    arm_index: Mapping[str, int],
    width: int,
    baseline: str,
    family: Sequence[tuple[str, str, int]],
    method: str = "holm",
    level: float = 0.95,
    se: str = SE,
    df: str = DF,
) -> list[FamilyTest]:
    """Test a declared family of (quantity, arm, rank) against ``baseline``: quantity in
    ``QUANTITIES``, rank 1-based, ``method`` in ``ADJUSTMENTS``, alpha = 1 - level.

    Each member's p-value is 2 P(T_df > |estimate / SE|) with ``gap_inference``'s SE and
    df; the intervals are estimate +- t_df SE at the unadjusted and the family's level, so
    a family interval excludes 0 exactly when Bonferroni (holm: never the other way; see
    ``multiplicity.HolmReport``) or BH (for bh) rejects. A member whose estimate or SE
    cannot be computed (no clicks in the baseline for beta, an arm in one install) has NaN
    p-values and is not counted in the family's size.

    The family is tested on the plain estimates. On the variance-reduced ones, with the same
    SE and df, Holm's FWER was 0.030-0.062 in the paper's world (500 and 2,000 studies)
    and 0.058 in A/A studies at an ICC of 0.4 (500; the jackknife holds the control sums'
    coefficients fixed, a likely cause not yet shown): not validated, so not offered
    (``bench/README.md``, "Issue 38"). Their 95% intervals are validated:
    ``reduced_estimates``."""
    if method not in ADJUSTMENTS:
        raise ValueError(f"method must be one of {ADJUSTMENTS}")
    if not 0 < level < 1:
        raise ValueError("0 < level < 1")
    members = list(family)
    if len(set(members)) != len(members):
        raise ValueError("a family lists each hypothesis once")
    arms, inf = _inference(per_install, arm_index, width, baseline, None, se, df)
    for quantity, arm, rank in members:
        if quantity not in QUANTITIES or arm not in arms[1:] or not 1 <= rank < width:
            raise ValueError(
                f"not a member of a {width - 1}-rank table against {baseline!r}: {(quantity, arm, rank)}"
            )
    at = [(inf, q, arms.index(a), r - 1) for q, a, r in members]
    est = np.array([i.estimate[q][a, r] for i, q, a, r in at])
    s = np.array([i.se[q][a, r] for i, q, a, r in at])
    nu = np.array([i.df[q][a, r] for i, q, a, r in at])
    p = t_p_values(est, s, nu)
    alpha = 1 - level
    ok = np.isfinite(p)
    m = max(int(ok.sum()), 1)
    low, high = multiplicity.normal_intervals(est, s, level, 1, nu)
    if method == "bh":
        fcr = multiplicity.bh_fcr_intervals(est, s, p, alpha, nu)
        adjusted, f_low, f_high, f_level = multiplicity.benjamini_hochberg(p), fcr.low, fcr.high, fcr.level
    elif method == "none":
        adjusted, f_low, f_high, f_level = p, low, high, level
    else:
        adjusted = multiplicity.holm(p) if method == "holm" else multiplicity.bonferroni(p)
        f_low, f_high = multiplicity.normal_intervals(est, s, level, m, nu)
        f_level = multiplicity.bonferroni_level(level, m)
    rejected = np.where(ok, adjusted <= alpha, False)
    return [
        FamilyTest(
            q,
            a,
            r,
            float(est[j]),
            float(s[j]),
            float(nu[j]),
            float(p[j]),
            float(adjusted[j]),
            bool(rejected[j]),
            float(low[j]),
            float(high[j]),
            float(f_low[j]),
            float(f_high[j]),
            float(f_level),
        )
        for j, (q, a, r) in enumerate(members)
    ]


def reduced_estimates(
    per_install: np.ndarray,
    arm_index: Mapping[str, int],
    width: int,
    arm_weights: Mapping[str, float] | Sequence[float] | np.ndarray,
    baseline: str,
    level: float = 0.95,
    se: str = SE,
    df: str = DF,
) -> dict[tuple[str, str, int], tuple[float, float, float]]:
    """The variance-reduced delta and beta (design control variates,
    ``variance_reduction.adjusted_table``) of every arm present against ``baseline`` at
    every rank (1-based), each with its interval at ``level`` by the same SE and df as
    ``family_tests``: {(quantity, arm, rank): (estimate, low, high)}.

    ``arm_weights``: the registered weight of every arm present (the design's assignment
    probabilities are what make the control variates mean zero), a mapping by arm name or
    an array in ``arm_index``'s block order."""
    arms, inf = _inference(per_install, arm_index, width, baseline, arm_weights, se, df)
    out = {}
    for q in QUANTITIES:
        low, high = multiplicity.normal_intervals(inf.estimate[q], inf.se[q], level, 1, inf.df[q])
        for a, arm in enumerate(arms[1:], start=1):
            for r in range(width - 1):
                out[(q, arm, r + 1)] = (float(inf.estimate[q][a, r]), float(low[a, r]), float(high[a, r]))
    return out
