"""The worker's side of the decision line: each complete day's look stored once.

Each day, the worker extends the stored looks of the selection the board and ``report
experiment`` show by default (``keep_looks``) from the stored per-install totals plus one
day of slices (a pass over every day grew with the study: bench/README.md, "Figures behind
the code"; one day reads the current month's partition). A study extended for the first
time (after an import) is passed over a calendar month at a time, carrying the totals, so
its memory is one month's rows. What writes past days forgets the looks and their totals
from that day on: an import (``restore_looks``) and a worker that recomputes an old slice (a
replay after a long outage). Timings: ``bench/README.md`` ("daily look").
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, date, datetime, timedelta

import numpy as np
import orjson

from analytics.stats.arrangement_table import CONTROL, Look
from core.store import Store
from schemas.sql import quote
from studies.arrangement.looks import (
    data_days,
    day_of,
    day_start,
    last_complete_day,
    look_where,
    looks_of,
    read_rows,
    rows_sql,
    selection_key,
    storable,
    stored_looks,
)
from studies.arrangement.selection import ReportQuery, default_preprocessing
from studies.arrangement.tables import LOOK_FORGETS as FORGETS
from studies.arrangement.tables import LOOK_TOTALS as TOTALS
from studies.arrangement.tables import LOOKS as TABLE

log = logging.getLogger(__name__)

KEEP_TOTALS_DAYS = 3
"""Totals older than the newest by more than this are dropped. Not at once: a report and
the board extending one selection together must still find the totals they started from."""


async def _store_now(store: Store) -> str:
    """The store's clock (forgets are stamped by it)."""
    result = await store.query("SELECT toString(now64(6))", read_only=True)
    return str(result.rows[0][0])


async def _forgotten_since(store: Store, query: ReportQuery, moment: str) -> date | None:
    """The earliest day a forget stamped at or after ``moment`` (the store's clock) dropped."""
    result = await store.query(
        f"SELECT count(), toString(min(from_day)) FROM {FORGETS} WHERE experiment_id = "
        f"{quote(query.experiment_id)} AND engine = {quote(query.engine)} "
        f"AND forgotten_at >= toDateTime64({quote(moment)}, 6, 'UTC')",
        read_only=True,
    )
    if not result.rows or not int(result.rows[0][0]):
        return None
    return date.fromisoformat(str(result.rows[0][1]))


def _month_end(day: date) -> date:
    """The last day of ``day``'s month (the slices are partitioned by month)."""
    following = (day.replace(day=1) + timedelta(days=32)).replace(day=1)
    return following - timedelta(days=1)


async def extend_looks(
    store: Store,
    query: ReportQuery,
    selection: str,
    seed: int,
    baseline: str,
    stored: tuple[list[Look], date | None],
    first: date,
    complete: date,
) -> tuple[list[Look], date | None]:
    """The stored looks (``stored``: looks and the day they run through) extended to the
    complete day ``complete``, a calendar month at most per pass; stores what it computed
    and returns the looks and the day they now run through.

    Each pass reads the stored totals (dated the day they run through, so they count
    before the pass's first look) and the pass's days in one statement, evaluates the
    looks of those days, then stores the new totals (the same statement summed per install
    and arm) before the looks, so stored looks always have their totals. Looks whose totals
    are gone (stored before migration 0029, or pruned while another pass ran) are
    computed again from the first day. A forget that ran meanwhile (a replay rewrote a
    past day) may have come after the read: it is done again, and the looks from its day
    on are left to the next call."""
    started = await _store_now(store)
    looks, through = stored
    while through is None or through < complete:
        start = first if through is None else through + timedelta(days=1)
        end = min(complete, _month_end(start))
        sql = rows_sql(query, selection, seed, through, start, end)
        rows = await read_rows(store, sql, through is not None)
        if rows is None:
            looks, through = [], None
            continue
        found = looks_of(rows, baseline)
        # Read and summed apart: run side by side, each slowed down so much that together
        # they saved little over one after the other (bench/README.md, "Figures behind the
        # code").
        await _store_totals(store, query, selection, sql, end, through is not None)
        new = [x for x in found if start <= day_of(x.look) <= end]
        await store_looks(store, query, selection, new, end)
        oldest = quote((end - timedelta(days=KEEP_TOTALS_DAYS)).isoformat())
        await store.execute(
            f"DELETE FROM {TOTALS} WHERE {look_where(query, selection)} AND through < {oldest}"
        )
        looks, through = looks + new, end
    forgotten = await _forgotten_since(store, query, started)
    if forgotten is not None and forgotten <= complete:
        log.info("a forget from %s ran while the looks were extended: forgetting again", forgotten)
        await forget_looks(store, query.experiment_id, query.engine, forgotten)
        kept = [x for x in looks if day_of(x.look) < forgotten]
        return kept, (forgotten - timedelta(days=1) if forgotten > first else None)
    return looks, through


