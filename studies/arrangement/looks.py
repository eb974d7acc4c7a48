"""The decision line's looks: what is stored per selection and how a look is computed.

A look at day d evaluates the confidence sequence for delta_1 on every per-install count
up to the end of d. A complete day's look never changes afterwards: live events are
stamped with the moment they arrive, so they only ever land on today. So the worker
stores each complete day's look once (``write/looks.py``: ``agg_arrangement_looks``, with
the per-install totals behind the last one in ``agg_arrangement_look_totals``), and a
reader (``read/decision_line.py``) takes those rows, plus the looks of the days after
them computed in memory. Nothing on the read side writes.

Selections whose looks can move with new data are never stored: the n_candidates
quintiles (their bounds are quantiles of the whole selection), and times of day.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import orjson

from analytics.stats.arrangement_subsets import SUBSETS
from analytics.stats.arrangement_table import CONTROL, Look, PerInstallArrays, sequential_looks
from core.store import Store
from schemas.sql import quote
from studies.arrangement.arrays import arrays_from_arrow
from studies.arrangement.selection import ReportQuery
from studies.arrangement.tables import DAY_S, GRACE_S
from studies.arrangement.tables import LOOK_TOTALS as TOTALS
from studies.arrangement.tables import LOOKS as TABLE


def selection_key(query: ReportQuery, seed: int, baseline: str) -> str:
    """What a stored look was computed for, as text (part of the table's key)."""
    parts = {
        "subset": query.subset,
        "burn_in_days": query.burn_in_days,
        "identified_only": query.identified_only,
        "unit_mode": query.unit_mode,
        "seed": seed,
        "baseline": baseline,
        "since": str(query.since) if query.since else None,
        "until": str(query.until) if query.until else None,
    }
    return orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode()


def storable(query: ReportQuery) -> bool:
    """Looks of this selection stay right once stored (named subsets, whole days)."""
    return query.subset in SUBSETS and not query.fine


def look_where(query: ReportQuery, selection: str) -> str:
    return (
        f"experiment_id = {quote(query.experiment_id)} AND engine = {quote(query.engine)} "
        f"AND selection = {quote(selection)}"
    )


def day_of(moment: int) -> date:
    return datetime.fromtimestamp(moment, UTC).date()


def day_start(day: date) -> int:
    return int(datetime.combine(day, datetime.min.time(), UTC).timestamp())


def last_complete_day(now_s: float) -> date:
    """The last day whose look may be stored at ``now_s``: one over for ``GRACE_S``."""
    return day_of(int(now_s) - GRACE_S) - timedelta(days=1)


def completed_at(day: date) -> int:
    """The first moment (unix seconds) at which ``day`` counts as complete, so its look is
    stored (``last_complete_day`` inverted)."""
    return day_start(day + timedelta(days=1)) + GRACE_S


async def data_days(store: Store, query: ReportQuery) -> tuple[date, date] | None:
    """The first and last day with per-install counts in the study (from the study-wide
    rows: one per install and context, not per event)."""
    result = await store.query(
        "SELECT toUInt32(min(first_slice)), toUInt32(max(last_slice)), count() FROM agg_arrangement_install "
        f"WHERE experiment_id = {quote(query.experiment_id)} AND engine = {quote(query.engine)}",
        read_only=True,
    )
    if not result.rows or not int(result.rows[0][2]):
        return None
    first, last, _ = result.rows[0]
    lo, hi = day_of(int(first)), day_of(int(last))
    if query.since is not None:
        lo = max(lo, query.since if not isinstance(query.since, datetime) else query.since.date())
    if query.until is not None:
        hi = min(hi, query.until if not isinstance(query.until, datetime) else query.until.date())
    return lo, hi


async def stored_looks(store: Store, query: ReportQuery, selection: str) -> tuple[list[Look], date | None]:
    """The stored looks of a selection and the day they were computed through."""
    result = await store.query(
        "SELECT toUInt32(toDateTime(look_day, 'UTC')), arm, installs, delta_low, delta_high "
        f"FROM {TABLE} FINAL WHERE {look_where(query, selection)} ORDER BY look_day, arm",
        read_only=True,
    )
    looks, through = [], None
    for day, arm, installs, low, high in result.rows:
        through = day_of(int(day))
        if arm:
            looks.append(Look(int(day), arm, int(installs), _float(low), _float(high)))
    return looks, through


def _float(value: object) -> float:
    return float("nan") if value is None or value == "nan" else float(value)  # type: ignore[arg-type]


async def compute_looks(
    store: Store, query: ReportQuery, seed: int, baseline: str, through: date | None = None
) -> list[Look]:
    """Every day's look up to ``through`` (inclusive; None: all data), in one pass over the
    per-(day, install, arm) counts (selections whose looks are not stored)."""
    ranged = query if through is None else replace(query, until=through)
    return looks_of(await store.query_arrow(ranged.windows_keys_sql(DAY_S, seed, ranks=1)), baseline)


def looks_of(daily: Any, baseline: str) -> list[Look]:
    if not daily.num_rows:
        return []
    return sequential_looks(arrays_from_arrow(daily, 1), daily.column("window_start").to_numpy(), 1, baseline)


def _days_sql(query: ReportQuery, seed: int, since: date, through: date) -> str:
    """Per (day, install key, arm): units and clicks on c_1 of the days since..through."""
    return replace(query, since=since, until=through).windows_keys_sql(DAY_S, seed, ranks=1)


def _totals_sql(query: ReportQuery, selection: str, through: date) -> str:
    """The stored totals through ``through`` as rows of ``_days_sql`` dated that day, with
    the row that marks them (arm '')."""
    return (
        "SELECT toUInt32(toDateTime(through, 'UTC')) AS window_start, install_key, arm, n_units, c1 "
        f"FROM {TOTALS} FINAL WHERE {look_where(query, selection)} AND through = {quote(through.isoformat())}"
    )


def rows_sql(
    query: ReportQuery, selection: str, seed: int, through: date | None, start: date, end: date
) -> str:
    """The per-(day, install, arm) rows of start..end, after the stored totals through
    ``through`` (and their marker) when it is given."""
    days = _days_sql(query, seed, start, end)
    return days if through is None else f"({_totals_sql(query, selection, through)}) UNION ALL ({days})"


async def read_rows(store: Store, sql: str, after_totals: bool) -> Any | None:
    """The rows of ``_rows_sql`` without the totals' marker; None when the statement read
    totals (``after_totals``) but no marker: the totals were never stored, or a forget or a prune removed
    them meanwhile. The marker is read in the same statement as the totals, so a selection
    whose totals went is never taken for one without installs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = await store.query_arrow(sql)
    if not after_totals:
        return table
    marker = pc.equal(pc.cast(table.column("arm"), pa.string()), "")
    if not pc.any(marker).as_py():
        return None
    return table.filter(pc.invert(marker))


def current_looks(rows: PerInstallArrays, moment: int, baseline: str = CONTROL) -> list[Look]:
    """The look of now from per (install, arm) totals (the report's own rows)."""
    return sequential_looks(rows, np.full(rows.keys.size, moment), 1, baseline)
