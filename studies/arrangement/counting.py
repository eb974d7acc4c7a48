"""What counts, written once: the conditions on an extension event that make it a unit,
an impression, or a click at a position.

Only a first result page (``page_index = 0``) defines positions c_1..c_10: a click on a
later page is a unit whose click is on none of them. The per-install rows count organic
clicks at a position (``organic_click_at``); the per-arm minute aggregate counts clicks of
any element at a position (``click_at``). ``docs/method.md`` ("What is counted") states the
rules; every SQL statement of the write side builds its counts from these. Two data
migrations (0019, 0027) restate them as they backfilled: migrations are history, run only on
data directories older than them; ``tests/test_studies/test_counting.py`` checks they say the
same, and a change of a rule is a new migration plus a recompute.
"""

from __future__ import annotations

from collections.abc import Collection

from schemas.sql import quote
from studies.arrangement.tables import MAX_RANKS, SLICE_S

UNIT = "type = 'click'"
"""A query that led to a click (the paper's unit)."""
IMPRESSION = "type = 'serp_view'"
"""A shown result page (impression mode's unit)."""
FIRST_PAGE_CLICK = "type = 'click' AND page_index = 0"
ORGANIC_CLICK = "type = 'click' AND element_type = 'organic' AND page_index = 0"
"""An organic click on a first result page: the clicks Figure 3 counts at positions."""


ELEMENT_CLICKS = {
    "clicks_ad": "type = 'click' AND element_type = 'ad'",
    "clicks_box": "type = 'click' AND element_type = 'shopping_box'",
    "clicks_ssr": "type = 'click' AND element_type = 'ssr'",
    "clicks_other": (
        "type = 'click' AND (element_type = 'other' OR (element_type = 'organic' AND page_index > 0))"
    ),
}
"""The clicks on other elements than organic results at c_1..c_10, by stored column: an
organic click on a later page counts as "other"."""


def click_at(rank: int) -> str:
    """A click of any element at position ``rank`` of a first result page."""
    return f"{FIRST_PAGE_CLICK} AND original_rank = {int(rank)}"


def organic_click_at(rank: int) -> str:
    """An organic click at position ``rank`` of a first result page."""
    return f"{ORGANIC_CLICK} AND original_rank = {int(rank)}"


def organic_clicks_by_rank(ranks: int = MAX_RANKS, cast: str = "") -> list[str]:
    """``countIf`` of ``organic_click_at`` for c_1..c_ranks, optionally wrapped in ``cast``
    (e.g. ``toUInt32``)."""
    counts = [f"countIf({organic_click_at(r)})" for r in range(1, ranks + 1)]
    return [f"{cast}({c})" for c in counts] if cast else counts


def touched_slices(keys: Collection[tuple[str, str, int]]) -> tuple[int, int, str]:
    """The raw rows of the (experiment, engine, slice start) ``keys``: the ``received_at``
    range [lo, hi) they lie in (unix seconds) and the condition that selects them."""
    if not keys:
        raise ValueError("no keys to recompute")
    lo = min(k[2] for k in keys)
    hi = max(k[2] for k in keys) + SLICE_S
    in_list = ", ".join(f"({quote(e)}, {quote(g)}, {int(s)})" for e, g, s in keys)
    slice_of = f"toUInt32(toStartOfInterval(received_at, INTERVAL {SLICE_S} SECOND))"
    return lo, hi, f"(experiment_id, engine, {slice_of}) IN ({in_list})"
