"""SQL that recomputes the per-install arrangement statistics of touched slices.

Only a first result page (``page_index = 0``) counts (``counting.py``): clicks and views of
later pages are kept apart as ``later_units`` and ``later_impressions``, so a report can say
what the rule removed.

Idempotent: each touched 10-second slice is recomputed whole from the deduplicated
raw rows. Days and longer windows are sums of slices (``arrangement_install_day``).
"""

from __future__ import annotations

from collections.abc import Collection

from analytics.stats.arrangement_subsets import subsets_array_sql
from schemas.sql import quote
from studies.arrangement.counting import (
    ELEMENT_CLICKS,
    IMPRESSION,
    LATER_IMPRESSION,
    LATER_UNIT,
    SSR_C1_C2,
    UNIT,
    organic_clicks_by_rank,
    touched_slices,
)
from studies.arrangement.tables import AGE_CAP, SLICE_S
from studies.arrangement.tables import MAX_RANKS as MAX_RANK
from studies.arrangement.write import quintile_context
from studies.arrangement.write.quintile_context import NO_QUINTILES, QuintileContext

COLUMNS = (
    "experiment_id, install_id, slice_start, engine, arm, install_age_days, identified, ads_present, "
    "box_present, ssr_c1_c2, n_candidates_bucket, units, impressions, clicks, clicks_ad, clicks_box, "
    "clicks_ssr, clicks_other, later_units, later_impressions, computed_at"
)


def n_candidates_bucket_sql(column: str = "n_candidates") -> str:
    """Tenths of a decade of the "About N results" figure; -1 when it was not shown."""
    return f"if({column} IS NULL OR {column} = 0, -1, toInt16(floor(log10({column}) * 10)))"


def slices_sql(keys: Collection[tuple[str, str, int]]) -> str:
    """Recompute every (experiment, engine, slice) in ``keys`` for all its installs."""
    return _slices_insert(*touched_slices(keys))


def slices_range_sql(experiment_id: str, engine: str, lo: int, hi: int) -> str:
    """Recompute every slice of one experiment and engine in [lo, hi) (unix seconds,
    multiples of the slice length): a bulk import's recompute, a day at a time."""
    if lo % SLICE_S or hi % SLICE_S or hi <= lo:
        raise ValueError("a range of whole slices is needed")
    return _slices_insert(lo, hi, f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}")


def _slices_insert(lo: int, hi: int, keys_condition: str) -> str:
    per_rank = ", ".join(organic_clicks_by_rank(MAX_RANK, cast="toUInt32"))
    elements = ", ".join(f"toUInt32(countIf({rule}))" for rule in ELEMENT_CLICKS.values())
    return f"""
INSERT INTO agg_arrangement_10s ({COLUMNS})
SELECT experiment_id, install_id, toStartOfInterval(received_at, INTERVAL {SLICE_S} SECOND) AS ws,
       engine, arm,
       toUInt16(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 65535)) AS age,
       toUInt8(identified) AS ident,
       toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp,
       toUInt8({SSR_C1_C2}) AS ssr12,
       {n_candidates_bucket_sql()} AS ncb,
       toUInt32(countIf({UNIT})), toUInt32(countIf({IMPRESSION})),
       [{per_rank}],
       {elements},
       toUInt32(countIf({LATER_UNIT})), toUInt32(countIf({LATER_IMPRESSION})),
       now64(6)
FROM extension_events
WHERE received_at >= toDateTime64({lo}, 3, 'UTC') AND received_at < toDateTime64({hi}, 3, 'UTC')
  AND {keys_condition}
GROUP BY experiment_id, install_id, ws, engine, arm, age, ident, ads, boxp, ssr12, ncb
"""


INSTALL_COLUMNS = (
    "experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present, "
    "ssr_c1_c2, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, "
    "later_units, later_impressions, first_slice, last_slice, computed_at"
)
QUINTILE_COLUMNS = f"{quintile_context.COLUMNS}, quintiles_version"
"""Written after ``INSTALL_COLUMNS`` by the worker's statements (issue 38: 0 when the
experiment's quintiles are not frozen, the columns' default)."""


