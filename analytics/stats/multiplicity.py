"""Multiple comparisons over a declared family of Figure-3 hypotheses (issue 38).

A report of six arms x several positions tests dozens of gaps at once; at 5% each, an A/A
study shows "significant" gaps in most studies (``bench/stats_validation.py``). The family
is declared before the study (which arms, which positions, which statistic) and every
function here takes the whole family at once.

- **Adjusted p-values**: Bonferroni, Holm (step-down; controls the family-wise error under
  any dependence, uniformly more powerful than Bonferroni) and Benjamini-Hochberg
  (step-up; controls the false discovery rate under independence or positive regression
  dependence, PRDS). Gaps of one study share the control arm, so their estimates are
  positively correlated: the PRDS case for one-sided tests; for two-sided p-values BH's
  validity under this dependence is not proven but is the usual practice, and the bench
  checks the FDR in the paper's world.
- **Simultaneous intervals**: Bonferroni (each interval at level ``1 - alpha/m``; for the
  bootstrap, percentile quantiles at ``alpha/(2m)`` and ``1 - alpha/(2m)``), shown beside
  Holm's decisions (``holm_report``), and FCR-adjusted intervals for the BH-selected set
  (Benjamini & Yekutieli 2005: the R selected at level ``1 - R alpha/m``).
- **Confidence sequences**: ``sequence_alpha`` (Bonferroni across the family). Why not e-BH:
  see its docstring.
- **p-values from bootstrap replicates**: ``bootstrap_p_values`` (normal approximation from
  the bootstrap SE; why, in its docstring) and ``percentile_p_values`` (test inversion, with
  its resolution floor). A report's family is tested by ``family_tests.family_tests``
  instead: the bootstrap SE with a t(installs - 1) reference let Holm's family-wise error
  reach 0.06-0.08 at the paper's 85 uneven installs; the jackknife SE with Bell-McCaffrey
  df holds it at 0.036-0.051 (``bench/README.md``, "Issue 38").

NaN p-values (a statistic that could not be computed) are not members of the family: they
are left NaN and do not count in ``m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from analytics.stats.arrangement_table import finite_quantiles


def _family(p_values: np.ndarray | list[float]) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p_values, dtype=np.float64)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return p, np.isfinite(p)


def bonferroni(p_values: np.ndarray | list[float]) -> np.ndarray:
    """min(1, m p): reject where the adjusted p is at most alpha (FWER under any dependence)."""
    p, ok = _family(p_values)
    out = np.full(p.shape, np.nan)
    out[ok] = np.minimum(1.0, ok.sum() * p[ok])
    return out


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted ascending, the k-th (1-based) is
    max over j <= k of min(1, (m - j + 1) p_(j)). Rejecting where it is at most alpha is
    Holm's procedure: FWER <= alpha under any dependence, never fewer rejections than
    Bonferroni."""
    p, ok = _family(p_values)
    out = np.full(p.shape, np.nan)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="stable")
    steps = (m - np.arange(m)) * q[order]
    adjusted = np.minimum(1.0, np.maximum.accumulate(steps))
    back = np.empty(m)
    back[order] = adjusted
    out[ok] = back
    return out


def benjamini_hochberg(p_values: np.ndarray | list[float]) -> np.ndarray:
    """BH q-values: sorted ascending, the k-th is min over j >= k of min(1, m p_(j) / j).
    Rejecting where it is at most alpha is the BH step-up procedure: FDR <= (m0/m) alpha
    under independence or PRDS."""
    p, ok = _family(p_values)
    out = np.full(p.shape, np.nan)
    q = p[ok]
    m = q.size
    if m == 0:
        return out
    order = np.argsort(q, kind="stable")
    steps = m * q[order] / np.arange(1, m + 1)
    adjusted = np.minimum(1.0, np.minimum.accumulate(steps[::-1])[::-1])
    back = np.empty(m)
    back[order] = adjusted
    out[ok] = back
    return out


def bonferroni_level(level: float, m: int) -> float:
    """The per-interval level that makes m intervals hold simultaneously: 1 - (1 - level)/m.
    By the union bound, P(some interval misses) <= m (1 - level)/m = 1 - level."""
    if m < 1:
        raise ValueError("a family has at least one member")
    return 1 - (1 - level) / m


def simultaneous_quantiles(level: float, m: int) -> tuple[float, float]:
    """The percentile-bootstrap quantiles of a Bonferroni interval in a family of m:
    alpha/(2m) and 1 - alpha/(2m). With 200 replicates these are estimated from the
    outermost few replicates (alpha/(2m) x 200 = 0.28 replicates at m = 18): the interval is
    then essentially the replicates' range, so its coverage is not what it claims. Use at
    least ``replicates_for(level, m)`` replicates, or ``normal_intervals`` at the adjusted
    level from the bootstrap SE."""
    alpha = (1 - bonferroni_level(level, m)) / 2
    return alpha, 1 - alpha


