"""The paper's Figure-3 table from per-install counts, with clustered bootstrap CIs.

Input rows are per (install, arm) sums over any time range and subset: units and
clicks on c_1..c_k. Each statistic is computed on the totals, and on every
bootstrap replicate with the install's deterministic Poisson(1) weight (the same
weight for an install in every arm, since one person's clicks are correlated).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from analytics.stats import sequential
from analytics.stats.arrangement import distortion, gap
from analytics.stats.bootstrap import ReplicateWeights, install_key, sorted_unique, weights_for_keys

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
        return {
            "value": json_number(self.value),
            "ci_low": json_number(self.ci_low),
            "ci_high": json_number(self.ci_high),
        }


def json_number(x: float) -> float | None:
    """An estimate's number as reports write it: None for NaN, else rounded to 6 places."""
    return None if math.isnan(x) else round(x, 6)


def json_numbers(values: np.ndarray) -> np.ndarray:
    """``json_number`` of every element, as an object array of the same shape.

    numpy's ``round(x, 6)`` is ``rint(x * 1e6) / 1e6``: the same double as Python's
    ``round`` (the nearest to k / 10^6) whenever both pick the same k, which they do unless
    ``x * 1e6`` lies within its own rounding error of a half-integer, or is too large to
    have a fraction. Those few elements are rounded by Python's ``round``."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = x * 1e6
        off_half = np.abs(scaled - np.floor(scaled) - 0.5)
        doubtful = np.isfinite(x) & ((off_half <= 4 * EPS * np.abs(scaled)) | (np.abs(scaled) >= 2.0**52))
        out = np.round(x, 6).astype(object)
    for i in np.flatnonzero(doubtful).tolist():
        out.flat[i] = round(float(x.flat[i]), 6)
    out[np.isnan(x)] = None
    return out


EPS = float(np.finfo(np.float64).eps)


@dataclass
class ArmRow:
    arm: str
    units: int
    installs: int
    ctr: list[Estimate] = field(default_factory=list)
    delta: list[Estimate] = field(default_factory=list)
    beta: list[Estimate] = field(default_factory=list)


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
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
    weights: np.ndarray | None = None
    """Reweighting: each row's install weight (``analytics/stats/reweight.py``); it multiplies
    the install's counts in the estimates and its Poisson weight in every replicate."""


INTERVALS = ("bootstrap", "sequential")
"""bootstrap: the fixed-horizon 95% clustered bootstrap (valid for one look); sequential:
the anytime-valid confidence sequence (valid at every look, ``analytics/stats/sequential``)."""


def _arms_present(rows: PerInstallArrays) -> dict[str, int]:
    """The arms that have rows, by name, with their code."""
    present = np.flatnonzero(np.bincount(rows.arm_codes, minlength=len(rows.arm_names)))
    return {rows.arm_names[a]: a for a in present.tolist()}