def installs_select_sql(where: str, quintiles: QuintileContext = NO_QUINTILES) -> str:
    """The study-wide rows of the installs ``where`` selects, summed from their slices,
    in ``INSTALL_COLUMNS, QUINTILE_COLUMNS`` order (``quintiles``: the frozen quintiles'
    context and the guard of their boundaries, in the WITH clause this opens)."""
    with_clause = f"WITH {', '.join(guard)}\n" if (guard := quintiles.guard_with()) else ""
    return f"""
{with_clause}SELECT experiment_id, engine, install_id, arm,
       toUInt8(least(install_age_days, {AGE_CAP})) AS age, identified, ads_present, box_present,
       ssr_c1_c2, sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other),
       sum(later_units), sum(later_impressions), min(slice_start), max(slice_start), now64(6),
       {quintiles.context_sql()}, {quintiles.version_sql()}
FROM agg_arrangement_10s FINAL
WHERE ({where}) AND {quintiles.guard_where()}
GROUP BY experiment_id, engine, install_id, arm, age, identified, ads_present, box_present, ssr_c1_c2,
         n_candidates_quintile, no_ads_no_box_quintile
"""


def _insert_installs(select: str) -> str:
    return f"INSERT INTO agg_arrangement_install ({INSTALL_COLUMNS}, {QUINTILE_COLUMNS})" + select


def installs_sql(keys: Collection[tuple[str, str, str]], quintiles: QuintileContext = NO_QUINTILES) -> str:
    """Recompute the study-wide rows of every (experiment, engine, install) in ``keys``
    whole from that install's slices (run after the slices it touched are recomputed)."""
    if not keys:
        raise ValueError("no keys to recompute")
    pairs = ", ".join(sorted({f"({quote(e)}, {quote(i)})" for e, _, i in keys}))
    triples = ", ".join(f"({quote(e)}, {quote(g)}, {quote(i)})" for e, g, i in keys)
    where = f"(experiment_id, install_id) IN ({pairs}) AND (experiment_id, engine, install_id) IN ({triples})"
    return _insert_installs(installs_select_sql(where, quintiles))


def experiment_installs_sql(
    experiment_id: str, engine: str, quintiles: QuintileContext = NO_QUINTILES
) -> str:
    """Recompute the study-wide rows of every install of one experiment and engine (after
    a bulk import has recomputed its slices)."""
    where = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    return _insert_installs(installs_select_sql(where, quintiles))


SUBSET_COLUMNS = (
    "experiment_id, engine, subset, install_id, arm, install_age_days, identified, units, "
    "impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, "
    "later_impressions, computed_at, quintiles_version"
)


def subsets_select_sql(where: str, quintiles: QuintileContext = NO_QUINTILES) -> str:
    """The per-subset study-wide rows of the installs ``where`` selects, summed from their
    study-wide rows (so run right after those are recomputed): those that follow the
    experiment's current quintile boundaries only (rows of older ones are deleted once the
    experiment is recomputed with the new; ``write/quintile_rekey.py``), with the frozen
    quintile subsets among the named ones. Needs the caller's WITH clause to hold
    ``quintiles.guard_with()``."""
    version = quintiles.version_sql()
    return f"""
SELECT experiment_id, engine, subset, install_id, arm, install_age_days, identified,
       sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)),
       sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other), sum(later_units),
       sum(later_impressions), now64(6), {version}
FROM agg_arrangement_install FINAL
ARRAY JOIN {subsets_array_sql(quintiles=True)} AS subset
WHERE ({where}) AND quintiles_version = {version} AND {quintiles.guard_where()}
GROUP BY experiment_id, engine, subset, install_id, arm, install_age_days, identified
"""


def _insert_subsets(select: str, quintiles: QuintileContext) -> str:
    with_clause = f"\nWITH {', '.join(guard)}" if (guard := quintiles.guard_with()) else ""
    return f"INSERT INTO agg_arrangement_install_subset ({SUBSET_COLUMNS}){with_clause}" + select


def subsets_sql(keys: Collection[tuple[str, str, str]], quintiles: QuintileContext = NO_QUINTILES) -> str:
    """Recompute the per-subset rows of every (experiment, engine, install) in ``keys``."""
    if not keys:
        raise ValueError("no keys to recompute")
    triples = ", ".join(f"({quote(e)}, {quote(g)}, {quote(i)})" for e, g, i in keys)
    where = f"(experiment_id, engine, install_id) IN ({triples})"
    return _insert_subsets(subsets_select_sql(where, quintiles), quintiles)


def experiment_subsets_sql(experiment_id: str, engine: str, quintiles: QuintileContext = NO_QUINTILES) -> str:
    """Recompute the per-subset rows of one experiment and engine (after a bulk import)."""
    where = f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}"
    return _insert_subsets(subsets_select_sql(where, quintiles), quintiles)
