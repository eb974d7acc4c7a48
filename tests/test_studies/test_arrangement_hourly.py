"""The per-hour replicate sums (studies/arrangement/write/hourly_replicates.py) against a direct
loop, and the hourly timeline (analytics/reports/timeline.py) against Figure 3 computed
window by window from per-install rows, number for number."""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pytest

from analytics.stats.arrangement_table import ArmRow, PerInstallArrays, figure3_arrays
from analytics.stats.bootstrap import install_key, poisson1, unit_uniform, weights_for_keys
from studies.arrangement.answers import flatten
from studies.arrangement.read.timeline import (
    CHUNK_COLUMNS,
    HOUR_S,
    hourly_sql,
    reads_hourly,
    records_from_hourly,
    timeline_from_hourly,
)
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write.hourly_replicates import (
    MAX_KEYS,
    MAX_SPAN_S,
    HourlySums,
    InstallHourRows,
    _chunks,
    hourly_sums,
    hours_of,
)

R, RANKS = 200, 10
ARMS = ("control", "swap_1_2", "hide_box")
T0 = 1_790_000_000 - 1_790_000_000 % HOUR_S


def simulated_rows(
    seed: int, installs: int = 40, hours: int = 5, rows: int = 600
) -> tuple[InstallHourRows, list[str]]:
    """Per (hour, install, arm, age, identified) rows; some installs meet two ages in one
    hour (their events disagreed on install_day), some rows have impressions only."""
    rng = np.random.default_rng(seed)
    ids = [f"install-{seed}-{i}" for i in range(installs)]
    seen: dict[tuple[int, int, int, int, int], int] = {}
    for _ in range(rows):
        i = int(rng.integers(installs))
        age = int(rng.integers(0, 8)) if rng.random() < 0.2 else (i % 8)
        key = (int(rng.integers(hours)), i, int(rng.integers(len(ARMS))), age, int(rng.random() < 0.9))
        seen[key] = seen.get(key, 0) + 1
    keys = sorted(seen)
    n = len(keys)
    units = rng.integers(0, 6, n)
    clicks = np.zeros((n, RANKS))
    for j in range(n):
        clicks[j] = rng.multinomial(int(units[j]), [0.09] * RANKS + [0.1])[:RANKS]
    return (
        InstallHourRows(
            hours=np.array([T0 + k[0] * HOUR_S for k in keys], dtype=np.int64),
            keys=np.array([install_key(ids[k[1]], 0) for k in keys], dtype=np.uint64),
            arm_codes=np.array([k[2] for k in keys], dtype=np.int64),
            ages=np.array([k[3] for k in keys], dtype=np.int64),
            identified=np.array([k[4] for k in keys], dtype=np.int64),
            units=units.astype(np.float64),
            impressions=rng.integers(0, 8, n).astype(np.float64),
            clicks=clicks,
        ),
        ids,
    )


def sums_of(rows: InstallHourRows) -> HourlySums:
    installs = np.unique(rows.keys)
    return hourly_sums(rows, installs, weights_for_keys(installs, R, 0))


