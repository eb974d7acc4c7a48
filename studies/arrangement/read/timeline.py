"""``report timeline``: one Figure-3 table (c_1..c_10) per window, oldest first.

Two paths, one answer. Hourly windows of the clustered bootstrap's own seed (0) read the
per-hour replicate sums of ``agg_arrangement_replicates_1h`` (migration 0027): the
bootstrap weights an install the same in every window, so a replicate's sums over a
window are the sums of its hours' replicate sums, and the read grows with hours x arms,
not with the events. Every other timeline reads the per-(window, install, arm) rows of
the 10-second slices and bootstraps each window from them. Both give the same numbers:
the sums are of integers (exact in float64), and the ratios and percentiles are taken by
the same helpers (``analytics.stats.arrangement_table``) on the same values.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from itertools import pairwise
from typing import Any

import numpy as np

from analytics.stats.arrangement import distortion, gap
from analytics.stats.arrangement_table import (
    MIN_INSTALLS,
    MIN_UNITS,
    ArmRow,
    Estimate,
    PerInstallArrays,
    bootstrap_bound_arrays,
    figure3_arrays,
    json_numbers,
    ratio,
)
from analytics.stats.bootstrap import weights_for_keys
from core.store import Store
from schemas.sql import quote
from studies.arrangement.answers import flatten, record_keys
from studies.arrangement.arrays import arrays_from_arrow
from studies.arrangement.selection import ReportQuery
from studies.arrangement.tables import (
    AGE_CAP,
    HOUR_S,
    HOURLY_SEED,
    LEVEL,
    MAX_RANKS,
    REPLICATES,
    UNIT_COLUMNS,
)
from studies.arrangement.tables import HOURLY as HOURLY_TABLE

HOURLY_REPLICATES = REPLICATES
HOURLY_RANKS = MAX_RANKS
HOURLY_AGE_CAP = AGE_CAP
"""Ages are kept up to 7 days (7 = seven or more), as in ``agg_arrangement_install``."""
CHUNK_COLUMNS = 512
"""(window, position) columns per ``_bootstrap_bounds`` call: its percentiles run faster on
a block that stays in cache than on all windows at once."""
BOUNDS_THREADS = 2
"""Blocks of percentiles taken at once (the machine's two cores: two blocks side by side
finish sooner than one after the other; bench/README.md, "Figures behind the code")."""


async def run_timeline(
    store: Store, query: ReportQuery, window_s: int, seed: int = 0, baseline: str = "control"
) -> list[tuple[int, list[ArmRow]]]:
    """One Figure-3 table (c_1..c_10) per window, oldest first: from the per-hour replicate
    sums when they hold the answer (``reads_hourly``), else from the 10-second slices."""
    if reads_hourly(query, window_s, seed):
        table = await store.query_arrow(hourly_sql(query))
        return timeline_from_hourly(table, baseline)
    return await _timeline_from_slices(store, query, window_s, seed, baseline)


async def run_timeline_records(
    store: Store, query: ReportQuery, window_s: int, seed: int = 0, baseline: str = "control"
) -> list[tuple[int, list[dict[str, Any]]]]:
    """``run_timeline`` with each table as ``flatten`` gives it (the board's and the
    report route's document): built straight from the arrays when the per-hour replicate
    sums answer (``records_from_hourly``)."""
    if reads_hourly(query, window_s, seed):
        windows = records_from_hourly(await store.query_arrow(hourly_sql(query)), baseline)
    else:
        timeline = await run_timeline(store, query, window_s, seed, baseline)
        windows = [(start, flatten(table)) for start, table in timeline]
    return [(start, without_thin_intervals(records, baseline)) for start, records in windows]


_BOUND_SUFFIXES = ("_ci_low", "_ci_high")


def without_thin_intervals(records: list[dict[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """A window's records with no interval where the report has none (``too_few``: fewer
    than ``MIN_UNITS`` units or ``MIN_INSTALLS`` installs in the arm, or for gaps and
    distortions in the baseline): a window of one install showed the bootstrap's
    zero-width interval. Only thin records are touched (most windows of a long timeline
    are not), so the fast path keeps its speed; its bootstrap intervals are in range already."""

    def thin(record: dict[str, Any]) -> bool:
        return record["units"] < MIN_UNITS or record["installs"] < MIN_INSTALLS

    base = next((r for r in records if r["arm"] == baseline), None)
    thin_base = base is None or thin(base)
    out = []
    for record in records:
        mine = thin(record)
        if mine or thin_base:
            record = {
                k: None if k.endswith(_BOUND_SUFFIXES) and (mine or not k.startswith("ctr_")) else v
                for k, v in record.items()
            }
        out.append(record)
    return out


def reads_hourly(query: ReportQuery, window_s: int, seed: int) -> bool:
    """Whether ``agg_arrangement_replicates_1h`` answers the timeline: hourly windows, the
    stored seed, a burn-in of at most 7 days, identified installs only, the subset 'all',
    and a range (if any) of whole hours (dates are whole days)."""
    return (
        window_s == HOUR_S
        and seed == HOURLY_SEED
        and query.identified_only
        and 0 <= query.burn_in_days <= HOURLY_AGE_CAP
        and query.subset == "all"
        and query.unit_mode in UNIT_COLUMNS
        and _whole_hour(query.since)
        and _whole_hour(query.until)
    )


def _whole_hour(moment: date | datetime | None) -> bool:
    if not isinstance(moment, datetime):
        return True  # absent, or a whole day
    return moment.minute == 0 and moment.second == 0 and moment.microsecond == 0


def hourly_sql(query: ReportQuery) -> str:
    """The per-(hour, arm, age) rows kept by the preprocessing (age >= burn-in, identified):
    point sums, installs and replicate sums, read as Arrow and summed per (hour, arm) by
    ``timeline_from_hourly``."""
    unit = UNIT_COLUMNS[query.unit_mode]
    fine = query.at_slice_resolution()  # since/until as times, until exclusive
    parts = [
        f"experiment_id = {quote(query.experiment_id)}",
        f"engine = {quote(query.engine)}",
        "identified = 1",
        f"install_age_days >= {int(query.burn_in_days)}",
    ]
    if fine.since is not None:
        parts.append(f"hour_start >= toDateTime({quote(_text(fine.since))}, 'UTC')")
    if fine.until is not None:
        parts.append(f"hour_start < toDateTime({quote(_text(fine.until))}, 'UTC')")
    # Not summed here: with ClickHouse's sumForEach over the 2,000-wide arrays the statement
    # took longer than reading the rows as they are (bench/README.md, "Figures behind the
    # code"); numpy sums the rows where they lie (``timeline_from_hourly``).
    return (
        "SELECT toUInt32(hour_start) AS window_start, arm, "
        f"toFloat64({unit}) AS n_units, clicks AS n_clicks, "
        f"installs_{unit} AS n_installs, rep_{unit} AS rep_n_units, "
        "rep_clicks AS rep_n_clicks "
        f"FROM {HOURLY_TABLE} FINAL WHERE {' AND '.join(parts)} "
        "ORDER BY window_start, arm"  # the rows of one (hour, arm) side by side
    )


def _text(moment: date | datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _lists(table: Any, name: str, width: int) -> np.ndarray:
    """A list column of ``width`` integers per row as a matrix [row, width] of its own
    integer type (no copy: the sums are taken in integers, then made float64)."""
    column = table.column(name).combine_chunks()
    values = column.flatten().to_numpy(zero_copy_only=False)
    if values.size != table.num_rows * width:
        raise ValueError(f"{HOURLY_TABLE}: {name} does not hold {width} values per row")
    return values.reshape(table.num_rows, width)


def _sum_rows(values: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    """Rows of ``values`` summed by ``group`` (0..n-1, every group present), as float64
    (integers: exact), one row per group number.

    The statement orders its rows by window and arm, so a group's rows (one per age, one
    to a few) come side by side. Each group's first row is taken, then its second where
    it has one, and so on: a pass per row of the largest group, on 2,000-wide rows faster
    than ``np.add.reduceat`` (bench/README.md, "Figures behind the code")."""
    order = None
    if np.any(group[1:] < group[:-1]):  # a group in more than one run: gather it first
        order = np.argsort(group, kind="stable")
        group = group[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    if starts.size != n:
        raise ValueError("every group 0..n-1 must have rows")
    lengths = np.diff(np.r_[starts, group.size])
    rows = starts if order is None else order[starts]
    out = values[rows].astype(np.float64)
    for k in range(1, int(lengths.max()) if lengths.size else 0):
        more = np.flatnonzero(lengths > k)
        out[more] += values[(starts[more] + k) if order is None else order[starts[more] + k]]
    return out


BoundArrays = dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
"""Per (statistic, arm): the lows and highs of an interval per [window, rank]."""


@dataclass(frozen=True)
class _Hourly:
    """Every window's Figure 3 from the per-hour rows, as arrays: [window, arm] counts,
    [window, arm, rank] point CTRs, and per (statistic, arm) the bounds [window, rank]."""

    starts: np.ndarray
    names: list[str]
    present: np.ndarray
    units: np.ndarray
    installs: np.ndarray
    point: np.ndarray
    bounds: BoundArrays

    def arm_order(self, baseline: str) -> list[int]:
        """The arms as a Figure-3 table lists them: the baseline first, then by name."""
        return sorted(range(len(self.names)), key=lambda a: (self.names[a] != baseline, self.names[a]))


def _hourly(table: Any, baseline: str, ranks: int, replicates: int, level: float) -> _Hourly:
    import pyarrow.compute as pc

    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()
    names: list[str] = arm.dictionary.to_pylist()
    row_codes = arm.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    starts, row_at = np.unique(table.column("window_start").to_numpy(), return_inverse=True)
    n_windows, n_arms = starts.size, len(names)
    # rows of one (window, arm) (one per age) are summed: integers, exact in float64
    cells, cell_of = np.unique(row_at * n_arms + row_codes, return_inverse=True)
    at, codes = np.divmod(cells, n_arms)

    def summed(values: np.ndarray) -> np.ndarray:
        return _sum_rows(values, cell_of, cells.size)

    present = np.zeros((n_windows, n_arms), dtype=bool)
    present[at, codes] = True
    units = np.zeros((n_windows, n_arms))
    units[at, codes] = summed(table.column("n_units").to_numpy().astype(np.float64))
    installs = np.zeros((n_windows, n_arms), dtype=np.int64)
    installs[at, codes] = summed(table.column("n_installs").to_numpy().astype(np.float64))
    clicks = np.zeros((n_windows, n_arms, ranks))
    clicks[at, codes] = summed(_lists(table, "n_clicks", ranks))
    rep_units = np.ones((n_windows, n_arms, replicates))  # arms absent from a window: 1, unused
    rep_units[at, codes] = summed(_lists(table, "rep_n_units", replicates))
    rep_clicks = np.ones((n_windows, n_arms, ranks, replicates))
    rep_clicks[at, codes] = summed(_lists(table, "rep_n_clicks", ranks * replicates)).reshape(
        -1, ranks, replicates
    )

    point = ratio(clicks, units[:, :, None])  # [window, arm, rank]
    # per arm [replicate, window, rank], as figure3_arrays' [replicate, rank] for each window
    boot = {
        names[a]: ratio(rep_clicks[:, a].transpose(2, 0, 1), rep_units[:, a].T[:, :, None])
        for a in range(n_arms)
    }
    bounds = _bounds_by_window(boot, present, names, baseline, level)
    return _Hourly(starts, names, present, units, installs, point, bounds)


def timeline_from_hourly(
    table: Any,
    baseline: str = "control",
    ranks: int = HOURLY_RANKS,
    replicates: int = HOURLY_REPLICATES,
    level: float = LEVEL,
) -> list[tuple[int, list[ArmRow]]]:
    """The rows of ``hourly_sql`` (an Arrow table) as one Figure-3 table per window, as
    ``figure3_arrays`` computes it from per-install rows: the same ratios (``ratio``) and
    percentile intervals (``_bootstrap_bounds``), every window at once."""
    if not table.num_rows:
        return []
    h = _hourly(table, baseline, ranks, replicates, level)
    base = h.names.index(baseline) if baseline in h.names else None
    points: list[list[list[float]]] = h.point.tolist()  # the same doubles, as Python floats
    found = {key: (low.tolist(), high.tolist()) for key, (low, high) in h.bounds.items()}

    def estimates(key: tuple[str, str], w: int, values: list[float]) -> list[Estimate]:
        low, high = found[key]
        return [Estimate(values[i], low[w][i], high[w][i]) for i in range(ranks)]

    out = []
    for w in range(h.starts.size):
        b = base if base is not None and h.present[w, base] else None  # the baseline, if in this window
        rows = []
        for a in (a for a in h.arm_order(baseline) if h.present[w, a]):
            name, mine = h.names[a], points[w][a]
            row = ArmRow(name, int(h.units[w, a]), int(h.installs[w, a]))
            row.ctr = estimates(("ctr", name), w, mine)
            if name != baseline and b is not None:
                theirs = points[w][b]
                row.delta = estimates(("delta", name), w, [gap(mine[i], theirs[i]) for i in range(ranks)])
                row.beta = estimates(
                    ("beta", name), w, [distortion(mine[i], theirs[i]) for i in range(ranks)]
                )
            rows.append(row)
        out.append((int(h.starts[w]), rows))
    return out


def records_from_hourly(
    table: Any,
    baseline: str = "control",
    ranks: int = HOURLY_RANKS,
    replicates: int = HOURLY_REPLICATES,
    level: float = LEVEL,
) -> list[tuple[int, list[dict[str, Any]]]]:
    """``flatten`` of every table of ``timeline_from_hourly``, built from the arrays: the
    same records, key order included (tested), without a Python object per estimate. A
    30-day hourly timeline holds 410k numbers; rounding them one by one took longer than
    computing them."""
    if not table.num_rows:
        return []
    h = _hourly(table, baseline, ranks, replicates, level)
    base = h.names.index(baseline) if baseline in h.names else None

    def triples(name: str, values: np.ndarray, key: tuple[str, str]) -> tuple[list[str], list[list[Any]]]:
        """Per window, the record's keys and numbers for one statistic of one arm."""
        low, high = h.bounds[key]
        stacked = np.stack([values, low, high], axis=2).reshape(values.shape[0], 3 * ranks)
        keys = [k for i in range(1, ranks + 1) for k in record_keys(name, i)]
        return keys, json_numbers(stacked).tolist()

    parts: dict[int, list[tuple[list[str], list[list[Any]]]]] = {}
    for a in range(len(h.names)):
        name = h.names[a]
        parts[a] = [triples("ctr", h.point[:, a], ("ctr", name))]
        if name != baseline and base is not None:
            mine, theirs = h.point[:, a], h.point[:, base]
            with np.errstate(
                invalid="ignore", divide="ignore"
            ):  # as distortion(): NaN without control clicks
                beta = np.where((theirs != 0) & ~np.isnan(theirs), -(mine - theirs) / theirs, np.nan)
            parts[a] += [
                triples("delta", mine - theirs, ("delta", name)),
                triples("beta", beta, ("beta", name)),
            ]
    units, installs = h.units.astype(np.int64).tolist(), h.installs.tolist()
    out = []
    for w in range(h.starts.size):
        with_base = base is not None and bool(h.present[w, base])
        records = []
        for a in (a for a in h.arm_order(baseline) if h.present[w, a]):
            record: dict[str, Any] = {"arm": h.names[a], "units": units[w][a], "installs": installs[w][a]}
            for keys, numbers in parts[a] if with_base else parts[a][:1]:
                record.update(zip(keys, numbers[w], strict=True))
            records.append(record)
        out.append((int(h.starts[w]), records))
    return out


