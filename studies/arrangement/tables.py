"""The arrangement experiment's tables and the constants their rows are built on.

Every module of ``studies/arrangement`` names a table or a shape constant from here, so a
table renamed or a cap changed is changed once. The tables themselves are documented in
``schemas/clickhouse/README.md``; the definitions they count in ``docs/method.md``.
"""

from __future__ import annotations

SLICE_S = 10
"""The per-install rows' finest time resolution: 10-second slices of ``received_at``."""
HOUR_S = 3600
DAY_S = 86400
MAX_RANKS = 10
"""Positions c_1..c_10 (a first result page's) are stored per install."""
AGE_CAP = 7
"""Days since install are kept up to 7 (7 = seven or more) in the study-wide rows."""
REPLICATES = 200
"""Bootstrap replicates (``figure3``'s default, the analyst views' ``range(200)``)."""
LEVEL = 0.95
"""The default confidence level (the stored daily looks and per-hour replicates are read at it)."""
HOURLY_SEED = 0
"""The seed of the stored per-hour replicates (``report timeline``'s and the board's default)."""
GRACE_S = 3600
"""A day counts as complete an hour after it ended: events received before midnight that
the worker stores a little late still count in it."""

CLICKS_BY_RANK = "agg_clicks_by_rank_10s"
"""Units, impressions and clicks per (experiment, engine, arm, rank, 10-second window)."""
SLICES = "agg_arrangement_10s"
"""Per-install counts per 10-second slice and context (arm, age, identified, page kind)."""
INSTALL = "agg_arrangement_install"
"""Per-install counts for the whole study, per context."""
INSTALL_SUBSET = "agg_arrangement_install_subset"
"""``INSTALL`` per named subset (what a whole-study report reads)."""
CLOSED = "agg_arrangement_install_closed"
"""Per-install sums of closed days (the study-wide rows are these plus the open days)."""
HOURLY = "agg_arrangement_replicates_1h"
"""Bootstrap replicate sums per (hour, arm): what the 1-hour timeline reads."""
LOOKS = "agg_arrangement_looks"
"""The decision line's looks, one per complete day and arm."""
LOOK_TOTALS = "agg_arrangement_look_totals"
"""The per-install totals behind the last stored look of a selection."""
LOOK_FORGETS = "agg_arrangement_look_forgets"
"""When looks were forgotten (past days were written), from which day."""

UNIT_COLUMNS = {"click": "units", "impression": "impressions"}
"""Click mode (the paper's): a unit is a query that led to a click on a first result page.
Impression mode: a unit is a shown first result page (``serp_view``), for senders that
report them."""
LATER_COLUMNS = {"click": "later_units", "impression": "later_impressions"}
"""Per unit mode, the column counting what the first-page rule leaves out (later pages)."""
ELEMENTS = ("organic", "ad", "shopping_box", "ssr", "other")
ELEMENT_COLUMNS = ("clicks_ad", "clicks_box", "clicks_ssr", "clicks_other")
"""The stored clicks of ``ELEMENTS`` after the first (organic clicks: the clicks array)."""
CONTROL = "control"
BOX_BASELINE = "hide_ads_box"
"""Figure 5: in the pages with a shopping box, gaps are taken against the arm that hides it."""
BOX_RANKS = 3
