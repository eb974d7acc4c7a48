"""SQL that recomputes the per-install arrangement statistics a batch touched.

Two steps, both idempotent: the 10-second slices from the deduplicated raw rows,
then the day rows of the touched installs from those slices (a coarser window
rolls up from the exact finer one instead of rescanning raw events).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from datetime import date

from schemas.sql import quote
from streams.transforms.clicks_by_rank import MAX_RANK, SLICE_S

INSTALL_CHUNK = 3000  # installs (ids up to 64 chars) per day-rollup statement, under max_query_size

KEY_COLUMNS = (
    "engine, arm, install_age_days, identified, ads_present, box_present, ssr_c1_c2, n_candidates_bucket"
)
VALUE_SUMS = (
    "sum(units), sum(impressions), sumForEach(clicks), sum(clicks_ad), sum(clicks_box), "
    "sum(clicks_ssr), sum(clicks_other)"
)
COLUMNS = (
    "experiment_id, install_id, {window}, " + KEY_COLUMNS + ", units, impressions, clicks, "
    "clicks_ad, clicks_box, clicks_ssr, clicks_other, computed_at"
)


def n_candidates_bucket_sql(column: str = "n_candidates") -> str:
    """Tenths of a decade of the "About N results" figure; -1 when it was not shown."""
    return f"if({column} IS NULL OR {column} = 0, -1, toInt16(floor(log10({column}) * 10)))"


def slices_sql(keys: Collection[tuple[str, str, int]]) -> str:
    """Recompute every (experiment, engine, slice) in ``keys`` for all its installs."""
    if not keys:
        raise ValueError("no keys to recompute")
    lo = min(k[2] for k in keys)
    hi = max(k[2] for k in keys) + SLICE_S
    in_list = ", ".join(f"({quote(e)}, {quote(g)}, {s})" for e, g, s in keys)
    per_rank = ", ".join(
        f"toUInt32(countIf(type = 'click' AND element_type = 'organic' AND original_rank = {r}))"
        for r in range(1, MAX_RANK + 1)
    )
    return f"""
INSERT INTO agg_arrangement_10s ({COLUMNS.format(window="slice_start")})
SELECT experiment_id, install_id, toStartOfInterval(received_at, INTERVAL {SLICE_S} SECOND) AS ws,
       engine, arm,
       toUInt16(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 65535)) AS age,
       toUInt8(identified) AS ident,
       toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp,
       toUInt8(has(ssr_positions, 2)) AS ssr12,
       {n_candidates_bucket_sql()} AS ncb,
       toUInt32(countIf(type = 'click')), toUInt32(countIf(type = 'serp_view')),
       [{per_rank}],
       toUInt32(countIf(type = 'click' AND element_type = 'ad')),
       toUInt32(countIf(type = 'click' AND element_type = 'shopping_box')),
       toUInt32(countIf(type = 'click' AND element_type = 'ssr')),
       toUInt32(countIf(type = 'click' AND element_type = 'other')),
       now64(6)
FROM extension_events
WHERE received_at >= toDateTime64({lo}, 3, 'UTC') AND received_at < toDateTime64({hi}, 3, 'UTC')
  AND (experiment_id, engine, toUInt32(toStartOfInterval(received_at, INTERVAL {SLICE_S} SECOND)))
      IN ({in_list})
GROUP BY experiment_id, install_id, ws, engine, arm, age, ident, ads, boxp, ssr12, ncb
"""


def days_sql(keys: Collection[tuple[str, str, date]]) -> Iterator[str]:
    """Roll up the touched (experiment, install, day) rows from their 10-second slices."""
    by_day: dict[tuple[str, date], list[str]] = {}
    for experiment, install, day in keys:
        by_day.setdefault((experiment, day), []).append(install)
    for (experiment, day), installs in sorted(by_day.items()):
        for start in range(0, len(installs), INSTALL_CHUNK):
            chunk = ", ".join(quote(i) for i in sorted(installs)[start : start + INSTALL_CHUNK])
            yield f"""
INSERT INTO agg_arrangement_day ({COLUMNS.format(window="day")})
SELECT experiment_id, install_id, toDate(slice_start) AS d, {KEY_COLUMNS}, {VALUE_SUMS}, now64(6)
FROM agg_arrangement_10s FINAL
WHERE experiment_id = {quote(experiment)} AND install_id IN ({chunk})
  AND slice_start >= toDateTime({quote(day.isoformat())}, 'UTC')
  AND slice_start < toDateTime({quote(day.isoformat())}, 'UTC') + INTERVAL 1 DAY
GROUP BY experiment_id, install_id, d, {KEY_COLUMNS}
"""