def _bounds_by_window(
    boot: dict[str, np.ndarray], present: np.ndarray, names: list[str], baseline: str, level: float
) -> BoundArrays:
    """``_bootstrap_bounds`` of every window as arrays [window, rank] per statistic and
    arm, from one call per group of (window, position) columns: the percentiles are taken
    column by column, so setting windows side by side changes no interval. The columns
    whose replicates hold a NaN go in a group of their own, since a NaN anywhere makes
    ``_bootstrap_bounds`` take the NaN-aware percentiles (the same numbers, column by
    column, far slower) for the whole call; arms absent from a window hold finite
    placeholders there."""
    replicates, n_windows, ranks = next(iter(boot.values())).shape
    flat = {name: reps.reshape(replicates, n_windows * ranks) for name, reps in boot.items()}
    nan = np.zeros(n_windows * ranks, dtype=bool)
    for a, name in enumerate(names):
        nan |= np.repeat(present[:, a], ranks) & np.isnan(flat[name]).any(axis=0)
    if baseline in flat:  # a distortion is NaN where the baseline's replicate CTR is not > 0
        with np.errstate(invalid="ignore"):
            nan |= np.repeat(present[:, names.index(baseline)], ranks) & ~(flat[baseline] > 0).all(axis=0)
    split = [np.flatnonzero(~nan), np.flatnonzero(nan)]
    groups = [g[i : i + CHUNK_COLUMNS] for g in split for i in range(0, g.size, CHUNK_COLUMNS)]

    def bounds_of(group: np.ndarray) -> BoundArrays:
        return bootstrap_bound_arrays({name: reps[:, group] for name, reps in flat.items()}, baseline, level)

    # numpy lets go of the GIL in the percentiles' partitions, so blocks run side by side
    with ThreadPoolExecutor(max_workers=BOUNDS_THREADS) as pool:
        every = list(pool.map(bounds_of, groups))
    out: BoundArrays = {}
    for group, found in zip(groups, every, strict=True):
        for key, (low, high) in found.items():
            if key not in out:
                out[key] = (np.full(n_windows * ranks, np.nan), np.full(n_windows * ranks, np.nan))
            out[key][0][group], out[key][1][group] = low, high
    shape = (n_windows, ranks)
    return {key: (low.reshape(shape), high.reshape(shape)) for key, (low, high) in out.items()}


