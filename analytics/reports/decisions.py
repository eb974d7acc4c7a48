"""The decision line: per arm, the first day the confidence sequence for delta_1 excluded zero.

A look at day d evaluates the sequence on every per-install count up to the end of d. A
complete day's look never changes afterwards: live events are stamped with the moment
they arrive, so they only ever land on today. So each complete day's look is computed
once and stored (``agg_arrangement_looks``, migration 0028), and a report reads those
rows plus the look of now, which is the sequence on its own per-install totals.

The per-install totals behind the last stored look are stored with it
(``agg_arrangement_look_totals``, migration 0029), so the next day's look is those totals
plus one day of slices. A pass over every day of the study cost 33 s at 50M events (20 s
of it the statement, 17.5M per-(day, install, arm) rows) and grew with the study; one day
reads the current month's partition. A study looked at for the first time (after an
import) is passed over a calendar month at a time, carrying the totals, so its memory
is one month's rows. What writes past days forgets the looks and their totals from that
day on: an import (``forget_looks``, then the looks are stored anew) and a worker that
recomputes an old slice (a replay after a long outage).

Selections whose looks can move with new data are never stored: the n_candidates
quintiles (their bounds are quantiles of the whole selection).
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import orjson

from analytics.reports.experiment import ReportQuery, arrays_from_arrow, default_preprocessing
from analytics.stats.arrangement_subsets import SUBSETS
from analytics.stats.arrangement_table import (
    CONTROL,
    Look,
    PerInstallArrays,
    first_exclusions,
    sequential_looks,
)
from core.store import Store
from schemas.sql import quote

log = logging.getLogger(__name__)

DAY_S = 86400
GRACE_S = 3600
"""A day's look is stored once the day has been over for an hour: events received before
midnight that the worker stores a little late still count in it."""
TABLE = "agg_arrangement_looks"
TOTALS = "agg_arrangement_look_totals"
FORGETS = "agg_arrangement_look_forgets"
KEEP_TOTALS_DAYS = 3
"""Totals older than the newest by more than this are dropped. Not at once: a report and
the board extending one selection together must still find the totals they started from."""


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
    return query.subset in SUBSETS and not query._fine


def _where(query: ReportQuery, selection: str) -> str:
    return (
        f"experiment_id = {quote(query.experiment_id)} AND engine = {quote(query.engine)} "
        f"AND selection = {quote(selection)}"
    )


def _day(moment: int) -> date:
    return datetime.fromtimestamp(moment, UTC).date()


def _start(day: date) -> int:
    return int(datetime.combine(day, datetime.min.time(), UTC).timestamp())


def last_complete_day(now_s: float) -> date:
    """The last day whose look may be stored at ``now_s``: one over for ``GRACE_S``."""
    return _day(int(now_s) - GRACE_S) - timedelta(days=1)


def completed_at(day: date) -> int:
    """The first moment (unix seconds) at which ``day`` counts as complete, so its look is
    stored (``last_complete_day`` inverted)."""
    return _start(day + timedelta(days=1)) + GRACE_S


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
    lo, hi = _day(int(first)), _day(int(last))
    if query.since is not None:
        lo = max(lo, query.since if not isinstance(query.since, datetime) else query.since.date())
    if query.until is not None:
        hi = min(hi, query.until if not isinstance(query.until, datetime) else query.until.date())
    return lo, hi


async def stored_looks(store: Store, query: ReportQuery, selection: str) -> tuple[list[Look], date | None]:
    """The stored looks of a selection and the day they were computed through."""
    result = await store.query(
        "SELECT toUInt32(toDateTime(look_day, 'UTC')), arm, installs, delta_low, delta_high "
        f"FROM {TABLE} FINAL WHERE {_where(query, selection)} ORDER BY look_day, arm",
        read_only=True,
    )
    looks, through = [], None
    for day, arm, installs, low, high in result.rows:
        through = _day(int(day))
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
    return _looks(await store.query_arrow(ranged.windows_keys_sql(DAY_S, seed, ranks=1)), baseline)


def _looks(daily: Any, baseline: str) -> list[Look]:
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
        f"FROM {TOTALS} FINAL WHERE {_where(query, selection)} AND through = {quote(through.isoformat())}"
    )


def _rows_sql(
    query: ReportQuery, selection: str, seed: int, through: date | None, start: date, end: date
) -> str:
    """The per-(day, install, arm) rows of start..end, after the stored totals through
    ``through`` (and their marker) when it is given."""
    days = _days_sql(query, seed, start, end)
    return days if through is None else f"({_totals_sql(query, selection, through)}) UNION ALL ({days})"


async def _read_rows(store: Store, sql: str, after_totals: bool) -> Any | None:
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
        sql = _rows_sql(query, selection, seed, through, start, end)
        rows = await _read_rows(store, sql, through is not None)
        if rows is None:
            looks, through = [], None
            continue
        found = _looks(rows, baseline)
        # Read and summed apart: run side by side, each took twice as long (8.7 s against 9.4 s
        # one after the other for a day at 50M events: 3.2 s read, 1.2 s looks, 4.9 s totals).
        await _store_totals(store, query, selection, sql, end, through is not None)
        new = [x for x in found if start <= _day(x.look) <= end]
        await store_looks(store, query, selection, new, end)
        oldest = quote((end - timedelta(days=KEEP_TOTALS_DAYS)).isoformat())
        await store.execute(f"DELETE FROM {TOTALS} WHERE {_where(query, selection)} AND through < {oldest}")
        looks, through = looks + new, end
    forgotten = await _forgotten_since(store, query, started)
    if forgotten is not None and forgotten <= complete:
        log.info("a forget from %s ran while the looks were extended: forgetting again", forgotten)
        await forget_looks(store, query.experiment_id, query.engine, forgotten)
        kept = [x for x in looks if _day(x.look) < forgotten]
        return kept, (forgotten - timedelta(days=1) if forgotten > first else None)
    return looks, through


async def _store_totals(
    store: Store, query: ReportQuery, selection: str, rows: str, through: date, after_totals: bool
) -> None:
    """The per-install totals of ``rows`` (the statement a pass read: its days, after the
    earlier totals and their marker when it went on from them), summed per install key and
    arm by ClickHouse and written for ``through`` on the store's background lane (a day's
    totals take ~5 s at 50M events; the worker's raw rows must not wait behind them).

    The marker comes from the rows: the earlier totals' marker (install key 0, arm '') sums
    to the new one, so totals that a forget removed between the pass's read and this
    statement are written without one and never read (the next pass starts over). A pass
    from the first day writes its marker itself. Summed in numpy from the rows already
    read and sent back as JSON lines, the same totals took 10.2 s (255 MB of JSON)."""
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
                "look_day": _day(day).isoformat(),
                "arm": arm,
                "installs": installs,
                # NaN (a sequence not defined yet) as ClickHouse reads it: JSON null would be 0
                "delta_low": "nan" if np.isnan(low) else low,
                "delta_high": "nan" if np.isnan(high) else high,
                "computed_at": stamp,
            }
        )

    lines = [row(x.look, x.arm, x.installs, x.low, x.high) for x in looks if _day(x.look) <= through]
    lines.append(row(_start(through), "", 0, float("nan"), float("nan")))
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


def current_looks(rows: PerInstallArrays, moment: int, baseline: str = CONTROL) -> list[Look]:
    """The look of now from per (install, arm) totals (the report's own rows)."""
    return sequential_looks(rows, np.full(rows.keys.size, moment), 1, baseline)


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


async def decision_days(
    store: Store,
    query: ReportQuery,
    seed: int = 0,
    baseline: str = CONTROL,
    totals: PerInstallArrays | None = None,
    now: float | None = None,
) -> dict[str, str | None]:
    """Per arm, the first day whose look excluded zero (ISO date), or None (not yet).

    Complete days come from the stored looks (``stored_through``); the days after them
    from ``totals`` (the selection's per-install totals up to now, when the caller has
    them, the selection has no end and only today is left), else from the stored totals
    and those days' counts, else (selections never stored) from a pass over every day.
    """
    looks, through, span = await stored_through(store, query, seed, baseline, now)
    if span is None:
        return {}
    first, last = span
    if through is None or through < last:  # days not stored: today, or a selection never stored
        # Only today (and, in the hour after midnight, yesterday, stored once its grace is over)
        # lies after the stored looks: the look of now is the caller's own totals.
        recent = first == last or (through is not None and through >= last - timedelta(days=2))
        if totals is not None and query.until is None and totals.keys.size and recent:
            looks += current_looks(totals, _start(last), baseline)
        else:  # the stored totals and the days after them, else a pass over every day
            rows = None
            if through is not None:
                selection = selection_key(query, seed, baseline)
                after = through + timedelta(days=1)
                rows = await _read_rows(store, _rows_sql(query, selection, seed, through, after, last), True)
            if rows is None:
                fresh = await compute_looks(store, query, seed, baseline)
            else:
                fresh = _looks(rows, baseline)
            looks += [x for x in fresh if through is None or _day(x.look) > through]
    arms = sorted({x.arm for x in looks})
    found = first_exclusions(looks, arms)
    return {arm: None if day is None else _day(day).isoformat() for arm, day in found.items()}


async def restore_looks(store: Store, experiment_id: str, engine: str) -> None:
    """After past days were written (an import): forget the study's stored looks and store
    those of the selection the board and ``report experiment`` show by default
    (``default_preprocessing``), so neither pays the pass."""
    await forget_looks(store, experiment_id, engine)
    registered = await store.query(
        f"SELECT burn_in_days, unit_mode FROM experiments WHERE experiment_id = {quote(experiment_id)}",
        read_only=True,
    )
    rows = registered.dicts()
    burn_in_days, unit_mode = default_preprocessing(rows[0] if rows else None)
    await stored_through(store, ReportQuery(experiment_id, engine, burn_in_days, unit_mode=unit_mode))
