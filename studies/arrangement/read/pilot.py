"""A pilot's data as the study planner's world (issue 38: ``auditstream plan size --pilot``).

A pilot is a selection of an experiment (an engine, optionally whole days) read after the
preprocessing a report of it uses (its analysis plan's burn-in and unit mode, else its
registration's): the units and the clicks at c_1..c_rank per (install, arm), from the rows a
report reads (``ReportQuery.per_install_keys_sql``, ``arrays.report_arrays``), the days it
spans (its first and last day with units), and the arms' registered weights.
``planner.world_from_pilot`` turns them into the ``World`` the planner scales to a planned
study: clicks per install-day, control CTR and the arm's gap at the rank, the between-install
SD of the control CTR and the activity's coefficient of variation (method of moments,
``docs/variance-reduction.md``, "The planner's variance").

Clicks per install-day are the mean units per install over the span: an install that joined
late counts its units over every day of it, so a pilot that is still recruiting understates
the rate of the installs it has (the planner then asks for more days than needed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

from analytics.stats.arrangement_table import PerInstallArrays
from analytics.stats.bootstrap import sorted_unique
from analytics.stats.planner import World, world_from_pilot
from core.store import Store
from schemas.sql import quote
from studies.arrangement.arrays import report_arrays
from studies.arrangement.selection import ReportQuery

SEED = 0
"""The installs' keys (``install_key``) only tell installs apart here: any seed would do."""


@dataclass(frozen=True)
class PilotCounts:
    """Per-install counts of the registered arms (``arms`` order): units [install, arm] and
    clicks on c_1..c_k [install, arm, rank]; installs without units are left out."""

    arms: tuple[str, ...]
    units: np.ndarray
    clicks: np.ndarray
    first_day: date | None
    last_day: date | None

    @property
    def installs(self) -> int:
        return int(self.units.shape[0])

    @property
    def days(self) -> int:
        """Days from the first to the last day with units, both counted (0: no units)."""
        if self.first_day is None or self.last_day is None:
            return 0
        return (self.last_day - self.first_day).days + 1

    def arm_units(self, arm: str) -> float:
        return float(self.units[:, self.arms.index(arm)].sum()) if arm in self.arms else 0.0


def days_sql(query: ReportQuery) -> str:
    """The first and last day with units of the selection after preprocessing (the burn-in
    and identification rules of ``ReportQuery``), and how many rows hold units."""
    where = [
        f"experiment_id = {quote(query.experiment_id)}",
        f"engine = {quote(query.engine)}",
        f"install_age_days >= {int(query.burn_in_days)}",
        f"{query.unit_column} > 0",
    ]
    if query.identified_only:
        where.append("identified = 1")
    if query.since is not None:
        where.append(f"day >= {quote(query.since.isoformat())}")
    if query.until is not None:
        where.append(f"day <= {quote(query.until.isoformat())}")
    return (
        "SELECT toString(min(day)) AS first_day, toString(max(day)) AS last_day, count() AS n_rows "
        f"FROM arrangement_install_day WHERE {' AND '.join(where)}"
    )


def pilot_matrices(rows: PerInstallArrays, arms: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (install, arm) summed into [install, arm] units and [install, arm, rank]
    clicks over ``arms`` (rows of another arm are left out, and installs without units)."""
    installs, at = sorted_unique(rows.keys)
    column = np.array([arms.index(a) if a in arms else -1 for a in rows.arm_names], dtype=np.int64)
    code = column[rows.arm_codes]
    keep = code >= 0
    cell = at[keep] * len(arms) + code[keep]
    size = installs.size * len(arms)
    units = np.bincount(cell, weights=rows.units[keep], minlength=size).reshape(installs.size, len(arms))
    ranks = rows.clicks.shape[1]
    clicks = np.zeros((installs.size, len(arms), ranks))
    for r in range(ranks):
        summed = np.bincount(cell, weights=rows.clicks[keep, r], minlength=size)
        clicks[:, :, r] = summed.reshape(installs.size, len(arms))
    present = units.sum(axis=1) > 0
    return units[present], clicks[present]


async def read_pilot(store: Store, query: ReportQuery, arms: Sequence[str], ranks: int) -> PilotCounts:
    """The selection's per-install counts of ``arms`` at c_1..c_ranks, and its span of days."""
    import asyncio

    table, span = await asyncio.gather(
        store.query_arrow(query.per_install_keys_sql(SEED)),
        store.query(days_sql(query), read_only=True),
    )
    first, last, n_rows = span.rows[0]
    if not table.num_rows or not int(n_rows):
        empty = np.zeros((0, len(arms)))
        return PilotCounts(tuple(arms), empty, np.zeros((0, len(arms), ranks)), None, None)
    units, clicks = pilot_matrices(report_arrays(table, ranks)[0], arms)
    return PilotCounts(
        tuple(arms), units, clicks, date.fromisoformat(str(first)), date.fromisoformat(str(last))
    )


def pilot_world(
    counts: PilotCounts, weights: Mapping[str, float], arm: str, baseline: str, rank: int, model: str
) -> World:
    """``world_from_pilot`` of the counts: the arm against the baseline at c_rank, with the
    registered weights of ``counts.arms``, over the pilot's days."""
    w = np.array([weights[a] for a in counts.arms], dtype=np.float64)
    return world_from_pilot(
        counts.units,
        counts.clicks,
        w,
        counts.arms.index(arm),
        rank - 1,
        counts.days,
        baseline=counts.arms.index(baseline),
        model=model,
    )
