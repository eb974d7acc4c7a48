"""What counts, written once: the conditions on an extension event that make it a unit,
an impression, or a click at a position.

Only a first result page (``page_index = 0``) defines positions c_1..c_10 and the paper's
arrangements, so only a first page counts: a unit is a first-page click (a first-page
``serp_view`` in impression mode), and every click column counts first-page clicks. Clicks
and views of later pages are kept apart (``LATER_UNIT``, ``LATER_IMPRESSION``) so the report
can say what the rule removed. The per-install rows count organic clicks at a position
(``organic_click_at``); the per-arm minute aggregate counts clicks of any element at a
position (``click_at``). ``docs/method.md`` ("What is counted") states the rules; every SQL
statement of the write side builds its counts from these. The data migrations that
backfilled or recounted (0019, 0027, 0039) restate them as they were then: migrations are
history, run only on data directories older than them; ``tests/test_studies/test_counting.py``
checks the newest says the same, and a change of a rule is a new migration plus a recompute.
"""

from __future__ import annotations

from collections.abc import Collection

from schemas.sql import quote
from studies.arrangement.tables import MAX_RANKS, SLICE_S

UNIT = "type = 'click' AND page_index = 0"
"""A query that led to a click on a first result page (the paper's unit: its c_i, its
arrangements and Figure 3's CTRs, which sum to about 0.8 over c_1..c_6, are first-page ones)."""
IMPRESSION = "type = 'serp_view' AND page_index = 0"
"""A shown first result page (impression mode's unit)."""
LATER_UNIT = "type = 'click' AND page_index > 0"
"""A click on a later result page: not a unit, counted so the report shows it dropped."""
LATER_IMPRESSION = "type = 'serp_view' AND page_index > 0"
"""A shown later result page: impression mode's counterpart of ``LATER_UNIT``."""
FIRST_PAGE_CLICK = UNIT
ORGANIC_CLICK = "type = 'click' AND element_type = 'organic' AND page_index = 0"
"""An organic click on a first result page: the clicks Figure 3 counts at positions."""

SSR_C1_C2 = "has(ssr_positions, arrayFirstIndex(p -> NOT has(ssr_positions, p), range(1, 22)) + 1)"
"""A specialized result lies between the first two generic results (Figure 6, middle): with
the main column's leading positions 1..k all specialized, c_1 is shown at k + 1, and the
page counts when k + 2 is specialized too. ``ssr_positions`` are 1-based positions in the
main column's sequence of organic and specialized blocks (``extension/lib/page.js``:
``identify``), at most 20 of them, so the first non-specialized position is at most 21."""

ELEMENT_CLICKS = {
    "clicks_ad": "type = 'click' AND page_index = 0 AND element_type = 'ad'",
    "clicks_box": "type = 'click' AND page_index = 0 AND element_type = 'shopping_box'",
    "clicks_ssr": "type = 'click' AND page_index = 0 AND element_type = 'ssr'",
    "clicks_other": "type = 'click' AND page_index = 0 AND element_type = 'other'",
}
"""The first-page clicks on other elements than organic results, by stored column."""


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
