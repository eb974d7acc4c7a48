"""Per-hour bootstrap replicate sums (``agg_arrangement_replicates_1h``, migration 0027).

The clustered Poisson bootstrap weights an install the same in every window, so each
replicate's sums over a window are the sums of its hours' replicate sums: an hourly
timeline reads a row per hour, arm, age and identified instead of one per install
(``analytics/reports/timeline.py``).

Exactness comes as for the other aggregates: every (experiment, engine, hour) a batch
touched is recomputed whole, from the deduplicated raw rows, before the batch is
acknowledged (``streams/processors/arrangement_rollup.py``), and a bulk import recomputes
every hour of each day it touched (``streams/bulk_import.py``). The hour's per-install rows are read
from ``extension_events``, which is ordered by time, so one hour is one contiguous range;
the 10-second slices are ordered by install, and an hour of all installs would be a scan of
the whole study. They count exactly what the slices count (``slice_rows``). The
weights and sums are computed in numpy (``hourly_sums``); the rows are written with the
ClickHouse time read *before* the hour was read as their version, so of two recomputes of
one hour the one that read later wins; a row the recompute no longer finds gets a
tombstone (``is_deleted``), so a replay or a rebuilt source never leaves a stale row.
Recomputing is idempotent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from analytics.stats.bootstrap import install_key_sql, weights_for_keys
from core.store import Store
from schemas.sql import quote
from studies.arrangement.counting import IMPRESSION, UNIT, organic_click_at
from studies.arrangement.tables import AGE_CAP as HOURLY_AGE_CAP
from studies.arrangement.tables import HOUR_S, HOURLY_SEED
from studies.arrangement.tables import HOURLY as HOURLY_TABLE
from studies.arrangement.tables import MAX_RANKS as HOURLY_RANKS
from studies.arrangement.tables import REPLICATES as HOURLY_REPLICATES

HourKey = tuple[str, str, int]  # experiment_id, engine, hour start (unix seconds)

MAX_SPAN_S = 86400
"""A recompute reads at most a day of raw rows per query (bounds the memory it takes)."""
MAX_KEYS = 500
"""(experiment, engine, hour) keys per query (keeps the statement short)."""
UINT32_MAX = 2**32 - 1


@dataclass(frozen=True)
class InstallHourRows:
    """Per (hour, install, arm, age, identified) counts, as columns: the hour's start (unix
    seconds), the install's ``install_key`` under seed 0, the arm as a code, the age in
    days (capped at 7), identified (0/1), units, impressions and clicks on c_1..c_10."""

    hours: np.ndarray
    keys: np.ndarray
    arm_codes: np.ndarray
    ages: np.ndarray
    identified: np.ndarray
    units: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray  # [row, rank]


@dataclass(frozen=True)
class HourlySums:
    """Per (hour, arm, age, identified) group: the point sums, the installs counted (each
    install once per hour, arm and identified, at its oldest age with units / impressions)
    and the replicate sums; ``rep_clicks`` is rank-major ([group, rank x replicate])."""

    hours: np.ndarray
    arm_codes: np.ndarray
    ages: np.ndarray
    identified: np.ndarray
    units: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    installs_units: np.ndarray
    installs_impressions: np.ndarray
    rep_units: np.ndarray
    rep_impressions: np.ndarray
    rep_clicks: np.ndarray

    def __len__(self) -> int:
        return int(self.hours.size)


def hourly_sums(rows: InstallHourRows, installs: np.ndarray, weights: np.ndarray) -> HourlySums:
    """Sum per-install rows into per (hour, arm, age, identified) groups, the replicate sums
    weighted by ``weights`` ([install, replicate], the rows of ``installs``, sorted keys;
    ``weights_for_keys(installs, 200, 0)``): replicate r's sum of a column over a group is
    sum_rows weights[install, r] * value. Pure; exact (integers summed in float64)."""
    ranks, replicates = rows.clicks.shape[1], weights.shape[1]
    n_arms = int(rows.arm_codes.max()) + 1 if rows.arm_codes.size else 1
    hours = np.asarray(rows.hours, dtype=np.int64)
    ages = np.asarray(rows.ages, dtype=np.int64)
    ident = np.asarray(rows.identified, dtype=np.int64)
    cell = ((hours // HOUR_S * n_arms + rows.arm_codes) * 256 + ages) * 2 + ident
    groups, first, at = np.unique(cell, return_index=True, return_inverse=True)
    n = groups.size
    values = np.column_stack(
        [np.asarray(rows.units, np.float64), np.asarray(rows.impressions, np.float64), rows.clicks]
    ).astype(np.float64)
    point = np.stack(
        [np.bincount(at, weights=values[:, j], minlength=n) for j in range(values.shape[1])], axis=1
    )

    who = np.searchsorted(installs, rows.keys)
    if rows.keys.size and not np.array_equal(installs[np.minimum(who, installs.size - 1)], rows.keys):
        raise ValueError("every row's install needs its weights")
    reps = _replicate_sums(values, at, n, who, weights)
    if reps.size and reps.max() > UINT32_MAX:
        raise ValueError("a replicate sum of one hour does not fit UInt32")

    return HourlySums(
        hours=hours[first],
        arm_codes=np.asarray(rows.arm_codes)[first],
        ages=ages[first],
        identified=ident[first],
        units=point[:, 0].astype(np.uint64),
        impressions=point[:, 1].astype(np.uint64),
        clicks=point[:, 2:].astype(np.uint64),
        installs_units=_oldest_counts(rows, rows.units, at, n),
        installs_impressions=_oldest_counts(rows, rows.impressions, at, n),
        rep_units=reps[:, :, 0].astype(np.uint32),
        rep_impressions=reps[:, :, 1].astype(np.uint32),
        rep_clicks=reps[:, :, 2:].transpose(0, 2, 1).reshape(n, ranks * replicates).astype(np.uint32),
    )


def _replicate_sums(
    values: np.ndarray, group: np.ndarray, n: int, who: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """[group, replicate, column]: sum over the rows i of each group of
    weights[who[i], r] * values[i, column], as one sparse product: per column, a matrix
    [group, install] of the rows' values (mostly zero: a row's clicks are on one position)
    times the weights [install, replicate]. Integers throughout, so exact in float64
    whatever the order of the sums (a loop over groups cost several times more;
    bench/README.md, "Figures behind the code")."""
    from scipy import sparse

    columns = values.shape[1]
    rows, column = np.nonzero(values)
    product = sparse.csr_matrix(
        (values[rows, column], (column * n + group[rows], who[rows])),
        shape=(columns * n, weights.shape[0]),
    ) @ weights.astype(np.float64)  # [column x group, replicate]; duplicate entries are summed
    return np.asarray(product).reshape(columns, n, weights.shape[1]).transpose(1, 2, 0)


def _oldest_counts(rows: InstallHourRows, counts: np.ndarray, at: np.ndarray, n: int) -> np.ndarray:
    """Per group, the installs whose oldest age with ``counts`` > 0 in that hour, arm and
    identified is the group's age (so each install is counted once over the ages >= any
    burn-in)."""
    picked = np.flatnonzero(np.asarray(counts) > 0)
    if not picked.size:
        return np.zeros(n, dtype=np.uint32)
    columns = (rows.ages, rows.identified, rows.arm_codes, rows.keys, rows.hours)
    order = picked[np.lexsort(tuple(np.asarray(c)[picked] for c in columns))]  # by hour, key, arm, ident, age
    same = np.ones(order.size, dtype=bool)  # each row is the same install context as the next
    for column in columns[1:]:
        values = np.asarray(column)[order]
        same[:-1] &= values[1:] == values[:-1]
    same[-1] = False
    oldest = order[~same]  # the last (oldest) age of each install context
    return np.bincount(at[oldest], minlength=n).astype(np.uint32)


def hours_of(slices: Iterable[tuple[str, str, int]]) -> set[HourKey]:
    """The (experiment, engine, hour) of each (experiment, engine, 10-second slice)."""
    return {(e, g, s - s % HOUR_S) for e, g, s in slices}


def install_hours_sql(where: str, lo: int, hi: int) -> str:
    """Per (experiment, engine, hour, install, arm, age, identified) counts of the raw rows
    in [lo, hi) that ``where`` selects, as ``slices`` counts them in the slices
    (the install key as Int64: its bits, readable on every backend's Arrow path)."""
    per_rank = ", ".join(f"countIf({organic_click_at(r)}) AS c{r}" for r in range(1, HOURLY_RANKS + 1))
    age = f"least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), {HOURLY_AGE_CAP})"
    return f"""
SELECT experiment_id, engine, toUInt32(toStartOfHour(received_at)) AS hour_start,
       reinterpretAsInt64({install_key_sql("install_id", HOURLY_SEED)}) AS install_key, arm,
       toUInt8({age}) AS age,
       toUInt8(identified) AS ident, countIf({UNIT}) AS units,
       countIf({IMPRESSION}) AS impressions, {per_rank}
FROM extension_events
WHERE received_at >= toDateTime64({int(lo)}, 3, 'UTC') AND received_at < toDateTime64({int(hi)}, 3, 'UTC')
  AND {where}
GROUP BY experiment_id, engine, hour_start, install_key, arm, age, ident
"""


def stored_keys_sql(where: str, lo: int, hi: int) -> str:
    """The keys of the live rows of the hours in [lo, hi) that ``where`` selects."""
    return (
        "SELECT experiment_id, engine, toUInt32(hour_start) AS hour_start, arm, install_age_days, "
        f"identified FROM {HOURLY_TABLE} FINAL WHERE hour_start >= toDateTime({int(lo)}, 'UTC') "
        f"AND hour_start < toDateTime({int(hi)}, 'UTC') AND {where}"
    )


async def recompute_hours(store: Store, hours: Collection[HourKey]) -> None:
    """Recompute every (experiment, engine, hour) in ``hours`` whole (the worker, after the
    slices of a batch), a day of hours per query at most."""
    for chunk in _chunks(sorted(hours, key=lambda k: (k[2], k[0], k[1]))):
        lo, hi = chunk[0][2], chunk[-1][2] + HOUR_S
        listed = ", ".join(f"({quote(e)}, {quote(g)}, {h})" for e, g, h in chunk)
        await _recompute(
            store,
            lo,
            hi,
            f"(experiment_id, engine, toUInt32(toStartOfHour(received_at))) IN ({listed})",
            f"(experiment_id, engine, toUInt32(hour_start)) IN ({listed})",
        )


async def recompute_study(store: Store, experiment_id: str, engine: str) -> None:
    """Recompute every hour of one experiment and engine, a day per query (the whole study;
    a bulk import recomputes the days it touched, ``recompute_day``)."""
    study = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    spans = []
    for sql in (
        "SELECT count() AS n, intDiv(min(toUnixTimestamp64Milli(received_at)), 1000) AS lo, "
        "intDiv(max(toUnixTimestamp64Milli(received_at)), 1000) AS hi "
        f"FROM raw_extension_events WHERE {study}",
        "SELECT count() AS n, toInt64(toUInt32(min(hour_start))) AS lo, "
        f"toInt64(toUInt32(max(hour_start))) AS hi FROM {HOURLY_TABLE} WHERE {study}",
    ):
        n, lo, hi = (await store.query(sql)).rows[0]
        if int(n):
            spans.append((int(lo), int(hi)))
    if not spans:
        return
    first = min(lo for lo, _ in spans) // MAX_SPAN_S * MAX_SPAN_S
    last = max(hi for _, hi in spans)
    for day in range(first, last + 1, MAX_SPAN_S):
        await _recompute(store, day, day + MAX_SPAN_S, study, study)


async def recompute_day(store: Store, experiment_id: str, engine: str, day_start: int) -> None:
    """Recompute every hour of one experiment, engine and UTC day (a bulk import, after the
    day's raw rows changed): its hours change with its raw rows alone."""
    study = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    await _recompute(store, day_start, day_start + MAX_SPAN_S, study, study)


def _chunks(keys: list[HourKey]) -> list[list[HourKey]]:
    """Runs of keys (sorted by hour) spanning at most ``MAX_SPAN_S`` and ``MAX_KEYS`` keys."""
    out: list[list[HourKey]] = []
    for key in keys:
        if out and len(out[-1]) < MAX_KEYS and key[2] + HOUR_S - out[-1][0][2] <= MAX_SPAN_S:
            out[-1].append(key)
        else:
            out.append([key])
    return out


async def _recompute(store: Store, lo: int, hi: int, raw_where: str, stored_where: str) -> None:
    """Recompute the hours in [lo, hi) that the conditions select, whole: the rows found, and
    a tombstone for each stored row not found any more."""
    stamp = (await store.query("SELECT toString(now64(6, 'UTC'))", read_only=True)).rows[0][0]
    found = await store.query_arrow(install_hours_sql(raw_where, lo, hi))
    stored = await store.query_arrow(stored_keys_sql(stored_where, lo, hi))
    lines = await asyncio.to_thread(_rows_to_store, found, stored, stamp)
    if lines:
        await store.insert_json_rows(HOURLY_TABLE, lines, background=True)  # beside the batches


def _rows_to_store(found: Any, stored: Any, stamp: str) -> bytes:
    """The JSON lines to insert: one row per group of ``found`` (per-install rows of
    ``install_hours_sql``), a tombstone for each row of ``stored`` not among them."""
    lines = []
    live: set[tuple[str, str, int, str, int, int]] = set()
    for (experiment_id, engine), part in _by_study(found):
        rows, arm_names = _install_rows(part)
        installs = np.unique(rows.keys)
        sums = hourly_sums(rows, installs, weights_for_keys(installs, HOURLY_REPLICATES, HOURLY_SEED))
        for i in range(len(sums)):
            key = (
                experiment_id,
                engine,
                int(sums.hours[i]),
                arm_names[int(sums.arm_codes[i])],
                int(sums.ages[i]),
                int(sums.identified[i]),
            )
            live.add(key)
            lines.append(
                orjson.dumps(
                    {
                        **_key_fields(key),
                        "units": int(sums.units[i]),
                        "impressions": int(sums.impressions[i]),
                        "clicks": sums.clicks[i],
                        "installs_units": int(sums.installs_units[i]),
                        "installs_impressions": int(sums.installs_impressions[i]),
                        "rep_units": sums.rep_units[i],
                        "rep_impressions": sums.rep_impressions[i],
                        "rep_clicks": sums.rep_clicks[i],
                        "computed_at": stamp,
                        "is_deleted": 0,
                    },
                    option=orjson.OPT_SERIALIZE_NUMPY,
                )
            )
    for r in stored.to_pylist():
        key = (
            r["experiment_id"],
            r["engine"],
            int(r["hour_start"]),
            r["arm"],
            int(r["install_age_days"]),
            int(r["identified"]),
        )
        if key not in live:
            lines.append(orjson.dumps({**_key_fields(key), **_EMPTY, "computed_at": stamp, "is_deleted": 1}))
    return b"\n".join(lines)


_EMPTY = {
    "units": 0,
    "impressions": 0,
    "clicks": [],
    "installs_units": 0,
    "installs_impressions": 0,
    "rep_units": [],
    "rep_impressions": [],
    "rep_clicks": [],
}


def _key_fields(key: tuple[str, str, int, str, int, int]) -> dict[str, Any]:
    experiment_id, engine, hour_start, arm, age, identified = key
    return {
        "experiment_id": experiment_id,
        "engine": engine,
        "hour_start": hour_start,
        "arm": arm,
        "install_age_days": age,
        "identified": identified,
    }


def _by_study(table: Any) -> list[tuple[tuple[str, str], Any]]:
    """The rows of each (experiment, engine) of an Arrow table."""
    if not table.num_rows:
        return []
    import pyarrow as pa

    experiments = np.asarray(table.column("experiment_id").to_pylist(), dtype=object)
    engines = np.asarray(table.column("engine").to_pylist(), dtype=object)
    out = []
    for experiment_id, engine in sorted(set(zip(experiments.tolist(), engines.tolist(), strict=True))):
        mask = (experiments == experiment_id) & (engines == engine)
        out.append(((experiment_id, engine), table.filter(pa.array(mask))))
    return out


def _install_rows(table: Any) -> tuple[InstallHourRows, list[str]]:
    """The columns of ``install_hours_sql`` as ``InstallHourRows`` and the arm names."""
    import pyarrow.compute as pc

    arm = pc.dictionary_encode(table.column("arm")).combine_chunks()

    def column(name: str, dtype: Any) -> np.ndarray:
        return np.asarray(table.column(name).to_numpy(), dtype=dtype)

    clicks = np.stack([column(f"c{r}", np.float64) for r in range(1, HOURLY_RANKS + 1)], axis=1)
    rows = InstallHourRows(
        hours=column("hour_start", np.int64),
        keys=column("install_key", np.int64).view(np.uint64),
        arm_codes=arm.indices.to_numpy(zero_copy_only=False).astype(np.int64),
        ages=column("age", np.int64),
        identified=column("ident", np.int64),
        units=column("units", np.float64),
        impressions=column("impressions", np.float64),
        clicks=clicks,
    )
    return rows, list(arm.dictionary.to_pylist())