async def _timeline_from_slices(
    store: Store, query: ReportQuery, window_s: int, seed: int = 0, baseline: str = "control"
) -> list[tuple[int, list[ArmRow]]]:
    """One Figure-3 table (c_1..c_10) per window from the per-(window, install, arm) rows of
    the 10-second slices, on the columnar path: any window, seed, burn-in and subset."""
    table = await store.query_arrow(query.windows_keys_sql(window_s, seed))
    if not table.num_rows:
        return []
    rows = arrays_from_arrow(table, MAX_RANKS)
    starts = table.column("window_start").to_numpy()
    everyone = np.unique(rows.keys)  # the weights of every install, once for all windows
    all_weights = weights_for_keys(everyone, REPLICATES, seed).astype(np.float64)

    def weight_of(installs: np.ndarray) -> np.ndarray:
        return all_weights[np.searchsorted(everyone, installs)]

    firsts = np.flatnonzero(np.r_[True, starts[1:] != starts[:-1]])  # rows come ordered by window
    bounds = [*firsts.tolist(), len(starts)]
    out = []
    for lo, hi in pairwise(bounds):
        part = PerInstallArrays(
            rows.keys[lo:hi], rows.arm_codes[lo:hi], rows.arm_names, rows.units[lo:hi], rows.clicks[lo:hi]
        )
        table_w = figure3_arrays(part, MAX_RANKS, REPLICATES, seed, baseline=baseline, weight_of=weight_of)
        out.append((int(starts[lo]), table_w))
    return out
