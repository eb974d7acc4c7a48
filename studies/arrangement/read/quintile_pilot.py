"""The quintile boundaries a pilot period gives (issue 38, ``plan freeze-quintiles``).

Per family (every page, or the pages without ads or box), the exact units-weighted 0.2, 0.4,
0.6 and 0.8 quantiles of ``n_candidates_bucket`` over the units the plan's preprocessing keeps
(its engine and burn-in, identified installs) on the pilot's days: the moving boundaries a
report of those days would have drawn, to be frozen into the plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from core.store import Store
from studies.arrangement.quintiles import FAMILIES
from studies.arrangement.selection import ReportQuery


@dataclass(frozen=True)
class PilotCuts:
    kept: tuple[int, ...]
    units: int
    """The units the cut points weigh (0: the pilot has none with a figure)."""


async def pilot_quintiles(
    store: Store, experiment_id: str, engine: str, burn_in_days: int, since: date | None, until: date
) -> dict[str, PilotCuts]:
    """Per family (``FAMILIES``' values), the pilot's cut points and units."""
    out = {}
    for prefix, family in FAMILIES.items():
        query = ReportQuery(
            experiment_id,
            engine,
            burn_in_days=burn_in_days,
            subset=f"{prefix}n_candidates_q1",
            since=since,
            until=until,
        )
        cuts, units = (await store.query(query.quintile_pilot_sql(), read_only=True)).rows[0]
        out[family] = PilotCuts(tuple(int(b) for b in cuts), int(units or 0))
    return out