def test_hourly_sums_equal_a_direct_loop() -> None:
    rows, ids = simulated_rows(1)
    weight = {
        install_key(i, 0): np.array([poisson1(unit_uniform(i, r, 0)) for r in range(R)]) for i in ids
    }  # the scalar reference, not the vectorized weights the function is given
    expected: dict[tuple[int, int, int, int], dict[str, Any]] = {}
    oldest: dict[tuple[int, int, int, int, str], int] = {}
    for j in range(rows.hours.size):
        group = (int(rows.hours[j]), int(rows.arm_codes[j]), int(rows.ages[j]), int(rows.identified[j]))
        e = expected.setdefault(
            group,
            {
                "units": 0,
                "impressions": 0,
                "clicks": np.zeros(RANKS),
                "rep_units": np.zeros(R),
                "rep_impressions": np.zeros(R),
                "rep_clicks": np.zeros((RANKS, R)),
                "installs_units": 0,
                "installs_impressions": 0,
            },
        )
        w = weight[int(rows.keys[j])]
        e["units"] += rows.units[j]
        e["impressions"] += rows.impressions[j]
        e["clicks"] += rows.clicks[j]
        e["rep_units"] += w * rows.units[j]
        e["rep_impressions"] += w * rows.impressions[j]
        for i in range(RANKS):
            e["rep_clicks"][i] += w * rows.clicks[j, i]
        for column in ("units", "impressions"):
            if getattr(rows, column)[j] > 0:
                context = (
                    int(rows.hours[j]),
                    int(rows.keys[j]),
                    int(rows.arm_codes[j]),
                    int(rows.identified[j]),
                    column,
                )
                oldest[context] = max(oldest.get(context, -1), int(rows.ages[j]))
    for (hour, _, arm, ident, column), age in oldest.items():
        expected[(hour, arm, age, ident)][f"installs_{column}"] += 1

    got = sums_of(rows)
    assert len(got) == len(expected)
    for g in range(len(got)):
        e = expected[(int(got.hours[g]), int(got.arm_codes[g]), int(got.ages[g]), int(got.identified[g]))]
        assert got.units[g] == e["units"] and got.impressions[g] == e["impressions"]
        assert got.clicks[g].tolist() == e["clicks"].tolist()
        assert (got.installs_units[g], got.installs_impressions[g]) == (
            e["installs_units"],
            e["installs_impressions"],
        )
        assert got.rep_units[g].tolist() == e["rep_units"].tolist()
        assert got.rep_impressions[g].tolist() == e["rep_impressions"].tolist()
        # rank-major: [i * 200 + r] is replicate r's clicks on c_(i+1)
        assert got.rep_clicks[g].tolist() == e["rep_clicks"].reshape(-1).tolist()
    assert got.rep_clicks.dtype == np.uint32 and got.rep_clicks.shape == (len(got), RANKS * R)


def test_installs_meeting_two_ages_in_an_hour_count_once_over_any_burn_in() -> None:
    rows, _ = simulated_rows(2)
    got = sums_of(rows)
    for burn_in in range(8):
        for hour in np.unique(rows.hours):
            for arm in range(len(ARMS)):
                picked = (rows.hours == hour) & (rows.arm_codes == arm) & (rows.identified == 1)
                picked &= (rows.ages >= burn_in) & (rows.units > 0)
                mine = (got.hours == hour) & (got.arm_codes == arm) & (got.identified == 1)
                mine &= got.ages >= burn_in
                assert int(got.installs_units[mine].sum()) == np.unique(rows.keys[picked]).size


def test_no_rows_give_no_groups_and_a_missing_weight_is_refused() -> None:
    empty = InstallHourRows(*(np.zeros(0, dtype=np.int64) for _ in range(7)), clicks=np.zeros((0, RANKS)))
    assert len(hourly_sums(empty, np.zeros(0, np.uint64), np.zeros((0, R), np.uint8))) == 0
    rows, _ = simulated_rows(3)
    with pytest.raises(ValueError, match="weights"):
        some = np.unique(rows.keys)[1:]
        hourly_sums(rows, some, weights_for_keys(some, R, 0))


def test_hours_and_chunks() -> None:
    assert hours_of([("e", "g", T0 + 3590), ("e", "g", T0 + 10), ("e", "b", T0 + 3600)]) == {
        ("e", "g", T0),
        ("e", "b", T0 + 3600),
    }
    keys = [("e", "g", T0 + h * HOUR_S) for h in range(60)]
    chunks = _chunks(keys)
    assert [k for c in chunks for k in c] == keys
    assert all(c[-1][2] + HOUR_S - c[0][2] <= MAX_SPAN_S and len(c) <= MAX_KEYS for c in chunks)
    assert len(chunks) == 3


