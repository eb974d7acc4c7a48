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
from analytics.stats.bootstrap import install_key, percentile_interval, weights_for_keys

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
    clicks = np.zeros((len(rows), ranks))
    for n, r in enumerate(rows):
        got = np.asarray(r.clicks[:ranks], dtype=float)
        clicks[n, : got.size] = got
    names = sorted({r.arm for r in rows})
    code = {a: n for n, a in enumerate(names)}
    return figure3_arrays(
        PerInstallArrays(
            keys=np.fromiter((install_key(r.install_id, seed) for r in rows), np.uint64, len(rows)),
            arm_codes=np.fromiter((code[r.arm] for r in rows), np.int64, len(rows)),
            arm_names=names,
            units=np.fromiter((r.units for r in rows), float, len(rows)),
            clicks=clicks,
        ),
        ranks,
        replicates,
        seed,
        level,
        baseline,
    )


@dataclass(frozen=True)
class PerInstallArrays:
    """Per (install, arm) rows as columns: the install's ``install_key`` under the seed, the
    arm as a code into ``arm_names``, units and clicks on c_1..c_k ([row, rank])."""

    keys: np.ndarray
    arm_codes: np.ndarray
    arm_names: Sequence[str]
    units: np.ndarray
    clicks: np.ndarray


def figure3_arrays(
    rows: PerInstallArrays,
    ranks: int = 6,
    replicates: int = 200,
    seed: int = 0,
    level: float = 0.95,
    baseline: str = CONTROL,
) -> list[ArmRow]:
    """``figure3`` on columns. Per install and arm, units and clicks are bincounts into one
    matrix [install, arm x (units, c_1..c_k)]; every replicate sum of every arm is then one
    matrix product with the weights [install, replicate]."""
    installs, at = np.unique(rows.keys, return_inverse=True)
    n, n_arms, width = installs.size, len(rows.arm_names), ranks + 1
    cell = at * n_arms + rows.arm_codes
    values = np.column_stack([rows.units, rows.clicks[:, :ranks]])
    sums = np.stack(
        [np.bincount(cell, weights=values[:, j], minlength=n * n_arms) for j in range(width)], axis=1
    )
    per_install = sums.reshape(n, n_arms * width)  # columns: arm-major, then units, c_1..c_k
    w = weights_for_keys(installs, replicates, seed).astype(np.float64)  # [install, replicate]
    replicated = (w.T @ per_install).reshape(replicates, n_arms, width)
    totals = per_install.sum(axis=0).reshape(n_arms, width)
    index = {rows.arm_names[a]: int(a) for a in np.unique(rows.arm_codes)}
    arms = sorted(index, key=lambda name: (name != baseline, name))

    point = {a: _ratio(totals[index[a], 1:], np.full(ranks, totals[index[a], 0])) for a in arms}
    boot = {a: _ratio(replicated[:, index[a], 1:], replicated[:, index[a], :1]) for a in arms}

    out = []
    for a in arms:
        units = per_install[:, index[a] * width]
        row = ArmRow(a, int(units.sum()), int((units > 0).sum()))
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