async def _store_totals(
    store: Store, query: ReportQuery, selection: str, rows: str, through: date, after_totals: bool
) -> None:
    """The per-install totals of ``rows`` (the statement a pass read: its days, after the
    earlier totals and their marker when it went on from them), summed per install key and
    arm by ClickHouse and written for ``through`` on the store's background lane (a day's
    totals take seconds on a large study: bench/README.md, "Figures behind the code"; the
    worker's raw rows must not wait behind them).

    The marker comes from the rows: the earlier totals' marker (install key 0, arm '') sums
    to the new one, so totals that a forget removed between the pass's read and this
    statement are written without one and never read (the next pass starts over). A pass
    from the first day writes its marker itself. Summed in numpy from the rows already
    read and sent back as JSON lines, the same totals took longer: ClickHouse sums them
    where they lie and nothing is sent back (bench/README.md, "Figures behind the code")."""
    names = (query.experiment_id, query.engine, selection, through.isoformat())
    key = ", ".join(quote(x) for x in names)
    marker = "" if after_totals else f" UNION ALL SELECT {key}, 0, '', 0, 0, now64(6)"
    await store.execute(
        f"INSERT INTO {TOTALS} (experiment_id, engine, selection, through, install_key, arm, n_units, c1, "
        f"computed_at) SELECT {key}, install_key, arm, sum(n_units), sum(c1), now64(6) "
        f"FROM ({rows}) GROUP BY install_key, arm{marker}",
        background=True,
    )


async def store_looks(
    store: Store, query: ReportQuery, selection: str, looks: list[Look], through: date
) -> None:
    """Keep the looks of complete days and mark the day they run through."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")

    def row(day: int, arm: str, installs: int, low: float, high: float) -> bytes:
        return orjson.dumps(
            {
                "experiment_id": query.experiment_id,
                "engine": query.engine,
                "selection": selection,
                "look_day": day_of(day).isoformat(),
                "arm": arm,
                "installs": installs,
                # NaN (a sequence not defined yet) as ClickHouse reads it: JSON null would be 0
                "delta_low": "nan" if np.isnan(low) else low,
                "delta_high": "nan" if np.isnan(high) else high,
                "computed_at": stamp,
            }
        )

    lines = [row(x.look, x.arm, x.installs, x.low, x.high) for x in looks if day_of(x.look) <= through]
    lines.append(row(day_start(through), "", 0, float("nan"), float("nan")))
    await store.insert_json_rows(TABLE, b"\n".join(lines))


async def forget_looks(store: Store, experiment_id: str, engine: str, from_day: date | None = None) -> None:
    """Drop the stored looks of a study and their totals (from ``from_day`` on; None: all):
    past days were written. The totals go first: looks without their totals are computed
    again."""
    where = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    day = quote((from_day or date(1970, 1, 1)).isoformat())
    await store.execute(f"DELETE FROM {TOTALS} WHERE {where} AND through >= {day}")
    await store.execute(f"DELETE FROM {TABLE} WHERE {where} AND look_day >= {day}")
    # stamped after the deletes: an extension that started before this stamp may have read
    # what they deleted, and forgets again (``extend_looks``)
    await store.execute(
        f"INSERT INTO {FORGETS} (experiment_id, engine, from_day, forgotten_at) "
        f"SELECT {quote(experiment_id)}, {quote(engine)}, {day}, now64(6)"
    )


async def stored_through(
    store: Store, query: ReportQuery, seed: int = 0, baseline: str = CONTROL, now: float | None = None
) -> tuple[list[Look], date | None, tuple[date, date] | None]:
    """The stored looks of the selection, first extended (and stored) through its last
    complete day when it is ``storable``; the day they run through; the data's first and
    last day (None: no data)."""
    span = await data_days(store, query)
    if span is None:
        return [], None, None
    first, last = span
    now_s = time.time() if now is None else now
    complete = min(last, last_complete_day(now_s))
    if not storable(query) or complete < first:
        return [], None, span
    selection = selection_key(query, seed, baseline)
    looks, through = await stored_looks(store, query, selection)
    if through is None or through < complete:
        looks, through = await extend_looks(
            store, query, selection, seed, baseline, (looks, through), first, complete
        )
    return looks, through, span


async def default_query(store: Store, experiment_id: str, engine: str) -> ReportQuery:
    """The selection the board and ``report experiment`` show unless asked otherwise: the
    registered burn-in and unit mode (``default_preprocessing``), every unit, identified."""
    registered = await store.query(
        f"SELECT burn_in_days, unit_mode FROM experiments WHERE experiment_id = {quote(experiment_id)}",
        read_only=True,
    )
    rows = registered.dicts()
    burn_in_days, unit_mode = default_preprocessing(rows[0] if rows else None)
    return ReportQuery(experiment_id, engine, burn_in_days, unit_mode=unit_mode)


async def restore_looks(store: Store, experiment_id: str, engine: str) -> None:
    """After past days were written (an import): forget the study's stored looks and store
    those of the default selection (``default_query``) anew, so no reader pays the pass."""
    await forget_looks(store, experiment_id, engine)
    await stored_through(store, await default_query(store, experiment_id, engine))


STUDIES_SQL = "SELECT DISTINCT experiment_id, engine FROM agg_arrangement_install ORDER BY ALL"


async def keep_looks(store: Store, now: float | None = None) -> int:
    """The worker's periodic step: extend and store the looks of every study's default
    selection through its last complete day (a study whose looks are current costs two
    small reads). Returns how many studies' looks were extended. Readers never store
    looks: what they find missing they compute in memory (``read/decision_line.py``)."""
    found = await store.query(STUDIES_SQL, read_only=True)
    extended = 0
    for experiment_id, engine in found.rows:
        query = await default_query(store, str(experiment_id), str(engine))
        _, before = await stored_looks(store, query, selection_key(query, 0, CONTROL))
        _, through, _ = await stored_through(store, query, now=now)
        extended += through is not None and through != before
    return extended
