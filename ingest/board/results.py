"""Computed reports kept while the study's data has not changed.

A finished study, or one between batches, gives the same report every time it is asked
for; the board refreshes its panels every few seconds and analysts run the same report
again. Each result is kept under its parameters and the study's *data version*: the
newest recompute stamp of the study's per-subset rows, the table every write to the
arrangement tables ends with (the worker and an import recompute slices, hours,
installs, then subsets; rows are only ever added, each stamped with its recompute time,
so background merges change the count but not the newest stamp), plus the questionnaire
answers when a report is reweighted, the per-hour replicate sums' newest stamp for a
timeline (the worker settles them on their own, every few seconds) and the last complete
day when it dates the decision line. The version is read before and
after the computation and the result kept only if it did not move, so a result that saw
half of a recompute is never kept under a version that outlives it.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from core.store import Store
from schemas.sql import quote
from studies.arrangement.looks import last_complete_day

KEPT = 64
"""Results kept (least recently used go first); a report of 100k installs is ~100 kB."""


def _install_version_sql(experiment_id: str, engine: str) -> str:
    """The newest stamp of the study's ``all`` rows: every recompute of an install writes
    its ``all`` rows with the stamp of all its rows (one statement, one ``now64``), and
    they lie together in the table's order, a seventh of the study's rows."""
    return (
        "SELECT toString(max(computed_at)) FROM agg_arrangement_install_subset "
        f"WHERE experiment_id = {quote(experiment_id)} AND engine = {quote(engine)} AND subset = 'all'"
    )


def _profiles_version_sql(experiment_id: str) -> str:
    return (
        "SELECT count(), toString(max(received_at)) FROM raw_install_profiles "
        f"WHERE experiment_id = {quote(experiment_id)}"
    )


def _planted_version_sql(experiment_id: str) -> str:
    return (
        "SELECT count(), toString(max(recorded_at)) FROM planted_values "
        f"WHERE experiment_id = {quote(experiment_id)}"
    )


def _hours_version_sql(experiment_id: str, engine: str) -> str:
    return (
        "SELECT toString(max(computed_at)) FROM agg_arrangement_replicates_1h "
        f"WHERE experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    )


async def data_version(
    store: Store,
    experiment_id: str,
    engine: str,
    profiles: bool,
    dated: bool,
    now: float | None = None,
    hours: bool = False,
    planted: bool = False,
) -> tuple[Any, ...]:
    """What a report of this study depends on, cheaply (one pass over the recompute stamps
    of the study's per-subset rows: grows with installs, not events; questionnaire answers
    by count and newest arrival, since an import may add answers received long ago)."""

    async def one(sql: str) -> tuple[Any, ...]:
        rows = (await store.query(sql, read_only=True)).rows
        return tuple(rows[0]) if rows else ()

    version: list[Any] = [await one(_install_version_sql(experiment_id, engine))]
    if hours:  # the timeline's per-hour replicate sums settle on their own, less often
        version.append(await one(_hours_version_sql(experiment_id, engine)))
    if profiles:
        version.append(await one(_profiles_version_sql(experiment_id)))
    if planted:  # a report prints the planted values of a simulated study beside its estimates
        version.append(await one(_planted_version_sql(experiment_id)))
    if dated:  # the decision line's stored looks run through the last complete day
        version.append(last_complete_day(time.time() if now is None else now).isoformat())
    return tuple(version)


class Results:
    """Reports by (parameters, data version)."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._items: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self.hits = self.misses = 0

    async def get(
        self,
        key: tuple[Any, ...],
        version: Callable[[], Awaitable[tuple[Any, ...]]],
        compute: Callable[[], Awaitable[Any]],
    ) -> Any:
        before = await version()
        name = (key, before)
        if name in self._items:
            self._items.move_to_end(name)
            self.hits += 1
            return self._items[name]
        self.misses += 1
        value = await compute()
        if await version() != before:  # data moved while computing: answer, but do not keep
            return value
        self._items[name] = value
        while len(self._items) > self.kept:
            self._items.popitem(last=False)
        return value
