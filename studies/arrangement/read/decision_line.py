"""The decision line: per arm, the first day the confidence sequence for delta_1 excluded zero.

Read only: the complete days' looks the worker stored (``write/looks.py``), and the looks of
the days after them computed here in memory, never stored.
"""

from __future__ import annotations

from datetime import date, timedelta

from analytics.stats.arrangement_table import CONTROL, Look, PerInstallArrays, first_exclusions
from core.store import Store
from studies.arrangement.looks import (
    compute_looks,
    current_looks,
    data_days,
    day_of,
    day_start,
    looks_of,
    read_rows,
    rows_sql,
    selection_key,
    storable,
    stored_looks,
)
from studies.arrangement.selection import ReportQuery


async def stored_so_far(
    store: Store, query: ReportQuery, seed: int, baseline: str
) -> tuple[list[Look], date | None, tuple[date, date] | None]:
    """The looks the worker stored for the selection (none unless it is ``storable``), the
    day they run through, and the data's first and last day (None: no data)."""
    span = await data_days(store, query)
    if span is None or not storable(query):
        return [], None, span
    looks, through = await stored_looks(store, query, selection_key(query, seed, baseline))
    return looks, through, span


async def decision_days(
    store: Store,
    query: ReportQuery,
    seed: int = 0,
    baseline: str = CONTROL,
    totals: PerInstallArrays | None = None,
) -> dict[str, str | None]:
    """Per arm, the first day whose look excluded zero (ISO date), or None (not yet).

    Complete days come from the stored looks (``stored_so_far``); the days after them
    from ``totals`` (the selection's per-install totals up to now, when the caller has
    them, the selection has no end and only today is left), else from the stored totals
    and those days' counts, else (selections never stored) from a pass over every day.
    """
    looks, through, span = await stored_so_far(store, query, seed, baseline)
    if span is None:
        return {}
    first, last = span
    if through is None or through < last:  # days not stored: today, or a selection never stored
        # Only today (and, in the hour after midnight, yesterday, stored once its grace is over)
        # lies after the stored looks: the look of now is the caller's own totals.
        recent = first == last or (through is not None and through >= last - timedelta(days=2))
        if totals is not None and query.until is None and totals.keys.size and recent:
            looks += current_looks(totals, day_start(last), baseline)
        else:  # the stored totals and the days after them, else a pass over every day
            rows = None
            if through is not None:
                selection = selection_key(query, seed, baseline)
                after = through + timedelta(days=1)
                rows = await read_rows(store, rows_sql(query, selection, seed, through, after, last), True)
            if rows is None:
                fresh = await compute_looks(store, query, seed, baseline)
            else:
                fresh = looks_of(rows, baseline)
            looks += [x for x in fresh if through is None or day_of(x.look) > through]
    arms = sorted({x.arm for x in looks})
    found = first_exclusions(looks, arms)
    return {arm: None if day is None else day_of(day).isoformat() for arm, day in found.items()}
