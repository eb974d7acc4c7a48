"""Variance reduction for Figure 3 that keeps the estimand and the clustering by install.

Derivation in ``docs/variance-reduction.md``. Input everywhere: per-install counts after
preprocessing, ``units`` [install, arm] and ``clicks`` [install, arm, rank], and the
registered arm weights of the arms in the columns (the engine's arms, all of them: the
control variates use the design's known assignment probabilities).

Two estimators of the gap delta (and the distortion beta):

- **Design control variates** (``adjusted_table``, the recommended one). Every query's arm
  is drawn with known probability pi_a, independently of the install's other queries. So
  for any install-level quantity x built from the install's *other* queries,
  sum over queries of (1{a_q = a}/pi_a - 1) x_{-q} has mean exactly zero whatever the
  effects are; its sum over installs is a control variate. With x_{-q} the install's
  pooled CTR at rank r over all its other queries (leave-one-out, computable from the
  per-install sums), it carries the install's own click propensity, which is the part of
  the ratio estimator's noise that has nothing to do with the arm. The estimate is the
  plain ratio statistic minus the mean control variate of the centred covariate, shrunk
  per install by its reliability, with coefficient theta = 1: nothing is estimated by
  regression, so the estimate stays unbiased and pays no small-sample price (CUPED's
  regression coefficients are an option, theta="regression"; at the paper's 85 installs
  they cost more than they gained). The estimand is unchanged (the pooled,
  units-weighted CTR difference). Caveat: repeated queries of one install share an
  arm (the hash is of install and query), so x_{-q} contains repeats of q under q's arm;
  with effects, this makes the control variates' mean sum_i tau_i P_i / sum_i n_i instead
  of 0 (P_i: ordered pairs of units of a same query over n_i - 1). The simulator has no
  repeats; in a panel with many navigational repeats, prefer ``within_install_gap`` or
  measure the repeat share first.
- **Within-install (post-stratified) gap** (``within_install_gap``): sum_i w_i (y_ia/n_ia -
  y_i0/n_i0), w_i the install's share of units among installs with units in both arms.
  Exactly unbiased for its estimand when an install's units are exchangeable, immune to
  repeats; its estimand is the units-weighted mean over installs *that saw both arms*
  (installs with an empty arm are dropped: few units, little weight, but the estimand
  moves if they differ).

Intervals for both: an influence-function (sandwich) SE, and the clustered Poisson
bootstrap with the service's weights (``analytics/stats/bootstrap.py``), each install's
columns multiplied by its weight in every replicate. The bootstrap keeps theta, the
shrinkage and the beta coefficients fixed at the full-sample values (their estimation
error is O(1/installs), below the sampling error the interval is about). Both are a little
short with few uneven installs; a report's intervals for the reduced estimates are the
leave-one-install-out jackknife's with Bell-McCaffrey df (``family_tests.reduced_estimates``,
which takes the control sums from ``adjusted_table``).

What it gains is bounded: the pooled gap already cancels an install's level in its
largest term, so the width ratio is at best sqrt(1 - ICC), and nearer 1 when installs'
own gaps differ (docs/variance-reduction.md; 0.93 in A/A and 1.00 with the planted
effects in the paper's world, bench/README.md, "Issue 38").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analytics.stats.bootstrap import replicate_weights

STATISTICS = ("ctr", "delta", "beta")


def _arrays(units: np.ndarray, clicks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = np.asarray(units, dtype=np.float64)
    y = np.asarray(clicks, dtype=np.float64)
    if u.ndim != 2 or y.ndim != 3 or y.shape[:2] != u.shape:
        raise ValueError("units [install, arm] and clicks [install, arm, rank] expected")
    return u, y


def _probabilities(arm_weights: np.ndarray, arms: int) -> np.ndarray:
    w = np.asarray(arm_weights, dtype=np.float64)
    if w.shape != (arms,) or np.any(w <= 0):
        raise ValueError("one positive weight per arm column")
    return w / w.sum()


def control_variates(
    units: np.ndarray, clicks: np.ndarray, arm_weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per install, the design's mean-zero sums: e [install, arm, rank] and f [install, arm].

    e_iar = sum_q (1{a_q = a}/pi_a - 1) x_{-q}, x_{-q} = (S_ir - c_qr)/(n_i - 1) the install's
    pooled CTR at r over its other queries: = (n_ia S_ir - y_iar) / (pi_a (n_i - 1)) - S_ir.
    f_ia = sum_q (1{a_q = a}/pi_a - 1) = n_ia/pi_a - n_i (the arm-mix imbalance; with e it
    centres the covariate at the regression's choice). Installs with fewer than 2 units have
    no leave-one-out covariate: e = 0 (still mean zero, given n_i)."""
    u, y = _arrays(units, clicks)
    pi = _probabilities(arm_weights, u.shape[1])
    n = u.sum(axis=1)
    s = y.sum(axis=1)  # [install, rank]
    e = np.zeros_like(y)
    ok = n >= 2
    e[ok] = (u[ok, :, None] * s[ok, None, :] - y[ok]) / (pi[None, :, None] * (n[ok] - 1)[:, None, None]) - s[
        ok, None, :
    ]
    f = u / pi[None, :] - n[:, None]
    return e, f


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


