"""Study planner: the expected half-width of delta_r and beta_r for one arm, and the study
size for a target half-width or a minimum detectable effect (issue 38).

The variance is the linearised, install-clustered one of ``docs/variance-reduction.md``
("The planner's variance"): per query, the arm-weighted Bernoulli noise; per install, the
spread of the installs' own effects, which grows with the square of an install's units and
is what many clicks from few installs cannot average away. For the estimate of a
statistic with coefficients c_a, c_0 on the two arms' ratio influences,

    N mu^2 Var = mu Q(theta) + mu^2 (1 + cv^2) (sum_b c_b k_b)^2 s^2 + theta^2 G Rbar (1 - Rbar)

with mu the mean units per install, cv the coefficient of variation of installs'
activity, s the between-install SD of the control CTR at r (the install's level l_i, with
p_ib - R_b = k_b l_i), Q the per-query second moment, G = sum_b c_b^2/pi_b - (sum_b c_b)^2,
Rbar the pooled CTR and theta the control variates' coefficient (0: the plain estimator;
the covariate's reliability: ``analytics/stats/variance_reduction.adjusted_table``).

World models: ``proportional`` (each install's CTR under arm a is k_a = R_a/R_0 times
its control CTR: the distortion beta is the same for every install, so installs' gaps
differ) or ``additive`` (every install's gap is delta: k_a = 1); or k_a given as it is
(``World.arm_factor``: the slope of installs' CTR under the arm on their control CTR, as
measured on a simulated world whose installs follow neither model,
``bench/planner_check.py``).

Inputs three ways: ``paper_world`` (the Powermeter numbers of docs/method.md, with the
spread and activity assumptions stated there), ``world_from_pilot`` (a pilot's per-install
counts), or a ``World`` written by hand.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import norm

MODELS = ("proportional", "additive")


@dataclass(frozen=True)
class World:
    """What the planner assumes about a study, for one arm against the baseline at one rank.

    installs, days: the study's size after preprocessing (days an install contributes).
    clicks_per_day: units per install per day (click units after burn-in and
    identification). ctr: baseline CTR at r. delta: the arm's gap at r. ctr_sd:
    between-install SD of the baseline CTR at r (ICC = ctr_sd^2 / (ctr (1 - ctr))).
    arm_weight, baseline_weight, total_weight: registered weights (the paper's design: 1,
    4 and 10). activity_cv: coefficient of variation of installs' expected units (Gamma
    activity; 1 is an exponential spread, panels are uneven). pooled_factor: the pooled
    CTR's level factor kbar = sum_b pi_b k_b over all arms (1 when no arm moves rank r).
    arm_factor: k_a, the slope of an install's CTR under the arm on its control CTR; None:
    the model's (R_a / R_0 proportional, 1 additive)."""

    installs: int
    days: float
    clicks_per_day: float
    ctr: float
    delta: float
    ctr_sd: float
    arm_weight: float = 1.0
    baseline_weight: float = 4.0
    total_weight: float = 10.0
    activity_cv: float = 1.0
    pooled_factor: float = 1.0
    model: str = "proportional"
    arm_factor: float | None = None

    @property
    def units_per_install(self) -> float:
        return self.days * self.clicks_per_day


PAPER_CLICKS = 45_625
PAPER_INSTALLS = 85
PAPER_DAYS = 150
PAPER_CTR_SD = 0.2
"""Assumed between-install SD of the control c1 CTR (the paper gives none): 0.2 is an ICC of
0.16 on 0.43, installs from 'rarely clicks the top result' to 'nearly always does'."""


def paper_world(ctr_sd: float = PAPER_CTR_SD, activity_cv: float = 1.0) -> World:
    """Powermeter, swap 1-2 at c1: 85 installs, 45,625 click units after preprocessing over
    ~5 months (150 days), control CTR 0.43, delta -0.19, weights control 4 and six arms 1.
    pooled_factor: the c1 level factors of the paper's arms (swap 1-2 and hide ads/box plus
    swap 1-2: 0.24/0.43, swap 1-3: 0.16/0.43, the rest 1), mixed with their weights."""
    factors = {  # c1 level factor and weight of each arm
        "control": (1.0, 4),
        "swap_1_2": (0.24 / 0.43, 1),
        "swap_1_3": (0.16 / 0.43, 1),
        "swap_2_3": (1.0, 1),
        "hide_ads_box": (1.0, 1),
        "hide_ads_box_swap_1_2": (0.24 / 0.43, 1),
        "hide_box": (1.0, 1),
    }
    pooled = sum(k * w for k, w in factors.values()) / sum(w for _, w in factors.values())
    return World(
        installs=PAPER_INSTALLS,
        days=PAPER_DAYS,
        clicks_per_day=PAPER_CLICKS / PAPER_INSTALLS / PAPER_DAYS,
        ctr=0.43,
        delta=-0.19,
        ctr_sd=ctr_sd,
        activity_cv=activity_cv,
        pooled_factor=pooled,
    )


