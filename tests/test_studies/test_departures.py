"""Issue 37, the counting departures from the Powermeter paper, on chDB: only a first result
page counts (later pages are shown dropped), an SSR "between c1 and c2" is the paper's (after
any leading specialized results), and Figure 4's middle panel has its subset (``ads``).
Migration 0039 recounts old data directories with the worker's own statements."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from schemas.sql import load_migrations
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write import clicks_by_rank, slice_rows

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)
DAY = int(datetime(2026, 11, 27, tzinfo=UTC).timestamp())


def event(kind: str, page_index: int = 0, ssr: list[int] | None = None, **more: Any) -> dict[str, Any]:
    e = {
        "type": kind, "schema_version": 1, "event_id": str(uuid.uuid4()), "sent_at": NOW.isoformat(),
        "received_at": NOW.isoformat(), "experiment_id": "dep", "arm": "control", "engine": "google",
        "install_id": "install-1", "install_day": "2026-11-01", "extension_version": "0.3.0",
        "page_index": page_index, "n_organic": 10, "ads_top_count": 0, "box": "none",
        "ssr_positions": ssr or [], "identified": True, "ui_lang": "de", "market": "de",
    }  # fmt: skip
    if kind == "click":
        e.update(element_type="organic", original_rank=1, display_rank=1)
    return {**e, **more}


EVENTS = [
    # first pages: two clicks on c1 (one with ads on top), a view
    event("click"),
    event("click", ads_top_count=2),
    event("serp_view"),
    # later pages: an organic click at rank 1 of page 2, an ad click there, a view
    event("click", page_index=1),
    event("click", page_index=2, element_type="ad", original_rank=None, display_rank=None),
    event("serp_view", page_index=1),
    # SSRs: the column starts with one (or more), and another follows c1 -> between c1 and c2
    event("click", ssr=[1, 3]),
    event("click", ssr=[1, 3, 4]),
    # a leading run of two, c1 at 3, c2 at 4: none between
    event("click", ssr=[1, 2]),
    # at position 2 only: between c1 (at 1) and c2 (at 3)
    event("click", ssr=[2]),
]
YESTERDAY = (NOW - timedelta(days=1)).isoformat()
BEFORE = [event("click", received_at=YESTERDAY), event("click", page_index=1, received_at=YESTERDAY)]
"""A day before, so the closed sums (through today's start) hold rows, not only a header."""


async def write_side(store: ChdbStore) -> None:
    await store.execute(clicks_by_rank.range_sql("dep", "google", DAY - 86400, DAY + 86400))
    await store.execute(slice_rows.slices_range_sql("dep", "google", DAY - 86400, DAY + 86400))
    await store.execute(slice_rows.experiment_installs_sql("dep", "google"))
    await store.execute(slice_rows.experiment_subsets_sql("dep", "google"))


SUBSET_UNITS = (
    "SELECT subset, sum(units) AS units FROM agg_arrangement_install_subset FINAL "
    "WHERE experiment_id = 'dep' GROUP BY subset"
)
TABLES = {
    "agg_clicks_by_rank_10s": "arm, original_rank, window_start, units, impressions, clicks",
    "agg_arrangement_10s": (
        "install_id, slice_start, arm, ads_present, ssr_c1_c2, units, impressions, clicks, clicks_ad, "
        "clicks_other, later_units, later_impressions"
    ),
    "agg_arrangement_install": "install_id, arm, ssr_c1_c2, units, clicks, later_units, later_impressions",
    "agg_arrangement_install_subset": "subset, install_id, arm, units, clicks, later_units",
    "agg_arrangement_install_closed": "install_id, arm, ssr_c1_c2, units, later_units, through",
    "agg_arrangement_replicates_1h": "hour_start, arm, units, impressions, clicks, rep_units",
}


async def snapshot(store: ChdbStore) -> dict[str, list[Any]]:
    out = {}
    for table, columns in TABLES.items():
        result = await store.query(f"SELECT {columns} FROM {table} FINAL ORDER BY ALL")
        out[table] = [tuple(str(v) for v in row) for row in result.rows]
    return out


async def written(tmp_path: Path, *queries: str) -> list[list[dict[str, Any]]]:
    """The write side's rows of ``EVENTS`` on a fresh chDB, as ``queries`` read them."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        await store.insert_json_rows("raw_extension_events", b"\n".join(orjson.dumps(e) for e in EVENTS))
        await write_side(store)
        return [(await store.query(q)).dicts() for q in queries]
    finally:
        await store.close()


async def test_only_first_pages_count_and_later_pages_are_shown_dropped(tmp_path: Path) -> None:
    clicks = ReportQuery("dep", burn_in_days=0).drops_sql()
    views = ReportQuery("dep", burn_in_days=0, unit_mode="impression").drops_sql()
    elements = (
        "SELECT sum(units) AS units, sum(clicks_ad) AS ad, sum(clicks_other) AS other "
        "FROM agg_arrangement_10s FINAL WHERE experiment_id = 'dep'"
    )
    by_clicks, by_views, (counted,) = await written(tmp_path, clicks, views, elements)
    # 6 first-page clicks are units; the 2 later-page clicks are neither units nor ad or
    # "other" clicks, and the drops table shows them apart (not in all_units)
    assert [int(counted[k]) for k in ("units", "ad", "other")] == [6, 0, 0]
    assert [(int(d["all_units"]), int(d["later_page_dropped"])) for d in by_clicks] == [(6, 2)]
    assert [(int(d["all_units"]), int(d["later_page_dropped"])) for d in by_views] == [(1, 1)]


async def test_an_ssr_between_c1_and_c2_is_the_papers(tmp_path: Path) -> None:
    """[1, 3], [1, 3, 4] and [2] have an SSR between c1 and c2; [1, 2] and [] have none (an
    SSR at position 2 would count [1, 2] and [2] instead)."""
    (subsets,) = await written(tmp_path, SUBSET_UNITS)
    units = {r["subset"]: int(r["units"]) for r in subsets}
    assert (units["ssr_c1_c2"], units["no_ssr_c1_c2"]) == (3, units["all"] - 3)


async def test_figure_4_middle_has_its_subset(tmp_path: Path) -> None:
    """Pages with ads on top, with or without a box: the ``ads`` subset."""
    (subsets,) = await written(tmp_path, SUBSET_UNITS)
    assert {r["subset"]: int(r["units"]) for r in subsets}.get("ads") == 1


async def test_the_recount_migration_writes_what_the_worker_writes(tmp_path: Path) -> None:
    """Migration 0039 on a data directory whose derived tables the old rules wrote: every
    table it rebuilds equals the worker's own recompute under the new rules."""
    (recount,) = [m for m in load_migrations() if m.version == 39]
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        rows = b"\n".join(orjson.dumps(e) for e in EVENTS + BEFORE)
        await store.insert_json_rows("raw_extension_events", rows)
        await write_side(store)
        from studies.arrangement.write import closed_sums, hourly_replicates

        await hourly_replicates.recompute_study(store, "dep", "google")
        installs = [("dep", "google", "install-1")]
        await closed_sums.recompute(store, installs, (), {("dep", "google"): DAY})
        worker = await snapshot(store)
        for statement in recount.statements:
            await store.execute(statement)
        migrated = await snapshot(store)
        looks = (await store.query("SELECT count() FROM agg_arrangement_looks")).rows[0][0]
    finally:
        await store.close()
    assert worker["agg_arrangement_10s"] and worker["agg_arrangement_replicates_1h"]
    assert len(worker["agg_arrangement_install_closed"]) == 2  # a header and yesterday's sums
    for table in TABLES:
        assert migrated[table] == worker[table], table
    assert int(looks) == 0
