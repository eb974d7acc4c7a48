"""Frozen ``n_candidates`` quintile boundaries (issue 38): shared by the plan routes, the
report and the worker.

Once an experiment's analysis plan fixes a family's cut points b1..b4 (given at registration,
or frozen from a pilot by ``plan freeze-quintiles``), quintile k of that family is a page
condition, the page's ``n_candidates_bucket`` in (b_{k-1}, b_k] (b_0 = -1, b_5 = infinity;
within the pages without ads or box for the ``no_ads_no_box_`` family), the same for the
units preprocessing keeps and for those it drops: the plan's ``kept`` cut points serve both.
The worker then keeps the quintiles as named subsets (``agg_arrangement_install_subset``),
so a whole-study quintile report reads one row per install and arm, as ``box`` does.

``arrangement_quintile_bounds`` (migration 0042) holds the boundaries the worker keys an
experiment's per-install rows by, one row per change; its latest row per experiment is the
one with the greatest (plan_version, ready, written_at). ``ready = 0`` while the worker
recomputes the experiment's rows with them (``write/quintile_rekey.py``): a report then
applies the frozen boundaries to the per-day rows (right, not fast); ``ready = 1`` once every
row follows them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from core.store import Store
from schemas.sql import quote

TABLE = "arrangement_quintile_bounds"
FAMILIES = {"": "n_candidates", "no_ads_no_box_": "no_ads_no_box_n_candidates"}
"""A quintile subset's name prefix and its family (the plan's ``quintiles`` key, and the
table's column)."""


@dataclass(frozen=True)
class FrozenQuintiles:
    """An experiment's latest row of ``arrangement_quintile_bounds``."""

    experiment_id: str
    version: int
    """The plan version that set these boundaries."""
    sha256: str
    n_candidates: tuple[int, ...]
    """The cut points of the quintiles over every page; () = not frozen."""
    no_ads_no_box: tuple[int, ...]
    """The cut points of the quintiles within the pages without ads or box; () = not frozen."""
    ready: bool
    """Every per-install row of the experiment follows them (the quintiles are stored)."""

    def family(self, prefix: str) -> tuple[int, ...]:
        """The cut points of a quintile subset's family (by its name's prefix); () = not frozen."""
        return self.no_ads_no_box if prefix else self.n_candidates

    @property
    def frozen(self) -> bool:
        return bool(self.n_candidates or self.no_ads_no_box)


def latest_sql(experiment_ids: Collection[str] | None = None) -> str:
    """One row: the time of the read (the store's clock) and, per experiment (of
    ``experiment_ids``; None: every one), its latest row as a tuple."""
    if experiment_ids is None:
        where = ""
    else:
        listed = ", ".join(quote(e) for e in sorted(experiment_ids))
        where = f"WHERE experiment_id IN ({listed})" if listed else "WHERE 0"
    latest = (
        "SELECT experiment_id, argMax(tuple(plan_version, plan_sha256, n_candidates, "
        "no_ads_no_box_n_candidates, ready), (plan_version, ready, written_at)) AS row "
        f"FROM {TABLE} {where} GROUP BY experiment_id"
    )
    return (
        "SELECT toString(now64(6, 'UTC')), "
        f"groupArray(tuple(experiment_id, row.1, toString(row.2), row.3, row.4, row.5)) FROM ({latest})"
    )


def parse_latest(row: Sequence[Any]) -> tuple[str, dict[str, FrozenQuintiles]]:
    """``latest_sql``'s row: the read's time and each experiment's latest boundaries."""
    read_at, rows = str(row[0]), row[1]
    found = {}
    for experiment_id, version, sha, everything, plain, ready in rows or []:
        found[str(experiment_id)] = FrozenQuintiles(
            str(experiment_id),
            int(version),
            str(sha),
            tuple(int(b) for b in everything),
            tuple(int(b) for b in plain),
            bool(int(ready)),
        )
    return read_at, found


async def read_frozen(
    store: Store, experiment_ids: Collection[str] | None = None, *, read_only: bool = True
) -> tuple[str, dict[str, FrozenQuintiles]]:
    """The time of the read and the latest boundaries of each experiment that has any."""
    result = await store.query(latest_sql(experiment_ids), read_only=read_only)
    return parse_latest(result.rows[0])


def row_sql(
    experiment_id: str,
    version: int,
    sha256: str,
    quintiles: Mapping[str, Sequence[int]],
    ready: bool,
) -> str:
    """Insert one row of boundaries, stamped with the store's clock. ``quintiles``: per
    family (``FAMILIES``' values) its cut points; a family left out is not frozen."""

    def cut(family: str) -> str:
        return f"CAST([{', '.join(str(int(b)) for b in quintiles.get(family, ()))}], 'Array(Int16)')"

    return (
        f"INSERT INTO {TABLE} (experiment_id, plan_version, plan_sha256, n_candidates, "
        "no_ads_no_box_n_candidates, ready, written_at) "
        f"SELECT {quote(experiment_id)}, {int(version)}, {quote(sha256)}, {cut('n_candidates')}, "
        f"{cut('no_ads_no_box_n_candidates')}, {int(ready)}, now64(6)"
    )
