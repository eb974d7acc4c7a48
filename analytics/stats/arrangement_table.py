"""The paper's Figure-3 table from per-install counts, with clustered bootstrap CIs.

Input rows are per (install, arm) sums over any time range and subset: units and
clicks on c_1..c_k. Each statistic is computed on the totals, and on every
bootstrap replicate with the install's deterministic Poisson(1) weight (the same
weight for an install in every arm, since one person's clicks are correlated).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from analytics.stats.arrangement import distortion, gap
from analytics.stats.bootstrap import percentile_interval, weights

CONTROL = "control"


@dataclass(frozen=True)
class InstallArmCounts:
    install_id: str
    arm: str
    units: float
    clicks: Sequence[float]  # clicks on c_1..c_k


@dataclass
class Estimate:
    value: float
    ci_low: float
    ci_high: float

    def to_json(self) -> dict[str, float | None]:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 6)

        return {"value": clean(self.value), "ci_low": clean(self.ci_low), "ci_high": clean(self.ci_high)}


@dataclass
class ArmRow:
    arm: str
    units: int
    installs: int
    ctr: list[Estimate] = field(default_factory=list)
    delta: list[Estimate] = field(default_factory=list)
    beta: list[Estimate] = field(default_factory=list)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def figure3(
    rows: Iterable[InstallArmCounts],
    ranks: int = 6,
    replicates: int = 200,
    seed: int = 0,
    level: float = 0.95,
    baseline: str = CONTROL,
) -> list[ArmRow]:
    """CTR_i, delta_i and beta_i per arm for i = 1..ranks, each with a percentile CI.

    Gaps are taken against ``baseline`` (control in the paper's Figure 3; for the
    box-subset comparisons of Figure 5, the arm that hides ads and box).
    """
    rows = list(rows)
    installs = sorted({r.install_id for r in rows})
    arms = sorted({r.arm for r in rows}, key=lambda a: (a != baseline, a))
    index = {i: n for n, i in enumerate(installs)}
    units = {a: np.zeros(len(installs)) for a in arms}
    clicks = {a: np.zeros((len(installs), ranks)) for a in arms}
    for r in rows:
        units[r.arm][index[r.install_id]] += r.units
        clicks[r.arm][index[r.install_id], :] += np.asarray(r.clicks[:ranks], dtype=float)
    w = weights(installs, replicates, seed).astype(np.float64)  # [install, replicate]

    point = {a: _ratio(clicks[a].sum(axis=0), np.full(ranks, units[a].sum())) for a in arms}
    boot = {a: _ratio(w.T @ clicks[a], (w.T @ units[a])[:, None]) for a in arms}  # [replicate, rank]

    out = []
    for a in arms:
        row = ArmRow(a, int(units[a].sum()), int((units[a] > 0).sum()))
        for i in range(ranks):
            row.ctr.append(Estimate(float(point[a][i]), *percentile_interval(boot[a][:, i], level)))
            if a != baseline and baseline in point:
                d_point = gap(point[a][i], point[baseline][i])
                d_boot = boot[a][:, i] - boot[baseline][:, i]
                row.delta.append(Estimate(float(d_point), *percentile_interval(d_boot, level)))
                b_point = distortion(point[a][i], point[baseline][i])
                with np.errstate(invalid="ignore", divide="ignore"):
                    b_boot = np.where(boot[baseline][:, i] > 0, -d_boot / boot[baseline][:, i], np.nan)
                row.beta.append(Estimate(float(b_point), *percentile_interval(b_boot, level)))
        out.append(row)
    return out
