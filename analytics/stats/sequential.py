"""Anytime-valid confidence sequences for Figure 3, clustered by install.

Method (see ``analytics/stats/README.md``): the asymptotic confidence sequence of
Waudby-Smith, Arbour, Sinha, Kennedy and Ramdas ("Time-uniform central limit theory and
asymptotic confidence sequences", 2021/2024, Theorem 2.2), the one GrowthBook ships for
sequential testing. Installs are the units of independence: every statistic of Figure 3
is a smooth function of per-install sums, so it is linearised per install (the delta
method: an install's influence value), and the sequence is

    estimate +- sd(influence) * sqrt(2 (n rho^2 + 1) / (n^2 rho^2) * log(sqrt(n rho^2 + 1) / alpha))

with ``n`` installs so far. It covers the truth at every moment of the study at once with
probability at least 1 - alpha (asymptotically), so an operator may look as often as they
like and stop the first time it excludes zero. ``rho`` tunes where the sequence is
tightest (``tuning_installs``); it is fixed before the study, never chosen from the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

TUNING_INSTALLS = 5000
"""Installs at which the sequence is tightest (GrowthBook's default N* is 5,000 users)."""


def rho_squared(alpha: float = 0.05, tuning_installs: int = TUNING_INSTALLS) -> float:
    """rho^2 that minimises the width at ``tuning_installs`` (Waudby-Smith et al., eq. 2.7)."""
    log_term = -2 * math.log(alpha)
    return (log_term + math.log(log_term + 1)) / tuning_installs


def half_width_factor(
    n: int | np.ndarray, alpha: float = 0.05, tuning_installs: int = TUNING_INSTALLS
) -> np.ndarray:
    """The factor that multiplies sd(influence): the sequence's half-width per unit sd."""
    n = np.asarray(n, dtype=float)
    r2 = rho_squared(alpha, tuning_installs)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = 2 * (n * r2 + 1) / (n**2 * r2) * np.log(np.sqrt(n * r2 + 1) / alpha)
        return np.where(n > 1, np.sqrt(inner), np.inf)


def normal_half_width_factor(n: int | np.ndarray, level: float = 0.95) -> np.ndarray:
    """The fixed-horizon (one look) normal interval's factor, for comparison: z / sqrt(n)."""
    from scipy.stats import norm

    n = np.asarray(n, dtype=float)
    z = float(norm.ppf(0.5 + level / 2))
    with np.errstate(divide="ignore"):
        return np.where(n > 1, z / np.sqrt(n), np.inf)


def ratio_influence(clicks: np.ndarray, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Point ratios sum(clicks)/sum(units) per column and each install's influence on them.

    ``clicks`` is [install, rank], ``units`` [install] (zeros for installs that did not see
    the arm: every install of the study counts in ``n``). The influence of install j on
    R = sum X / sum U is (X_j - R U_j) / mean(U).
    """
    total = units.sum()
    if total <= 0:
        nan = np.full(clicks.shape[1], np.nan)
        return nan, np.full(clicks.shape, np.nan)
    ratio = clicks.sum(axis=0) / total
    influence = (clicks - ratio[None, :] * units[:, None]) / (total / units.size)
    return ratio, influence


def interval(estimate: np.ndarray, influence: np.ndarray, alpha: float = 0.05,
             tuning_installs: int = TUNING_INSTALLS) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """The confidence sequence at this moment: (low, high) per column."""
    n = influence.shape[0]
    sd = influence.std(axis=0, ddof=1) if n > 1 else np.full(influence.shape[1:], np.inf)
    half = sd * half_width_factor(n, alpha, tuning_installs)
    return estimate - half, estimate + half


def gap_influence(
    ratio_arm: np.ndarray, infl_arm: np.ndarray, ratio_base: np.ndarray, infl_base: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """delta = R_arm - R_base and beta = -delta / R_base with their per-install influences."""
    delta = ratio_arm - ratio_base
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = -delta / ratio_base
        infl_beta = -(
            infl_arm / ratio_base[None, :] - ratio_arm[None, :] * infl_base / ratio_base[None, :] ** 2
        )
    return delta, infl_arm - infl_base, beta, infl_beta


def first_exclusion(looks: Sequence[tuple[int, float, float]]) -> int | None:
    """The first look (its moment) whose interval excludes zero, or None: the decision line."""
    for moment, low, high in looks:
        if low > 0 or high < 0:
            return moment
    return None


def column_moments(values: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """What ``influence_sd`` needs of per-install columns [install, column]: the number of
    installs, the column sums and the Gram matrix (one matrix product)."""
    return values.shape[0], values.sum(axis=0), values.T @ values


def influence_sd(coef: np.ndarray, n: int, sums: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """sd (ddof 1) over installs of each influence ``values @ coef[k]``, from the columns'
    moments (``column_moments``) instead of the [install, statistic] influence matrix.

    Every influence of Figure 3 (a ratio's, a gap's, a distortion's) is a linear
    combination of an install's units and clicks, so its sum of squares is
    ``coef G coef'``: the same variance as ``ratio_influence`` then ``interval`` take, at
    the cost of a [column, column] product instead of passes over 100k installs x ~200
    statistics. Counts are integers, so ``G`` and the sums are exact in float64; what is
    lost is only the rounding of the final subtraction (relative ~1e-12 at 100k installs,
    against the 6 decimals a report shows).
    """
    if n <= 1:
        return np.full(coef.shape[0], np.inf)
    with np.errstate(invalid="ignore", over="ignore"):
        square = np.einsum("kc,cd,kd->k", coef, gram, coef)
        spread = square - (coef @ sums) ** 2 / n
        # what is left of terms of size ``scale`` after they cancel is rounding when it is
        # this small: zero, as the explicit influences give (all installs on one ratio)
        scale = np.einsum("kc,cd,kd->k", np.abs(coef), np.abs(gram), np.abs(coef))
        spread = np.where(spread > ROUNDING * scale, spread, 0.0)
    # a coefficient that is not finite (a ratio over zero units) leaves no sd, as the
    # influence values it would make leave none
    return np.where(np.isfinite(coef).all(axis=1), np.sqrt(spread / (n - 1)), np.nan)


ROUNDING = 1e-12
"""``influence_sd``'s threshold: a sum of squares below this share of its terms' size is
rounding of a zero."""