def install_matrix(rows: PerInstallArrays, ranks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The installs (sorted keys), each row's install, and the per-install matrix
    [install, arm x (units, c_1..c_k)] (arm-major, arms as ``rows.arm_codes``), unweighted."""
    installs, at = sorted_unique(rows.keys)
    n, n_arms, width = installs.size, len(rows.arm_names), ranks + 1
    cell = at * n_arms + rows.arm_codes
    sums = np.empty((n * n_arms, width))
    # rows of one (install, arm) add up; a bincount per column, in row order as np.add.at
    # would add them (counts: exact in float64), far cheaper than np.add.at (bench/README.md,
    # "Figures behind the code")
    for j, column in enumerate([rows.units, *(rows.clicks[:, i] for i in range(ranks))]):
        sums[:, j] = np.bincount(cell, weights=column, minlength=n * n_arms)
    return installs, at, sums.reshape(n, n_arms * width)


def arms_present(rows: PerInstallArrays) -> dict[str, int]:
    """The arms that have rows, by name, with their column block in ``install_matrix``."""
    return _arms_present(rows)


def figure3_arrays(
    rows: PerInstallArrays,
    ranks: int = 6,
    replicates: int = 200,
    seed: int = 0,
    level: float = 0.95,
    baseline: str = CONTROL,
    intervals: str = "bootstrap",
    weight_of: Callable[[np.ndarray], np.ndarray] | ReplicateWeights | None = None,
) -> list[ArmRow]:
    """``figure3`` on columns. Per install and arm, units and clicks are bincounts into one
    matrix [install, arm x (units, c_1..c_k)]; every replicate sum of every arm is then one
    matrix product with the weights [install, replicate]. ``weight_of`` gives weight rows
    the caller already holds (a ``ReplicateWeights`` set multiplies without gathering them)."""
    installs, at, per_install = install_matrix(rows, ranks)
    n, n_arms, width = installs.size, len(rows.arm_names), ranks + 1
    raw_units = per_install[:, ::width].copy()
    if rows.weights is not None:
        install_weight = np.zeros(n)
        install_weight[at] = rows.weights
        per_install = per_install * install_weight[:, None]
    totals = per_install.sum(axis=0).reshape(n_arms, width)
    index = _arms_present(rows)
    arms = sorted(index, key=lambda name: (name != baseline, name))
    point = {a: ratio(totals[index[a], 1:], np.full(ranks, totals[index[a], 0])) for a in arms}
    if intervals not in INTERVALS:
        raise ValueError(f"intervals must be one of {INTERVALS}")
    if isinstance(weight_of, ReplicateWeights):
        sums = weight_of.sums(installs, per_install)
    elif weight_of is not None:  # weight rows the caller already holds (a timeline's windows)
        sums = weight_of(installs).T @ per_install
    else:
        sums = weights_for_keys(installs, replicates, seed).astype(np.float64).T @ per_install
    replicated = sums.reshape(replicates, n_arms, width)
    boot = {a: ratio(replicated[:, index[a], 1:], replicated[:, index[a], :1]) for a in arms}
    bounds = _bootstrap_bounds(boot, baseline, level)
    if intervals == "sequential":
        # The sequence, widened where needed to hold the one-look bootstrap interval: a
        # superset of a confidence sequence is one too, and with few installs or very
        # uneven ones the delta method's spread can fall short of the bootstrap's.
        sequence = sequential_bounds(per_install, index, width, baseline, 1 - level)
        bounds = {
            key: [hull(a, b) for a, b in zip(sequence[key], bounds[key], strict=True)] for key in bounds
        }

    out = []
    for a in arms:
        units = raw_units[:, index[a]]
        row = ArmRow(a, int(units.sum()), int((units > 0).sum()))
        for i in range(ranks):
            row.ctr.append(Estimate(float(point[a][i]), *bounds[("ctr", a)][i]))
            if a != baseline and baseline in point:
                d_point = gap(point[a][i], point[baseline][i])
                row.delta.append(Estimate(float(d_point), *bounds[("delta", a)][i]))
                b_point = distortion(point[a][i], point[baseline][i])
                row.beta.append(Estimate(float(b_point), *bounds[("beta", a)][i]))
        out.append(row)
    return out


MIN_INSTALLS = 2
"""An arm with fewer installs has no interval: the bootstrap resamples installs, and with
one every replicate is that install's own ratio (a zero-width interval); the sequence's
spread needs two (docs/method.md, "Cells too thin for an interval")."""
MIN_UNITS = 10
"""An arm with fewer units has no interval either: its ratios move in steps of 1/units or
more, and a percentile interval of so few counts is far from covering 95%."""
RANGES = {"ctr": (0.0, 1.0), "delta": (-1.0, 1.0), "beta": (-math.inf, 1.0)}
"""Where each statistic can lie, given CTRs in [0, 1]: a CTR's interval is cut to [0, 1], a
gap's to [-1, 1] and a distortion's (1 - CTR / CTR(baseline)) to at most 1. The confidence
sequence is a normal approximation and runs past them with few installs."""


def too_few(row: ArmRow) -> bool:
    """An arm with too few installs or units for an interval (``MIN_INSTALLS``, ``MIN_UNITS``)."""
    return row.installs < MIN_INSTALLS or row.units < MIN_UNITS


def within_range(table: list[ArmRow], baseline: str) -> list[ArmRow]:
    """``table`` as a report shows it: every interval cut to its statistic's range
    (``RANGES``, never past the point estimate: a CTR per shown page may exceed 1), and no
    interval where the arm, or for gaps and distortions its baseline, has too few units
    (``too_few``). An interval of no width is no interval either: every replicate agreed,
    because the arm (or its baseline) had no click at that position, or only such clicks, and
    ``0.000 [0.000, 0.000]`` would claim a certainty the data cannot give. Applied once where
    the report's tables are made, so its JSON, CSV and the board agree."""
    base = next((r for r in table if r.arm == baseline), None)
    thin_base = base is None or too_few(base)
    out = []
    for row in table:
        thin = too_few(row)
        out.append(
            ArmRow(
                row.arm,
                row.units,
                row.installs,
                [_within(e, "ctr", thin) for e in row.ctr],
                [_within(e, "delta", thin or thin_base) for e in row.delta],
                [_within(e, "beta", thin or thin_base) for e in row.beta],
            )
        )
    return out


def _within(e: Estimate, kind: str, thin: bool) -> Estimate:
    if thin or math.isnan(e.value) or e.ci_low == e.ci_high:
        return Estimate(e.value, math.nan, math.nan)
    lo, hi = RANGES[kind]
    # max/min keep a NaN bound NaN (it is their first argument)
    return Estimate(e.value, max(e.ci_low, min(lo, e.value)), min(e.ci_high, max(hi, e.value)))


Bounds = dict[tuple[str, str], list[tuple[float, float]]]


def hull(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The smallest interval holding both (NaN bounds are ignored)."""
    lows = [x for x in (a[0], b[0]) if not math.isnan(x)]
    highs = [x for x in (a[1], b[1]) if not math.isnan(x)]
    return (min(lows) if lows else math.nan, max(highs) if highs else math.nan)


def _bootstrap_bounds(boot: dict[str, np.ndarray], baseline: str, level: float) -> Bounds:
    """Percentile intervals of the replicate CTRs, gaps and distortions, NaN replicates
    ignored (as ``percentile_interval`` does): every statistic of every arm in one call."""
    return {
        key: [(float(a), float(b)) for a, b in zip(low.tolist(), high.tolist(), strict=True)]
        for key, (low, high) in bootstrap_bound_arrays(boot, baseline, level).items()
    }


def bootstrap_bound_arrays(
    boot: dict[str, np.ndarray], baseline: str, level: float
) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """``_bootstrap_bounds`` as arrays: per statistic and arm, the lows and highs of every
    column of the replicates [replicate, column]."""
    series: dict[tuple[str, str], np.ndarray] = {}
    for a, reps in boot.items():
        series[("ctr", a)] = reps
        if a == baseline or baseline not in boot:
            continue
        d_boot = reps - boot[baseline]
        with np.errstate(invalid="ignore", divide="ignore"):
            series[("delta", a)] = d_boot
            series[("beta", a)] = np.where(boot[baseline] > 0, -d_boot / boot[baseline], np.nan)
    if not series:
        return {}
    stacked = np.concatenate(list(series.values()), axis=1)  # [replicate, statistic x position]
    alpha = (1 - level) / 2
    lo, hi = finite_quantiles(stacked, (alpha, 1 - alpha))
    out = {}
    start = 0
    for key, values in series.items():
        width = values.shape[1]
        out[key] = (lo[start : start + width], hi[start : start + width])
        start += width
    return out


def finite_quantiles(values: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """``np.nanquantile(values, qs, axis=0)`` for [replicate, column]: each column's
    quantiles of its finite values (NaN where it has none, without a warning), every
    column at once; without NaNs, ``np.quantile``'s numbers exactly (tested).

    nanquantile takes a column at a time in Python when NaNs are present, and a timeline
    whose hours hold few units has NaN replicates in most columns, so it is slow. Here each
    column is sorted once as a contiguous row (NaNs last; faster even than np.quantile,
    which does not skip NaNs; bench/README.md, "Figures behind the code") and
    interpolated at its own count of finite values with numpy's own "linear" rule: the
    virtual index (n - 1) q, its floor and the next, the last value above the range, and
    ``_lerp``'s two-sided formula."""
    ordered = np.sort(values.T, axis=1)  # [column, replicate]
    columns = np.arange(values.shape[1])
    out = np.full((len(qs), values.shape[1]), np.nan)
    if values.shape[0] and np.isnan(ordered[:, -1]).any():  # NaNs sort last: any is in the last place
        n = (~np.isnan(ordered)).sum(axis=1)
    else:
        n = np.full(values.shape[1], values.shape[0])
    some = n > 0
    if not some.all():
        n, columns, ordered = n[some], columns[some], ordered[some]
    rows = np.arange(columns.size)
    for k, q in enumerate(qs):
        virtual = (n - 1) * q
        previous = np.floor(virtual)
        following = previous + 1
        top = virtual >= n - 1
        previous[top], following[top] = n[top] - 1, n[top] - 1
        gamma = virtual - np.where(top, -1.0, previous)  # as numpy's -1 index for the top
        a = ordered[rows, previous.astype(np.intp)]
        b = ordered[rows, following.astype(np.intp)]
        diff = b - a
        value = a + diff * gamma
        upper = gamma >= 0.5
        value[upper] = b[upper] - diff[upper] * (1 - gamma[upper])
        out[k, columns] = value
    return out


def sequential_bounds(
    per_install: np.ndarray, index: dict[str, int], width: int, baseline: str, alpha: float
) -> Bounds:
    """Confidence sequences from each install's influence on the ratios (every install of
    the selection counts, with zeros for arms it did not see).

    The influences are linear in an install's counts: the influence of install j on
    R = sum X / sum U is (X_j - R U_j) / mean(U), and a gap's and a distortion's are
    combinations of two arms' (``sequential.gap_influence``). So each is a row of
    coefficients over the columns, and its sd comes from the columns' Gram matrix
    (``sequential.influence_sd``): far cheaper than the [install, statistic] matrices
    (bench/README.md, "Figures behind the code"), with the same numbers to ~1e-12 (tested
    against them)."""
    n, sums, gram = sequential.column_moments(per_install)
    columns, ranks = per_install.shape[1], width - 1
    ratio, coef = {}, {}
    for a, k in index.items():
        units, clicks = k * width, np.arange(k * width + 1, (k + 1) * width)
        total = sums[units]
        coef[a] = np.zeros((ranks, columns))
        if total <= 0:  # no units: NaN, as ratio_influence gives
            ratio[a] = np.full(ranks, np.nan)
            coef[a][:] = np.nan
            continue
        ratio[a] = sums[clicks] / total
        mean_units = total / n
        coef[a][np.arange(ranks), clicks] = 1 / mean_units
        coef[a][:, units] = -ratio[a] / mean_units
    factor = sequential.half_width_factor(n, alpha)
    out: Bounds = {}

    def pairs(estimate: np.ndarray, rows: np.ndarray) -> list[tuple[float, float]]:
        half = sequential.influence_sd(rows, n, sums, gram) * factor
        with np.errstate(invalid="ignore"):  # NaN or infinite estimates give NaN bounds
            low, high = estimate - half, estimate + half
        return [(float(lo), float(hi)) for lo, hi in zip(low, high, strict=True)]

    for a in index:
        out[("ctr", a)] = pairs(ratio[a], coef[a])
        if a == baseline or baseline not in index:
            continue
        base, mine = ratio[baseline], ratio[a]
        with np.errstate(invalid="ignore", divide="ignore"):
            beta = -(mine - base) / base
            beta_coef = -(coef[a] / base[:, None] - (mine / base**2)[:, None] * coef[baseline])
        out[("delta", a)] = pairs(mine - base, coef[a] - coef[baseline])
        out[("beta", a)] = pairs(beta, beta_coef)
    return out


@dataclass(frozen=True)
class Look:
    """The confidence sequence for delta_1 of one arm, evaluated at one look (e.g. a day)
    on the cumulative counts up to it."""

    look: int
    arm: str
    installs: int
    low: float
    high: float

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def sequential_looks(
    rows: PerInstallArrays, looks: np.ndarray, ranks: int = 1, baseline: str = CONTROL, alpha: float = 0.05
) -> list[Look]:
    """The sequence for delta_1 of every arm at every look, oldest first.

    ``rows`` are per (look, install, arm) counts, ``looks`` the look of each row; the
    sequence is evaluated on the cumulative counts up to each look in turn. A confidence
    sequence may be looked at as often as one likes, so evaluating it at every past look
    after the fact keeps its guarantee.
    """
    installs, at = sorted_unique(rows.keys)
    n_arms, width = len(rows.arm_names), ranks + 1
    cell = at * n_arms + rows.arm_codes
    values = np.column_stack([rows.units, rows.clicks[:, :ranks]])
    cumulative = np.zeros((installs.size * n_arms, width))
    index = _arms_present(rows)
    out: list[Look] = []
    if baseline not in index:
        return out
    if np.any(looks[1:] < looks[:-1]):  # rows of one look side by side (the query orders them)
        order = np.argsort(looks, kind="stable")
        looks, cell, values = looks[order], cell[order], values[order]
    starts = np.flatnonzero(np.r_[True, looks[1:] != looks[:-1]])
    for lo, hi in pairwise([*starts.tolist(), looks.size]):
        np.add.at(cumulative, cell[lo:hi], values[lo:hi])
        wide = cumulative.reshape(installs.size, n_arms * width)
        per_install = wide[(wide[:, ::width] > 0).any(axis=1)]
        bounds = sequential_bounds(per_install, index, width, baseline, alpha)
        for arm in sorted(index):
            if ("delta", arm) in bounds:
                low, high = bounds[("delta", arm)][0]
                out.append(Look(int(looks[lo]), arm, int(per_install.shape[0]), low, high))
    return out


def first_exclusions(looks: Iterable[Look], arms: Iterable[str]) -> dict[str, int | None]:
    """Per arm, the first look at which the sequence excluded zero, or None (not yet)."""
    decided: dict[str, int | None] = dict.fromkeys(arms)
    for look in sorted(looks, key=lambda x: x.look):
        if look.arm in decided and decided[look.arm] is None and look.excludes_zero:
            decided[look.arm] = look.look
    return decided


def sequential_decisions(
    rows: PerInstallArrays, looks: np.ndarray, ranks: int = 1, baseline: str = CONTROL, alpha: float = 0.05
) -> dict[str, int | None]:
    """The decision line: for every arm, the first look (a value of ``looks``, e.g. a day)
    at which the confidence sequence for delta_1 excluded zero, or None (not yet)."""
    arms = [a for a in rows.arm_names if a != baseline]
    return first_exclusions(sequential_looks(rows, looks, ranks, baseline, alpha), arms)
