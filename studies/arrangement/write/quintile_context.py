"""The frozen quintiles in the page context of the study-wide per-install rows (issue 38).

``agg_arrangement_install`` and the closed days' sums key each install's rows by page context;
for an experiment whose plan froze its ``n_candidates`` quintiles (``studies/arrangement/
quintiles.py``) the context also holds the page's quintile in each family
(``n_candidates_quintile``, ``no_ads_no_box_quintile``: 1..5, 0 when none), computed here
from the slices' ``n_candidates_bucket``, and every row the plan version whose boundaries it
follows (``quintiles_version``). The per-subset rows then carry the quintiles as named subsets
(``analytics/stats/arrangement_subsets.QUINTILE_CONTEXT``). Experiments without frozen
boundaries get 0 and 0, as constants: their statements are the same as before.

A recompute reads the boundaries once per chunk of installs (``QuintileContext.read``), after
the closed sums' state, and every statement it writes with checks that no new boundaries were
written for its experiments since (``guard_with``): a statement planned with the old ones
fails before writing (``BOUNDS_GUARD``) and the chunk is recomputed with the new ones, as for
the closed sums' own ``GUARD``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from core.store import Store
from schemas.sql import quote
from studies.arrangement.quintiles import TABLE, FrozenQuintiles, read_frozen

BOUNDS_GUARD = "arrangement quintile boundaries changed while rows were recomputed"
COLUMNS = "n_candidates_quintile, no_ads_no_box_quintile"
"""The quintiles' context columns (after ``ssr_c1_c2`` in the study-wide rows' key)."""


def _quintile_sql(cuts: tuple[int, ...], condition: str) -> str:
    """1..5 for a page whose bucket meets ``condition`` (and was shown), by the cut points."""
    above = " + ".join(f"(n_candidates_bucket > {int(b)})" for b in cuts)
    return f"if({condition} AND n_candidates_bucket >= 0, 1 + {above}, 0)"


@dataclass(frozen=True)
class QuintileContext:
    """The quintile context of the experiments of one recompute, as SQL over a slice row's
    ``experiment_id``, ``n_candidates_bucket``, ``ads_present`` and ``box_present``."""

    frozen: Mapping[str, FrozenQuintiles] = field(default_factory=dict)
    read_at: str | None = None
    """When the boundaries were read (the store's clock); None: no guard (tests, tools)."""
    experiments: tuple[str, ...] = ()

    @classmethod
    async def read(cls, store: Store, experiment_ids: Collection[str]) -> QuintileContext:
        read_at, frozen = await read_frozen(store, experiment_ids)
        return cls(frozen, read_at, tuple(sorted(experiment_ids)))

    def _per_experiment(self, value: dict[str, str], otherwise: str) -> str:
        if not value:
            return otherwise
        cases = ", ".join(f"experiment_id = {quote(e)}, {sql}" for e, sql in sorted(value.items()))
        return f"multiIf({cases}, {otherwise})"

    def n_candidates_sql(self) -> str:
        """The page's quintile over every page (0: not frozen, or no figure shown)."""
        cases = {e: _quintile_sql(f.n_candidates, "1") for e, f in self.frozen.items() if f.n_candidates}
        return f"toUInt8({self._per_experiment(cases, '0')})"

    def no_ads_no_box_sql(self) -> str:
        """The page's quintile within the pages without ads or box (0 for other pages)."""
        plain = "ads_present = 0 AND box_present = 0"
        cases = {e: _quintile_sql(f.no_ads_no_box, plain) for e, f in self.frozen.items() if f.no_ads_no_box}
        return f"toUInt8({self._per_experiment(cases, '0')})"

    def context_sql(self) -> str:
        """Both, named as the context columns."""
        everything, plain = self.n_candidates_sql(), self.no_ads_no_box_sql()
        return f"{everything} AS n_candidates_quintile, {plain} AS no_ads_no_box_quintile"

    def version_sql(self) -> str:
        """The plan version a row of the experiment follows (0: no boundaries ever stored)."""
        cases = {e: str(f.version) for e, f in self.frozen.items()}
        return f"toUInt32({self._per_experiment(cases, '0')})"

    def version_of(self, experiment_id: str) -> int:
        found = self.frozen.get(experiment_id)
        return found.version if found is not None else 0

    def guard_with(self) -> list[str]:
        """A scalar for a statement's WITH clause that fails it before it writes anything
        when boundaries of its experiments were written after they were read; [] without
        ``read_at``. Referenced by ``guard_where``."""
        if self.read_at is None:
            return []
        listed = ", ".join(quote(e) for e in self.experiments) or "''"
        return [
            f"(SELECT throwIf(count() > 0, {quote(BOUNDS_GUARD)}) FROM {TABLE} "
            f"WHERE experiment_id IN ({listed}) AND ready = 0 "
            f"AND written_at > toDateTime64({quote(self.read_at)}, 6, 'UTC')) AS bounds_refused"
        ]

    def guard_where(self) -> str:
        return "bounds_refused = 0" if self.read_at is not None else "1"


NO_QUINTILES = QuintileContext()
"""No experiment's boundaries frozen, no guard."""