THETAS = ("design", "regression")
"""How the control variates enter. design: theta = 1 on the install's centred, shrunk
covariate (no coefficient estimated: the default); regression: CUPED's OLS coefficients on
(e, f), estimated across installs."""


@dataclass(frozen=True)
class Table:
    """Estimates and sandwich SEs [arm, rank] per statistic, plain and adjusted (the
    baseline's delta and beta rows are NaN), and per statistic the per-install control sums
    [install, arm, rank] already multiplied by theta: adjusted = plain - sum_i g_i / sum_i n_i
    (``replicates`` takes the same sums under the bootstrap weights)."""

    plain: dict[str, np.ndarray]
    plain_se: dict[str, np.ndarray]
    adjusted: dict[str, np.ndarray]
    adjusted_se: dict[str, np.ndarray]
    control_sums: dict[str, np.ndarray]
    installs: int


def _linear_coefficients(
    ratio: np.ndarray, baseline: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Each statistic's linearisation in the two arms' ratio influences: ctr (1, 0), delta
    (1, -1), beta (-1/R_0, R_a/R_0^2)."""
    base = ratio[baseline][None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        c_arm = {"ctr": np.ones_like(ratio), "delta": np.ones_like(ratio), "beta": -1 / base + 0 * ratio}
        c_base = {"ctr": np.zeros_like(ratio), "delta": -np.ones_like(ratio), "beta": ratio / base**2}
    return c_arm, c_base


def _solve2(h1: np.ndarray, h2: np.ndarray, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the least-squares coefficients of phi on (h1, h2) with an intercept
    (columns along the last axes, installs along the first). A singular pair falls back to
    the first regressor alone, and to no adjustment."""
    h1c, h2c, pc = h1 - h1.mean(axis=0), h2 - h2.mean(axis=0), phi - phi.mean(axis=0)
    a, b, d = (h1c * h1c).sum(0), (h1c * h2c).sum(0), (h2c * h2c).sum(0)
    g1, g2 = (h1c * pc).sum(0), (h2c * pc).sum(0)
    det = a * d - b * b
    with np.errstate(invalid="ignore", divide="ignore"):
        full = det > 1e-10 * np.maximum(a * d, 1e-300)
        alone = np.where(a > 0, g1 / np.where(a > 0, a, 1), 0.0)
        t1 = np.where(full, (d * g1 - b * g2) / np.where(full, det, 1), alone)
        t2 = np.where(full, (a * g2 - b * g1) / np.where(full, det, 1), 0.0)
    return np.nan_to_num(t1), np.nan_to_num(t2)


def between_install_variance(units: np.ndarray, clicks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per rank, the pooled CTR Rbar (all arms) and the between-install variance of the
    installs' pooled CTR, by the binomial ANOVA (method of moments) estimator
    s^2 = (sum_i n_i (p_i - Rbar)^2 - (N - 1) Rbar (1 - Rbar)) / (sum n - sum n^2 / sum n),
    floored at 0 (installs without units left out)."""
    u, y = _arrays(units, clicks)
    n = u.sum(axis=1)
    has = n > 0
    n, s = n[has], y.sum(axis=1)[has]
    total = n.sum()
    if total <= 0:
        return np.full(y.shape[2], np.nan), np.zeros(y.shape[2])
    rbar = s.sum(axis=0) / total
    p = s / n[:, None]
    spread = (n[:, None] * (p - rbar[None]) ** 2).sum(axis=0) - (n.size - 1) * rbar * (1 - rbar)
    scale = total - (n**2).sum() / total
    s2 = np.maximum(spread / scale, 0.0) if scale > 0 else np.zeros_like(rbar)
    return rbar, s2


def shrinkage(units: np.ndarray, rbar: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """rho [install, rank] = (n_i - 1) s^2 / ((n_i - 1) s^2 + Rbar (1 - Rbar)): the weight of
    an install's leave-one-out CTR in the best linear predictor of its own propensity (0
    for installs under 2 units). A function of n_i alone, so the control variates stay
    mean zero."""
    m = np.maximum(np.asarray(units, dtype=np.float64).sum(axis=1) - 1, 0)[:, None]
    noise = (rbar * (1 - rbar))[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(m * s2[None] > 0, m * s2[None] / (m * s2[None] + noise), 0.0)
    return np.nan_to_num(rho)


def adjusted_table(
    units: np.ndarray, clicks: np.ndarray, arm_weights: np.ndarray, baseline: int = 0, theta: str = "design"
) -> Table:
    """CTR, delta and beta per arm and rank, plain and with the design control variates,
    each with its influence-function SE (clustered by install).

    Plain influence of install i on R_ar: phi_iar = (y_iar - R_ar n_ia)/mean_i(n_ia); a
    statistic's is c_arm phi_a + c_base phi_0 (``_linear_coefficients``).

    theta="design" (default): the install's covariate is its leave-one-out pooled CTR,
    centred at Rbar and shrunk by rho_i (``shrinkage``): g_iab = rho_i (e_iab - Rbar f_ib),
    and a statistic's control sum is g_i = c_arm g_ia + c_base g_i0 with coefficient 1
    (for delta in an A/A world the optimal coefficient is exactly 1: docs). Nothing is
    estimated by regression, so no small-sample cost; SE = sd(phi - g/mean(n))/sqrt(N).
    theta="regression": CUPED's OLS of phi on (c e, c f)/mean(n), with an intercept; SE
    with ddof 3. In the paper's world (85 installs, one install's effect dominating the
    residual), the regression's coefficients are noisy enough to cost more than they gain
    (``bench/README.md``, "Issue 38")."""
    if theta not in THETAS:
        raise ValueError(f"theta must be one of {THETAS}")
    u, y = _arrays(units, clicks)
    n_inst = u.shape[0]
    e, f = control_variates(u, y, arm_weights)
    unit_sums = u.sum(axis=0)
    ratio = _ratio(y.sum(axis=0), unit_sums[:, None])  # [arm, rank]
    mean_units = unit_sums / n_inst
    with np.errstate(invalid="ignore", divide="ignore"):
        phi_arm = (y - ratio[None] * u[:, :, None]) / mean_units[None, :, None]  # [install, arm, rank]
    n_bar = u.sum() / n_inst
    c_arm, c_base = _linear_coefficients(ratio, baseline)
    if theta == "design":
        rbar, s2 = between_install_variance(u, y)
        g_arm = shrinkage(u, rbar, s2)[:, None, :] * (e - rbar[None, None, :] * f[:, :, None])
    plain, plain_se, adjusted, adjusted_se, sums = {}, {}, {}, {}, {}
    base_value = ratio[baseline][None, :]
    values = {
        "ctr": ratio,
        "delta": ratio - base_value,
        "beta": _ratio(-(ratio - base_value), np.broadcast_to(base_value, ratio.shape)),
    }
    b = slice(baseline, baseline + 1)
    for stat in STATISTICS:
        ca, cb = c_arm[stat][None], c_base[stat][None]
        phi = ca * phi_arm + cb * phi_arm[:, b]
        if theta == "design":
            g = ca * g_arm + cb * g_arm[:, b]
            ddof = 1
        else:
            h1 = ca * e + cb * e[:, b]
            h2 = np.broadcast_to(ca * f[:, :, None] + cb * f[:, b, None], phi.shape)
            t1, t2 = _solve2(h1 / n_bar, h2 / n_bar, np.nan_to_num(phi))
            g = t1[None] * h1 + t2[None] * h2
            ddof = 3
        resid = phi - g / n_bar
        value = values[stat]
        if stat != "ctr":
            value = value.copy()
            value[baseline] = np.nan
        plain[stat] = value
        adjusted[stat] = value - g.sum(axis=0) / u.sum()
        plain_se[stat] = phi.std(axis=0, ddof=1) / np.sqrt(n_inst) + 0 * value
        spread = ((resid - resid.mean(axis=0)) ** 2).sum(axis=0) / max(n_inst - ddof, 1)
        adjusted_se[stat] = np.sqrt(spread / n_inst) + 0 * value
        sums[stat] = g
    return Table(plain, plain_se, adjusted, adjusted_se, sums, n_inst)


def install_weight_rows(keys: np.ndarray, replicates: int = 200, seed: int = 0) -> np.ndarray:
    """The service's Poisson(1) weights [install, replicate] as float64, in the order of
    ``keys`` (``bootstrap.install_key`` of each row's install): taken from the shared
    ``replicate_weights`` set, so a report that already bootstraps Figure 3 over the same
    installs reuses its matrix and both tables see the same replicates."""
    keys = np.asarray(keys, dtype=np.uint64)
    return replicate_weights(keys, replicates, seed)(keys)


def replicates(
    units: np.ndarray, clicks: np.ndarray, weights: np.ndarray, table: Table, baseline: int = 0
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Bootstrap replicates [replicate, arm, rank] of every statistic, plain and adjusted,
    from the install weights [install, replicate] (``install_weight_rows``).

    Every replicate sum is one matrix product. The adjusted statistic is the plain one
    minus sum_i W_ib g_i / sum_i W_ib n_i with ``table``'s control sums: theta, the
    shrinkage and beta's coefficients stay at the full sample's values."""
    u, y = _arrays(units, clicks)
    a_n, k_n = y.shape[1], y.shape[2]
    wt = np.asarray(weights, dtype=np.float64).T  # [replicate, install]
    su = wt @ u
    sy = (wt @ y.reshape(u.shape[0], -1)).reshape(-1, a_n, k_n)
    total = wt @ u.sum(axis=1)
    ratio = _ratio(sy, su[:, :, None])
    base = ratio[:, baseline : baseline + 1, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = -(ratio - base) / base
    plain = {"ctr": ratio, "delta": ratio - base, "beta": np.where(np.isfinite(beta), beta, np.nan)}
    adjusted = {}
    for stat in STATISTICS:
        g = (wt @ table.control_sums[stat].reshape(u.shape[0], -1)).reshape(-1, a_n, k_n)
        with np.errstate(invalid="ignore", divide="ignore"):
            adjusted[stat] = plain[stat] - g / total[:, None, None]
        if stat != "ctr":
            plain[stat][:, baseline] = np.nan
            adjusted[stat][:, baseline] = np.nan
    return plain, adjusted


@dataclass(frozen=True)
class WithinInstall:
    """The within-install gap and distortion [arm, rank] with influence SEs; ``installs``
    per arm: those with units in both the arm and the baseline (the ones that count)."""

    delta: np.ndarray
    delta_se: np.ndarray
    beta: np.ndarray
    beta_se: np.ndarray
    installs: np.ndarray


def _within_parts(u: np.ndarray, y: np.ndarray, baseline: int) -> tuple[np.ndarray, np.ndarray]:
    """Per install, its units share weight n_i (0 where an arm or the baseline is empty)
    [install, arm] and its own gap tau_i [install, arm, rank] (0 where not kept)."""
    both = (u > 0) & (u[:, baseline : baseline + 1] > 0)
    w = np.where(both, u.sum(axis=1, keepdims=True), 0.0)
    own = _ratio(y, u[:, :, None])
    tau = np.where(both[:, :, None], own - own[:, baseline : baseline + 1], 0.0)
    return w, np.nan_to_num(tau)


def within_install_gap(units: np.ndarray, clicks: np.ndarray, baseline: int = 0) -> WithinInstall:
    """delta_PS = sum_i w_i (y_ia/n_ia - y_i0/n_i0) / sum_i w_i over installs with units in
    both arms, w_i = n_i; beta_PS = -delta_PS / CTR_0 (the pooled control CTR).

    Influence of install i: psi_i = w_i (tau_i - delta_PS)/mean(w) (0 for dropped installs,
    which still count in N); for beta, -(psi_i/R_0 - delta phi_i(R_0)/R_0^2)."""
    u, y = _arrays(units, clicks)
    n_inst = u.shape[0]
    w, tau = _within_parts(u, y, baseline)
    wsum = w.sum(axis=0)  # [arm]
    delta = _ratio((w[:, :, None] * tau).sum(axis=0), wsum[:, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        psi = w[:, :, None] * (tau - delta[None]) / (wsum / n_inst)[None, :, None]
    r0 = _ratio(y[:, baseline].sum(axis=0), np.full(y.shape[2], u[:, baseline].sum()))
    phi0 = (y[:, baseline] - r0[None] * u[:, baseline : baseline + 1]) / (u[:, baseline].sum() / n_inst)
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = -delta / r0[None]
        psi_beta = -(psi / r0[None, None] - (delta / r0**2)[None] * phi0[:, None, :])
    delta_se = psi.std(axis=0, ddof=1) / np.sqrt(n_inst)
    beta_se = psi_beta.std(axis=0, ddof=1) / np.sqrt(n_inst)
    for arr in (delta, delta_se, beta, beta_se):
        arr[baseline] = np.nan
    return WithinInstall(delta, delta_se, beta, beta_se, (w > 0).sum(axis=0))


def within_install_replicates(
    units: np.ndarray, clicks: np.ndarray, weights: np.ndarray, baseline: int = 0
) -> np.ndarray:
    """Bootstrap replicates [replicate, arm, rank] of delta_PS from install weights
    [install, replicate]: sum_i W_ib w_i tau_i / sum_i W_ib w_i."""
    u, y = _arrays(units, clicks)
    w, tau = _within_parts(u, y, baseline)
    wt = np.asarray(weights, dtype=np.float64).T
    num = np.einsum("bi,iak->bak", wt, w[:, :, None] * tau)
    out = _ratio(num, (wt @ w)[:, :, None])
    out[:, baseline] = np.nan
    return out
