"""The page subsets of the arrangement analysis (the paper's Figures 4-6), as SQL conditions
on the page context every per-install table keeps (ads, shopping box, an SSR between c1 and
c2). The worker keeps study-wide rows per subset, so a subset added here is a migration that
recomputes them (0039 added ``ads``).

One definition for the report (``analytics/reports/experiment.py``) and the worker, which
keeps the study-wide rows of each subset (``studies/arrangement/write/slice_rows.py``)."""

from __future__ import annotations

import re

SUBSETS = {
    "all": "1",
    "ads_or_box": "(ads_present = 1 OR box_present = 1)",
    "no_ads_no_box": "(ads_present = 0 AND box_present = 0)",
    "box": "box_present = 1",
    "ssr_c1_c2": "ssr_c1_c2 = 1",
    "ads_no_box": "(ads_present = 1 AND box_present = 0)",
    "no_ssr_c1_c2": "ssr_c1_c2 = 0",
    "ads": "ads_present = 1",
}
QUINTILE = re.compile(r"(no_ads_no_box_)?n_candidates_q([1-5])")
"""Quintiles of the "About N results" figure over the whole selection, or within the pages
without ads or a box (the paper's Figure 6, right)."""


def subset_names() -> list[str]:
    """Every subset ``report experiment --subset`` and the analyst views take."""
    quintiles = [f"{p}n_candidates_q{k}" for p in ("", "no_ads_no_box_") for k in range(1, 6)]
    return [*SUBSETS, *quintiles]


QUINTILE_CONTEXT = {
    **{f"n_candidates_q{k}": f"n_candidates_quintile = {k}" for k in range(1, 6)},
    **{f"no_ads_no_box_n_candidates_q{k}": f"no_ads_no_box_quintile = {k}" for k in range(1, 6)},
}
"""The quintile subsets as conditions on a study-wide row's page context: its quintile in each
family, which the worker fills in only once an experiment's analysis plan froze the family's
boundaries (0 otherwise, so no row belongs to any; ``studies/arrangement/quintiles.py``)."""


def subsets_array_sql(quintiles: bool = False) -> str:
    """The named subsets a context row belongs to, as an array of names (for ARRAY JOIN);
    with ``quintiles``, the frozen quintile subsets too (``QUINTILE_CONTEXT``)."""
    named = {**SUBSETS, **(QUINTILE_CONTEXT if quintiles else {})}
    pairs = ", ".join(f"('{name}', toUInt8({condition}))" for name, condition in named.items())
    return f"arrayMap(s -> s.1, arrayFilter(s -> s.2 = 1, [{pairs}]))"