def hourly_table(
    sums: HourlySums, arm_names: list[str], burn_in: int, unit: str, shape: str = "ordered"
) -> pa.Table:
    """What ``hourly_sql`` returns for these groups: the identified rows with age >= burn-in,
    one per (hour, arm, age) ordered by hour and arm, as ClickHouse types them; ``shape``
    "shuffled": the same rows in no order; "summed": one row per (hour, arm)."""
    summed = shape == "summed"
    out: dict[tuple[int, ...], dict[str, Any]] = {}
    for g in np.random.default_rng(1).permutation(len(sums)):
        if sums.identified[g] != 1 or sums.ages[g] < burn_in:
            continue
        age = () if summed else (int(sums.ages[g]),)
        e = out.setdefault(
            (int(sums.hours[g]), arm_names[int(sums.arm_codes[g])], *age),
            {
                "n": 0,
                "c": np.zeros(RANKS, np.uint64),
                "i": 0,
                "ru": np.zeros(R, np.uint64),
                "rc": np.zeros(RANKS * R, np.uint64),
            },
        )
        e["n"] += int(getattr(sums, unit)[g])
        e["c"] += sums.clicks[g]
        e["i"] += int(getattr(sums, f"installs_{unit}")[g])
        e["ru"] += getattr(sums, f"rep_{unit}")[g]
        e["rc"] += sums.rep_clicks[g]
    keys = list(out) if shape == "shuffled" else sorted(out, key=lambda k: (k[0], k[1]))
    return pa.table(
        {
            "window_start": pa.array([k[0] for k in keys], pa.uint32()),
            "arm": pa.array([k[1] for k in keys]).dictionary_encode(),
            "n_units": pa.array([float(out[k]["n"]) for k in keys], pa.float64()),
            "n_clicks": pa.array([out[k]["c"].tolist() for k in keys], pa.list_(pa.uint64())),
            "n_installs": pa.array([out[k]["i"] for k in keys], pa.uint64()),
            "rep_n_units": pa.array([out[k]["ru"].tolist() for k in keys], pa.list_(pa.uint64())),
            "rep_n_clicks": pa.array([out[k]["rc"].tolist() for k in keys], pa.list_(pa.uint64())),
        }
    )


def per_window_figure3(
    rows: InstallHourRows, arm_names: list[str], burn_in: int, unit: str, baseline: str
) -> list[tuple[int, list[ArmRow]]]:
    """Today's path: per (window, install, arm) rows, Figure 3 window by window."""
    keep = (rows.identified == 1) & (rows.ages >= burn_in)
    out = []
    for hour in np.unique(rows.hours[keep]):
        at = keep & (rows.hours == hour)
        cell: dict[tuple[int, int], np.ndarray] = {}
        for j in np.flatnonzero(at):
            values = np.r_[getattr(rows, unit)[j], rows.clicks[j]]
            key = (int(rows.keys[j]), int(rows.arm_codes[j]))
            cell[key] = cell.get(key, np.zeros(RANKS + 1)) + values
        keys = sorted(cell)
        part = PerInstallArrays(
            keys=np.array([k[0] for k in keys], dtype=np.uint64),
            arm_codes=np.array([k[1] for k in keys], dtype=np.int64),
            arm_names=arm_names,
            units=np.array([cell[k][0] for k in keys]),
            clicks=np.array([cell[k][1:] for k in keys]),
        )
        out.append((int(hour), figure3_arrays(part, RANKS, R, 0, baseline=baseline)))
    return out


def exact(windows: list[tuple[int, list[ArmRow]]]) -> list[Any]:
    """Every number of a timeline, NaN as a string (NaN != NaN), floats compared exactly."""

    def value(x: float) -> float | str:
        return "nan" if math.isnan(x) else x

    return [
        (
            start,
            r.arm,
            r.units,
            r.installs,
            [
                [(value(e.value), value(e.ci_low), value(e.ci_high)) for e in s]
                for s in (r.ctr, r.delta, r.beta)
            ],
        )
        for start, table in windows
        for r in table
    ]


