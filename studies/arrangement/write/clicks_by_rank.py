"""SQL that recomputes the units/clicks aggregate for the 10-second slices a batch touched."""

from __future__ import annotations

from collections.abc import Collection

from schemas.sql import quote
from studies.arrangement.counting import IMPRESSION, UNIT, click_at, touched_slices
from studies.arrangement.tables import CLICKS_BY_RANK as TABLE
from studies.arrangement.tables import MAX_RANKS as MAX_RANK
from studies.arrangement.tables import SLICE_S


def recompute_sql(keys: Collection[tuple[str, str, int]]) -> str:
    """INSERT ... SELECT that rewrites every (experiment, engine, slice start) in ``keys``.

    It reads the deduplicated ``extension_events`` view, so the rows it writes equal
    a recount from raw, whatever was replayed. Every rank 1..MAX_RANK gets a row per
    arm, so a zero count is stored as zero, not as a missing row.
    """
    return _insert(*touched_slices(keys))


def range_sql(experiment_id: str, engine: str, lo: int, hi: int) -> str:
    """Rewrite every slice of one experiment and engine in [lo, hi) (a bulk import's)."""
    return _insert(lo, hi, f"experiment_id = {quote(experiment_id)} AND engine = {quote(engine)}")


def _insert(lo: int, hi: int, keys_condition: str) -> str:
    per_rank = ", ".join(f"countIf({click_at(r)})" for r in range(1, MAX_RANK + 1))
    return f"""
INSERT INTO {TABLE}
    (experiment_id, engine, arm, original_rank, window_start, units, impressions, clicks,
     computed_at)
SELECT experiment_id, engine, arm, r, ws, n_units, n_impressions, n_clicks[r], now64(6)
FROM
(
    SELECT experiment_id, engine, arm,
           toStartOfInterval(received_at, INTERVAL {SLICE_S} SECOND) AS ws,
           countIf({UNIT}) AS n_units,
           countIf({IMPRESSION}) AS n_impressions,
           [{per_rank}] AS n_clicks
    FROM extension_events
    WHERE received_at >= toDateTime64({lo}, 3, 'UTC')
      AND received_at < toDateTime64({hi}, 3, 'UTC')
      AND {keys_condition}
    GROUP BY experiment_id, engine, arm, ws
)
ARRAY JOIN range(1, {MAX_RANK + 1}) AS r
"""
