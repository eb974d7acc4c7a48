"""The Powermeter estimators of docs/method.md ("Estimators"), on counts.

CTR_i(a) = clicks on c_i in arm a / units of arm a. The performativity gap is
delta_i(a) = CTR_i(a) - CTR_i(control); the algorithmic distortion is
beta_i(a) = -delta_i(a) / CTR_i(control).
"""

from __future__ import annotations

import math
from collections.abc import Mapping


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
    """PP >= max over arms of |delta_1(a)| (control excluded, NaNs ignored)."""
    values = [abs(d) for arm, d in delta_1_by_arm.items() if arm != "control" and not math.isnan(d)]
    return max(values) if values else math.nan


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