@pytest.mark.parametrize(
    ("seed", "installs", "burn_in", "unit", "baseline"),
    [
        (4, 40, 0, "units", "control"),  # few installs: NaN replicates, arms missing from hours
        (5, 300, 4, "units", "control"),
        (6, 300, 7, "impressions", "swap_1_2"),
        (7, 300, 2, "units", "no-such-arm"),
    ],
)
@pytest.mark.parametrize("shape", ["ordered", "shuffled", "summed"])
def test_hourly_timeline_equals_figure3_window_by_window(
    seed: int, installs: int, burn_in: int, unit: str, baseline: str, shape: str
) -> None:
    rows, _ = simulated_rows(seed, installs=installs, hours=8, rows=installs * 12)
    names = list(ARMS)
    table = hourly_table(sums_of(rows), names, burn_in, unit, shape)
    fast = timeline_from_hourly(table, baseline)
    assert fast and exact(fast) == exact(per_window_figure3(rows, names, burn_in, unit, baseline))
    # the board's document, built from the arrays: flatten's records, key order included
    records = records_from_hourly(table, baseline)
    want = [(start, flatten(t)) for start, t in fast]
    assert orjson.dumps(records) == orjson.dumps(want)


def test_many_windows_split_into_blocks_give_the_same_intervals() -> None:
    rows, _ = simulated_rows(8, installs=200, hours=CHUNK_COLUMNS // RANKS * 2 + 3, rows=6000)
    names = list(ARMS)
    table = hourly_table(sums_of(rows), names, 0, "units")
    fast = timeline_from_hourly(table)
    assert len(fast) > CHUNK_COLUMNS // RANKS
    assert orjson.dumps(records_from_hourly(table)) == orjson.dumps([(s, flatten(t)) for s, t in fast])
    assert exact(fast) == exact(per_window_figure3(rows, names, 0, "units", "control"))


@pytest.mark.parametrize(
    ("changes", "window", "seed", "hourly"),
    [
        ({}, 3600, 0, True),
        ({"burn_in_days": 0, "unit_mode": "impression"}, 3600, 0, True),
        ({"since": date(2026, 11, 1), "until": date(2026, 11, 3)}, 3600, 0, True),
        ({"since": datetime(2026, 11, 1, 9), "until": datetime(2026, 11, 1, 17)}, 3600, 0, True),
        ({}, 86400, 0, False),
        ({}, 3600, 1, False),
        ({"burn_in_days": 8}, 3600, 0, False),
        ({"identified_only": False}, 3600, 0, False),
        ({"subset": "box"}, 3600, 0, False),
        ({"since": datetime(2026, 11, 1, 9, 30)}, 3600, 0, False),
        ({"until": datetime(2026, 11, 1, 9, 0, 10)}, 3600, 0, False),
    ],
)
def test_which_timelines_read_the_hourly_table(
    changes: dict[str, Any], window: int, seed: int, hourly: bool
) -> None:
    assert reads_hourly(ReportQuery("e", **changes), window, seed) is hourly


def test_hourly_sql_reads_whole_hours_of_the_kept_rows() -> None:
    sql = hourly_sql(
        ReportQuery("e", since=date(2026, 11, 1), until=date(2026, 11, 3), unit_mode="impression")
    )
    assert "FROM agg_arrangement_replicates_1h FINAL" in sql
    assert "identified = 1 AND install_age_days >= 4" in sql
    assert "hour_start >= toDateTime('2026-11-01 00:00:00', 'UTC')" in sql
    assert "hour_start < toDateTime('2026-11-04 00:00:00', 'UTC')" in sql  # until: its whole day
    assert "installs_impressions AS n_installs" in sql and "rep_impressions AS rep_n_units" in sql


def test_sum_rows_equals_adding_each_row_to_its_group() -> None:
    """Rows side by side (the statement's order), in reverse and in no order."""
    from studies.arrangement.read.timeline import _sum_rows

    rng = np.random.default_rng(11)
    for size in (1, 7, 500):
        group = np.sort(rng.integers(0, size, size * 3))
        group = np.searchsorted(np.unique(group), group)  # every group 0..n-1 has rows
        n = int(group.max()) + 1
        values = rng.integers(0, 2**32 - 1, (group.size, 40), dtype=np.uint64).astype(np.uint32)
        want = np.zeros((n, 40))
        np.add.at(want, group, values.astype(np.float64))
        for order in (np.arange(group.size), np.arange(group.size)[::-1], rng.permutation(group.size)):
            assert np.array_equal(_sum_rows(values[order], group[order], n), want)