def replicates_for(level: float, m: int, tail_count: int = 10) -> int:
    """Replicates so that each tail of a Bonferroni percentile interval holds ``tail_count``
    replicates beyond the quantile (10 is a common rule of thumb for a stable quantile)."""
    low, _ = simultaneous_quantiles(level, m)
    return math.ceil(tail_count / low)


def percentile_intervals(replicates: np.ndarray, level: float, m: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals of replicates [replicate, statistic] at the Bonferroni level of a
    family of m (m = 1: the ordinary interval), NaN replicates ignored."""
    lo, hi = finite_quantiles(np.asarray(replicates, dtype=np.float64), simultaneous_quantiles(level, m))
    return lo, hi


Df = float | np.ndarray | None
"""Reference degrees of freedom: None for the normal, else Student's t with df (one number,
or one per hypothesis, as ``family_tests``' Bell-McCaffrey df)."""


def normal_intervals(
    estimate: np.ndarray, se: np.ndarray, level: float, m: int = 1, df: Df = None
) -> tuple[np.ndarray, np.ndarray]:
    """estimate +- z se at the Bonferroni level of a family of m: the simultaneous interval
    that does not need thousands of replicates in its tails. With ``df``, Student's t
    quantile instead of z (as ``bootstrap_p_values(..., df)``); an array of df gives each
    estimate its own."""
    tail = (1 - bonferroni_level(level, m)) / 2
    z = norm.isf(tail) if df is None else student_t.isf(tail, np.asarray(df, dtype=np.float64))
    est, s = np.asarray(estimate, dtype=np.float64), np.asarray(se, dtype=np.float64)
    return est - z * s, est + z * s


@dataclass(frozen=True)
class HolmReport:
    """Holm's decisions with the intervals that go beside them.

    ``rejected``: Holm at ``alpha``. ``low``/``high``: Bonferroni simultaneous intervals.
    ``step_level``: 1 - alpha/(m - k + 1), the level at which the hypothesis of rank k was
    tested in the step-down (informative only: intervals at these levels do *not* hold
    simultaneously). ``interval_lags``: Holm rejected, yet the Bonferroni interval holds 0.

    Why these intervals: simultaneous intervals that match Holm exactly (Strassburger &
    Bretz 2008) are one-sided at the boundary ([0, x] for a rejected hypothesis unless all
    are rejected), unhelpful in a table of gap sizes. Bonferroni intervals never contradict
    Holm the other way: an interval that excludes 0 means p <= alpha/m, which Holm
    rejects too (its first step is Bonferroni's test and later steps are more lenient).
    So the report shows Holm's decisions, Bonferroni's intervals, and flags the few
    hypotheses Holm rejects whose interval still touches 0."""

    adjusted: np.ndarray
    rejected: np.ndarray
    step_level: np.ndarray
    low: np.ndarray
    high: np.ndarray
    interval_lags: np.ndarray


def holm_report(
    estimate: np.ndarray, se: np.ndarray, p_values: np.ndarray, alpha: float = 0.05, df: Df = None
) -> HolmReport:
    """``HolmReport`` from point estimates, SEs and p-values of one family (same shapes).
    The decisions and intervals agree as the class says when the p-values come from the
    same estimates and SEs with the same reference (``df``: None for normal, else t)."""
    p, ok = _family(p_values)
    adjusted = holm(p)
    rejected = np.where(ok, adjusted <= alpha, False)
    m = int(ok.sum())
    step = np.full(p.shape, np.nan)
    if m:
        ranks = np.empty(m)
        ranks[np.argsort(p[ok], kind="stable")] = np.arange(1, m + 1)
        step[ok] = 1 - alpha / (m - ranks + 1)
    low, high = normal_intervals(estimate, se, 1 - alpha, max(m, 1), df)
    lags = rejected & (low <= 0) & (high >= 0)
    return HolmReport(adjusted, rejected, step, low, high, lags)


def fcr_level(level: float, selected: int, m: int) -> float:
    """Benjamini & Yekutieli (2005): after selecting R of m (R >= 1), intervals at level
    1 - R alpha/m for the selected keep the expected share of non-covering intervals among
    the selected (the false coverage-statement rate) at most alpha, for independent
    estimates or BH selection under PRDS. With R = 0 nothing is reported (level 1)."""
    if not 0 <= selected <= m:
        raise ValueError("0 <= selected <= m")
    return 1.0 if selected == 0 else 1 - selected * (1 - level) / m


@dataclass(frozen=True)
class FcrIntervals:
    selected: np.ndarray
    level: float
    low: np.ndarray  # NaN outside the selection
    high: np.ndarray


def bh_fcr_intervals(
    estimate: np.ndarray, se: np.ndarray, p_values: np.ndarray, alpha: float = 0.05, df: Df = None
) -> FcrIntervals:
    """BH selection at ``alpha`` and the FCR-adjusted normal (``df``: t) intervals of the
    selected (the BY 2005 pairing: BH at q selects exactly the hypotheses whose 1 - R q/m
    intervals exclude 0, when the p-values come from the same estimates, SEs and
    reference, so the intervals and the selection agree)."""
    p, ok = _family(p_values)
    selected = np.where(ok, benjamini_hochberg(p) <= alpha, False)
    m, r = int(ok.sum()), int(selected.sum())
    level = fcr_level(1 - alpha, r, max(m, 1))
    low, high = normal_intervals(estimate, se, level, 1, df) if r else (np.full(p.shape, np.nan),) * 2
    low = np.where(selected, low, np.nan)
    high = np.where(selected, high, np.nan)
    return FcrIntervals(selected, level, low, high)


def sequence_alpha(alpha: float, m: int) -> float:
    """The alpha of each confidence sequence in a family of m: alpha/m (Bonferroni).

    Each sequence misses its parameter *at some time* with probability at most alpha/m; by
    the union bound the probability that any of the m ever misses is at most alpha, so the
    family's coverage is simultaneous over the members *and* time-uniform: the board may
    still be watched and stopped at will. (Pass it to ``sequential.half_width_factor``;
    rho is then tuned for alpha/m, as ``rho_squared`` does for any alpha.)

    e-BH (Wang & Ramdas 2022) would give time-uniform FDR control under any dependence, but
    it needs an e-value per hypothesis at the stopping time, i.e. an e-process (a
    nonnegative supermartingale under the null). The sequences here are *asymptotic*
    confidence sequences (a Gaussian-mixture boundary on the clustered influence sd): they
    are not built from a test martingale and yield no e-value, and an e-process valid for a
    ratio clustered by install would need bounded, independent observations we do not have
    (``analytics/stats/README.md``). So the family uses Bonferroni, which needs nothing
    beyond each sequence's own guarantee. e-BH becomes available if a betting
    (e-process) sequence per install-level influence is ever adopted."""
    if m < 1:
        raise ValueError("a family has at least one member")
    return alpha / m


def bootstrap_p_values(estimate: np.ndarray, replicates: np.ndarray, df: int | None = None) -> np.ndarray:
    """Two-sided p-values for H0: parameter = 0 from the bootstrap SE: 2 (1 - Phi(|t|)),
    t = estimate / sd(replicates) (ddof 1, NaN replicates ignored); with ``df``, Student's t
    with df degrees of freedom instead of Phi. With few uneven installs even installs - 1
    is too many: the bootstrap SE is estimated from the few installs that carry most units,
    and Holm's FWER over 18 gaps was 0.068 (A/A) and 0.061 (planted) over 2,000 studies of
    the paper's world at t(84) (``bench/README.md``, "Issue 38"); ``family_tests`` is what
    a report's family uses.

    Why the normal approximation rather than test inversion of the percentile interval: the
    family needs small p-values resolved. Holm's first step over 18 gaps compares with
    0.05/18 = 0.0028 and BH's with 0.05 k/18; inverting 200 replicates cannot give a
    two-sided p below 2/201 = 0.00995 (``percentile_p_values``), so every gap with all
    replicates on one side would tie at that floor and none would pass Holm's first step.
    The bootstrap SE is estimated well from 200 replicates (its relative error is about
    1/sqrt(2 x 200) = 5%), and the gaps are smooth functions of install sums whose sampling
    distribution is close to normal at the paper's scale (checked by the coverage of the
    percentile intervals in ``bench/stats_validation.py``)."""
    est = np.asarray(estimate, dtype=np.float64)
    reps = np.asarray(replicates, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.nanstd(reps, axis=0, ddof=1)
        z = np.abs(est) / se
        tail = 2 * (norm.sf(z) if df is None else student_t.sf(z, df))
        return np.where(np.isfinite(z) | (se == 0), tail, np.nan)


def percentile_p_values(replicates: np.ndarray) -> np.ndarray:
    """Two-sided p-values by inverting the percentile interval: 2 min(1 + #{r <= 0},
    1 + #{r >= 0}) / (B + 1), capped at 1, B the finite replicates. It is the smallest alpha
    at which the percentile interval excludes 0, up to the replicates' resolution: the
    floor is 2/(B + 1) (0.00995 at 200 replicates), so it cannot serve a family of more
    than a couple of hypotheses (see ``bootstrap_p_values``)."""
    reps = np.asarray(replicates, dtype=np.float64)
    finite = np.isfinite(reps)
    b = finite.sum(axis=0)
    below = (finite & (reps <= 0)).sum(axis=0)
    above = (finite & (reps >= 0)).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.minimum(1.0, 2 * (1 + np.minimum(below, above)) / (b + 1))
    return np.where(b > 0, p, np.nan)
