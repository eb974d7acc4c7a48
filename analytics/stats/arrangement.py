"""The Powermeter estimators of docs/method.md ("Estimators"), on counts.

CTR_i(a) = clicks on c_i in arm a / units of arm a. The performativity gap is
delta_i(a) = CTR_i(a) - CTR_i(control); the algorithmic distortion is
beta_i(a) = -delta_i(a) / CTR_i(control).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist


def ctr(clicks: float, units: float) -> float:
    """Click-through rate; NaN when there are no units (not zero: nothing was measured)."""
    return clicks / units if units > 0 else math.nan


def gap(ctr_arm: float, ctr_control: float) -> float:
    """delta_i(a): how much the arrangement moved the click-through of c_i."""
    return ctr_arm - ctr_control


def distortion(ctr_arm: float, ctr_control: float) -> float:
    """beta_i(a) = -delta_i(a) / CTR_i(control); NaN when control has no clicks on c_i."""
    if not ctr_control or math.isnan(ctr_control):
        return math.nan
    return -gap(ctr_arm, ctr_control) / ctr_control


def performative_power_lower_bound(delta_1_by_arm: Mapping[str, float]) -> float:
    """The paper's Theorem 1, PP >= sup_a delta_1(a), with the paper's delta (control minus
    arm): the largest drop of c_1's click-through, max over arms of -delta_1(a) in this
    project's sign (arm minus control). Every delta must be taken against control; control
    itself and NaNs are skipped."""
    values = [-d for arm, d in delta_1_by_arm.items() if arm != "control" and not math.isnan(d)]
    return max(values) if values else math.nan


Z_95 = NormalDist().inv_cdf(0.975)
"""The normal quantile behind a two-sided 95% interval."""


@dataclass(frozen=True)
class PowerBound:
    """The lower bound on performative power, with a one-sided lower confidence bound."""

    value: float
    """max over arms of -delta_1(a) (point estimates: biased upward, a maximum of noise)."""
    ci_low: float
    """A one-sided lower bound for sup_a -delta_1(a) at ``level`` (``performative_power``)."""
    arm: str | None
    """The arm attaining ``value``."""


def performative_power(
    delta_1_by_arm: Mapping[str, tuple[float, float, float]], level: float = 0.95
) -> PowerBound:
    """``performative_power_lower_bound`` with a lower confidence bound valid for the maximum.

    ``delta_1_by_arm``: per arm, delta_1 against control (arm minus control) and its
    two-sided 95% interval. Each arm's standard error is read off its interval as a normal
    one, se = (high - low) / (2 z_0.975), and its lower bound for -delta_1 is taken at the
    Bonferroni level 1 - (1 - level) / m over the m arms with a finite estimate:
    L_a = -delta_1(a) - z_(1 - (1 - level)/m) se_a. Then max_a L_a > sup_a -delta_1(a) needs
    some L_a above its own arm's value, so it happens with probability at most 1 - level:
    max_a L_a is a valid one-sided bound for the supremum, where the maximum of the point
    estimates is biased upward."""
    usable = {
        arm: d for arm, d in delta_1_by_arm.items() if arm != "control" and not any(math.isnan(x) for x in d)
    }
    if not usable:
        return PowerBound(math.nan, math.nan, None)
    z = NormalDist().inv_cdf(1 - (1 - level) / len(usable))
    lows = {arm: -d - z * (high - low) / (2 * Z_95) for arm, (d, low, high) in usable.items()}
    arm = max(usable, key=lambda a: -usable[a][0])
    return PowerBound(-usable[arm][0], max(lows.values()), arm)


def composition(search_share: float, topk_share: float, beta: float) -> float:
    """The paper's §6 composition: traffic share from search x share in top-k x beta."""
    for name, value in (("search_share", search_share), ("topk_share", topk_share)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be a share between 0 and 1, got {value}")
    return search_share * topk_share * beta


def element_shares(clicks_by_element: Mapping[str, float]) -> dict[str, float]:
    """Fraction of clicks per element type (organic, ad, shopping_box, ssr, other)."""
    total = sum(clicks_by_element.values())
    return {k: (v / total if total else math.nan) for k, v in clicks_by_element.items()}
