"""Sample ratio mismatch: are the units per arm what the allocation promised?"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scipy import stats

SRM_ALPHA = 0.001


@dataclass(frozen=True)
class SrmResult:
    chi2: float
    p_value: float
    units: int

    @property
    def mismatch(self) -> bool:
        return self.p_value < SRM_ALPHA


def srm_test(units_by_arm: Mapping[str, int], weight_by_arm: Mapping[str, float]) -> SrmResult:
    """Chi-square goodness of fit of unit counts against the configured weights.

    Arms with weight but no units count as zero; units in an arm without weight
    are a mismatch by definition (p = 0).
    """
    arms = sorted(set(units_by_arm) | set(weight_by_arm))
    observed = [units_by_arm.get(a, 0) for a in arms]
    total = sum(observed)
    if total == 0:
        return SrmResult(0.0, 1.0, 0)
    if any(units_by_arm.get(a, 0) and not weight_by_arm.get(a) for a in arms):
        return SrmResult(math.inf, 0.0, total)
    weight_total = sum(weight_by_arm.values())
    expected = [total * weight_by_arm.get(a, 0) / weight_total for a in arms]
    kept = [(o, e) for o, e in zip(observed, expected, strict=True) if e > 0]
    if len(kept) < 2:
        return SrmResult(0.0, 1.0, total)
    result = stats.chisquare([o for o, _ in kept], [e for _, e in kept])
    return SrmResult(float(result.statistic), float(result.pvalue), total)