def _arm_terms(world: World, statistic: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(c_b, k_b, R_b, pi_b) for b = arm, baseline."""
    if world.model not in MODELS:
        raise ValueError(f"model must be one of {MODELS}")
    r0, ra = world.ctr, world.ctr + world.delta
    if not (0 < r0 < 1 and 0 <= ra <= 1):
        raise ValueError("CTRs must lie in (0, 1)")
    k_a = ra / r0 if world.model == "proportional" else 1.0
    if world.arm_factor is not None:
        k_a = world.arm_factor
    if statistic == "delta":
        c = np.array([1.0, -1.0])
    elif statistic == "beta":
        c = np.array([-1 / r0, ra / r0**2])
    else:
        raise ValueError("statistic is 'delta' or 'beta'")
    pi = np.array([world.arm_weight, world.baseline_weight]) / world.total_weight
    return c, np.array([k_a, 1.0]), np.array([ra, r0]), pi


def variance(world: World, statistic: str = "delta", adjusted: bool = False) -> float:
    """The linearised variance of the estimate of delta_r (or beta_r) of the arm.

    adjusted=False: the plain ratio statistic (theta = 0); True: the design control
    variates as ``variance_reduction.adjusted_table`` applies them (theta="design"):
    coefficient 1 on the install's centred covariate, shrunk by its reliability
    theta = mu s^2 kbar^2 / (mu s^2 kbar^2 + Rbar (1 - Rbar)) (at the mean install's units).
    The variance-minimising theta is mu s^2 kbar H / (G (mu s^2 kbar^2 + Rbar (1 - Rbar)));
    for delta with k_a = kbar = 1 the two agree."""
    c, k, rates, pi = _arm_terms(world, statistic)
    mu, s2, kbar = world.units_per_install, world.ctr_sd**2, world.pooled_factor
    if mu <= 0 or world.installs < 1:
        return math.inf
    csum = c.sum()
    q0 = float(np.sum(c**2 / pi * rates * (1 - rates)))  # per query, theta = 0 (level terms cancel)
    g = float(np.sum(c**2 / pi) - csum**2)
    h = float(np.sum(c**2 / pi * k) - csum * np.sum(c * k))
    pooled = min(max(kbar * world.ctr, 1e-9), 1 - 1e-9)
    noise = pooled * (1 - pooled)
    theta = 0.0
    if adjusted and s2 > 0:  # the design estimator's coefficient: the covariate's reliability
        theta = mu * s2 * kbar**2 / (mu * s2 * kbar**2 + noise)
    per_query = q0 + s2 * (kbar**2 * g * theta**2 - 2 * kbar * h * theta)
    between = (1 + world.activity_cv**2) * float(np.sum(c * k)) ** 2 * s2
    total = mu * per_query + mu**2 * between + theta**2 * g * noise
    return total / (world.installs * mu**2)


def half_width(world: World, statistic: str = "delta", adjusted: bool = False, level: float = 0.95) -> float:
    """Expected half-width of the two-sided interval at ``level``: z sqrt(variance)."""
    return float(norm.ppf(0.5 + level / 2)) * math.sqrt(variance(world, statistic, adjusted))


def minimum_detectable_effect(
    world: World, statistic: str = "delta", adjusted: bool = False, power: float = 0.8, alpha: float = 0.05
) -> float:
    """(z_{1 - alpha/2} + z_power) x SE: the effect a two-sided test at alpha finds with
    ``power``. The SE is taken at the world's own delta (the effect sizes the variance a
    little through the arm's CTR and, under the proportional model, the installs' spread of
    gaps): set ``delta`` to the effect of interest."""
    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    return z * math.sqrt(variance(world, statistic, adjusted))


def _z_for(level: float | None, power: float | None, alpha: float) -> float:
    if power is None:
        return float(norm.ppf(0.5 + (level if level is not None else 0.95) / 2))
    return float(norm.ppf(1 - alpha / 2) + norm.ppf(power))


def installs_needed(
    world: World,
    target: float,
    statistic: str = "delta",
    adjusted: bool = False,
    level: float = 0.95,
    power: float | None = None,
    alpha: float = 0.05,
) -> int:
    """Installs (at the world's days) for a half-width of ``target`` at ``level``, or with
    ``power`` set, for a minimum detectable effect of ``target`` (power at two-sided alpha).
    The variance is inversely proportional to installs, so this is exact for the model."""
    z = _z_for(level, power, alpha)
    one = variance(replace(world, installs=1), statistic, adjusted)
    return max(1, math.ceil(one * (z / target) ** 2))


def days_needed(
    world: World,
    target: float,
    statistic: str = "delta",
    adjusted: bool = False,
    level: float = 0.95,
    power: float | None = None,
    alpha: float = 0.05,
) -> float:
    """Days (at the world's installs) for the same targets, or ``inf`` when no length of
    study reaches it: the spread of installs' own gaps is a floor that only more installs
    lower (variance -> (1 + cv^2) (sum c k)^2 s^2 / N as days grow). Found by bisection
    (the variance decreases in days)."""
    z = _z_for(level, power, alpha)
    goal = (target / z) ** 2

    def var_at(days: float) -> float:
        return variance(replace(world, days=days), statistic, adjusted)

    hi = 1.0
    while var_at(hi) > goal:
        hi *= 2
        if hi > 1e7:
            return math.inf
    lo = 0.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if var_at(mid) > goal:
            lo = mid
        else:
            hi = mid
    return hi


def world_from_pilot(
    units: np.ndarray,
    clicks: np.ndarray,
    arm_weights: np.ndarray,
    arm: int,
    rank: int,
    days: float,
    baseline: int = 0,
    model: str = "proportional",
) -> World:
    """A ``World`` estimated from a pilot's per-install counts (units [install, arm], clicks
    [install, arm, rank]) over ``days``; the planner then scales installs and days.

    Method of moments: ctr and delta from the pooled ratios; clicks_per_day from the mean
    units; activity_cv^2 = var(n)/mean(n)^2 - 1/mean(n) (the Poisson part removed, floored at
    0); the between-install variance of the pooled CTR at r, s_p^2 = (sum n_i (p_i - Rbar)^2 -
    (N - 1) Rbar (1 - Rbar)) / (sum n - sum n^2 / sum n) (the binomial ANOVA estimator,
    floored at 0); ctr_sd = s_p / kbar, kbar = Rbar / R_0 (the level factor of the pooled
    CTR)."""
    u = np.asarray(units, dtype=np.float64)
    y = np.asarray(clicks, dtype=np.float64)[:, :, rank]
    w = np.asarray(arm_weights, dtype=np.float64)
    n = u.sum(axis=1)
    n_inst = n.size
    r0 = y[:, baseline].sum() / u[:, baseline].sum()
    ra = y[:, arm].sum() / u[:, arm].sum()
    s = y.sum(axis=1)
    rbar = s.sum() / n.sum()
    mean_n = n.mean()
    cv2 = max(0.0, n.var(ddof=1) / mean_n**2 - 1 / mean_n) if n_inst > 1 else 0.0
    has = n > 0
    p = s[has] / n[has]
    between = (n[has] * (p - rbar) ** 2).sum() - (has.sum() - 1) * rbar * (1 - rbar)
    scale = n.sum() - (n**2).sum() / n.sum()
    s2 = max(0.0, between / scale) if scale > 0 else 0.0
    kbar = rbar / r0 if r0 > 0 else 1.0
    return World(
        installs=n_inst,
        days=float(days),
        clicks_per_day=float(mean_n / days),
        ctr=float(r0),
        delta=float(ra - r0),
        ctr_sd=float(math.sqrt(s2) / kbar) if kbar > 0 else 0.0,
        arm_weight=float(w[arm]),
        baseline_weight=float(w[baseline]),
        total_weight=float(w.sum()),
        activity_cv=math.sqrt(cv2),
        pooled_factor=float(kbar),
        model=model,
    )
