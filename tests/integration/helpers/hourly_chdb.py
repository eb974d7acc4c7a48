"""The per-hour replicate sums on a fresh chDB, in a process of its own (chDB allows one
session per process; run by test_timeline_hourly.py as ``python -m``).

Stores a seeded two-day study in the raw table, recomputes it as a bulk import does, then
prints, as JSON: whether the migration's own backfill (SQL weights) gives the same table
as the worker's numpy path, whether recomputing again or hour by hour (the stream's path)
changes anything, whether a row the recompute no longer finds is gone, and whether the
hourly timeline equals the one from the 10-second slices for several queries.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from analytics.stats.arrangement_table import ArmRow
from collectors.simulate.extension_traffic import TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from schemas.sql import load_migrations
from streams.bulk_import import BulkImporter
from studies.arrangement.read.timeline import _timeline_from_slices, reads_hourly, run_timeline
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write.hourly_replicates import recompute_hours
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "hourly"
START = datetime(2026, 10, 1, 7, 30, tzinfo=UTC)
DAYS = 2
COLUMNS = (
    "experiment_id, engine, hour_start, arm, install_age_days, identified, units, impressions, clicks, "
    "installs_units, installs_impressions, rep_units, rep_impressions, rep_clicks"
)
QUERIES: dict[str, dict[str, Any]] = {
    "default": {},
    "no burn-in": {"burn_in_days": 0},
    "burn-in 7, impressions": {"burn_in_days": 7, "unit_mode": "impression"},
    "days": {"since": date(2026, 10, 2), "until": date(2026, 10, 2)},
    "hours": {"since": datetime(2026, 10, 1, 13), "until": datetime(2026, 10, 2, 2)},
    "bing": {"engine": "bing", "burn_in_days": 0},
}


def exact(windows: list[tuple[int, list[ArmRow]]]) -> list[Any]:
    """Every number of a timeline (NaN as a string: NaN != NaN)."""

    def value(x: float) -> float | str:
        return "nan" if math.isnan(x) else x

    return [
        [start, r.arm, r.units, r.installs]
        + [[value(e.value), value(e.ci_low), value(e.ci_high)] for e in (*r.ctr, *r.delta, *r.beta)]
        + [len(r.ctr), len(r.delta), len(r.beta)]
        for start, table in windows
        for r in table
    ]


async def differing_rows(store: ChdbStore, table: str, other: str) -> int:
    total = 0
    for a, b in ((table, other), (other, table)):
        result = await store.query(
            f"SELECT count() FROM (SELECT {COLUMNS} FROM {a} FINAL EXCEPT SELECT {COLUMNS} FROM {b} FINAL)"
        )
        total += int(result.rows[0][0])
    return total


async def run(path: Path, events: int) -> dict[str, Any]:
    store = ChdbStore(path)
    out: dict[str, Any] = {}
    try:
        await migrate(store)
        config = TrafficConfig(experiment_id=EXP, seed=29, installs=60)
        await store_study(store, config, START, DAYS, events, engines=("google", "bing"))
        importer = BulkImporter(store)
        table = "agg_arrangement_replicates_1h"
        out["rows"] = int((await store.query(f"SELECT count() FROM {table} FINAL")).rows[0][0])
        out["hours"] = int((await store.query(f"SELECT uniqExact(hour_start) FROM {table} FINAL")).rows[0][0])

        # the newest migration's backfill (0039's recount: 0027's with first-page units), with
        # the weights computed by ClickHouse
        migration = next(m for m in load_migrations() if m.version == 39)
        backfill = next(s for s in migration.statements if s.startswith(f"INSERT INTO {table}"))
        await store.execute(f"CREATE TABLE backfill AS {table}")
        await store.execute(backfill.replace(f"INSERT INTO {table}", "INSERT INTO backfill", 1))
        out["backfill_differs"] = await differing_rows(store, table, "backfill")

        # recomputed again: as a re-import, then hour by hour as the stream does
        await importer.recompute_installs(EXP, "google")
        hours = await store.query(
            f"SELECT DISTINCT experiment_id, engine, toUInt32(hour_start) FROM {table} FINAL"
        )
        await recompute_hours(store, {(e, g, int(h)) for e, g, h in hours.rows})
        out["recomputed_differs"] = await differing_rows(store, table, "backfill")

        # a row the recompute no longer finds (an arm no event has) is gone after it
        ghost_hour = int(hours.rows[0][2])
        await store.execute(
            f"INSERT INTO {table} ({COLUMNS}, computed_at) SELECT experiment_id, engine, hour_start, "
            "'ghost', install_age_days, identified, units, impressions, clicks, installs_units, "
            "installs_impressions, rep_units, rep_impressions, rep_clicks, now64(6) "
            f"FROM {table} FINAL WHERE toUInt32(hour_start) = {ghost_hour} LIMIT 1"
        )
        ghosts = f"SELECT count() FROM {table} FINAL WHERE arm = 'ghost'"
        out["ghost_before"] = int((await store.query(ghosts)).rows[0][0])
        await recompute_hours(store, {(e, g, int(h)) for e, g, h in hours.rows if int(h) == ghost_hour})
        out["ghost_after"] = int((await store.query(ghosts)).rows[0][0])
        out["after_ghost_differs"] = await differing_rows(store, table, "backfill")

        out["timelines"] = {}
        for name, changes in QUERIES.items():
            query = ReportQuery(EXP, **changes)
            assert reads_hourly(query, 3600, 0), name
            fast = exact(await run_timeline(store, query, 3600, 0))
            slow = exact(await _timeline_from_slices(store, query, 3600, 0))
            out["timelines"][name] = {"windows": len({r[0] for r in fast}), "equal": fast == slow}
        query = ReportQuery(EXP, burn_in_days=0)
        for baseline in ("hide_ads_box", "no-such-arm"):
            fast = exact(await run_timeline(store, query, 3600, 0, baseline))
            slow = exact(await _timeline_from_slices(store, query, 3600, 0, baseline))
            out["timelines"][f"baseline {baseline}"] = {
                "windows": len({r[0] for r in fast}),
                "equal": fast == slow,
            }
    finally:
        await store.close()
    return out


if __name__ == "__main__":
    print_run(run, 6000)
