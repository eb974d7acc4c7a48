"""Identification and sample ratio per engine market (issue 35, Done-means 5), on chDB: the
report's per-market rows equal a recount of the stored events done here by hand, and a market
whose arm loses clicks shows an SRM mismatch while the others do not."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from studies.arrangement.read.markets import market_health, markets_sql

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def event(
    market: str, arm: str, kind: str, identified: bool, install_day: str = "2026-11-01"
) -> dict[str, Any]:
    e = {
        "type": kind, "schema_version": 1, "event_id": str(uuid.uuid4()), "sent_at": NOW.isoformat(),
        "received_at": NOW.isoformat(), "experiment_id": "pm1", "arm": arm, "engine": "google",
        "install_id": f"i-{uuid.uuid4().hex[:10]}", "install_day": install_day, "extension_version": "0.3.0",
        "page_index": 0, "n_organic": 10, "ads_top_count": 0, "box": "none", "ssr_positions": [],
        "identified": identified, "ui_lang": "de", "market": market,
    }  # fmt: skip
    if kind == "click":
        e.update(element_type="organic", original_rank=1, display_rank=1)
    return e


def study() -> list[dict[str, Any]]:
    events = []
    # de: balanced arms (1:1), a fifth unidentified; ch: swap_1_2 loses most clicks
    for arm, clicks in (("control", 200), ("swap_1_2", 200)):
        events += [event("de", arm, "click", i % 5 != 0) for i in range(clicks)]
        events += [event("de", arm, "serp_view", True) for _ in range(50)]
    events += [event("ch", "control", "click", True) for _ in range(200)]
    events += [event("ch", "swap_1_2", "click", True) for _ in range(60)]
    # burn-in: clicks of an install one day old are not kept
    events += [event("uk", "control", "click", True, install_day="2026-11-26") for _ in range(30)]
    return events


async def test_per_market_rows_equal_a_recount(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        events = study()
        await store.insert_json_rows("raw_extension_events", b"\n".join(orjson.dumps(e) for e in events))
        result = await store.query(markets_sql("pm1", "google", 4))
        rows = market_health(result.dicts(), {"control": 1.0, "swap_1_2": 1.0})
    finally:
        await store.close()
    by_market = {r["market"]: r for r in rows}
    assert [r["market"] for r in rows] == ["de", "ch", "uk"]  # busiest first
    for market in ("de", "ch", "uk"):
        mine = [e for e in events if e["market"] == market]
        assert by_market[market]["events"] == len(mine)
        assert by_market[market]["identified_share"] == sum(e["identified"] for e in mine) / len(mine)
        kept = Counter(
            e["arm"]
            for e in mine
            if e["type"] == "click" and e["identified"] and e["install_day"] < "2026-11-24"
        )
        assert by_market[market]["units_by_arm"] == {
            arm: kept.get(arm, 0) for arm in by_market[market]["units_by_arm"]
        }
    assert by_market["de"]["srm_mismatch"] is False and by_market["ch"]["srm_mismatch"] is True
    assert by_market["uk"]["srm_p_value"] is None  # nothing kept: nothing to test


def test_unregistered_experiments_get_no_srm() -> None:
    rows = [{"market": "de", "arm": "control", "n_events": 10, "n_identified": 9, "n_kept": 5}]
    (row,) = market_health(rows, None)
    assert (row["identified_share"], row["srm_p_value"], row["srm_mismatch"]) == (0.9, None, None)


def test_the_window_bounds_received_at() -> None:
    sql = markets_sql("pm1", "bing", 4, "2026-11-01 00:00:00", "2026-11-08 00:00:00")
    assert "received_at >= toDateTime64('2026-11-01 00:00:00', 3, 'UTC')" in sql
    assert "received_at < toDateTime64('2026-11-08 00:00:00', 3, 'UTC')" in sql
