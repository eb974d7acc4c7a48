"""Frozen n_candidates quintiles as named subsets (issue 38), on chDB in-process: the worker's
recompute keys the study-wide rows by the frozen quintiles, a plan's new boundaries recompute
an experiment once (``quintile_rekey``), the per-subset rows then equal a recount from the raw
events with those boundaries, live and replayed batches and erasure keep them so, and the
report reads them like ``box``. Every expected number is recounted here from
``raw_extension_events`` with the boundaries, not with the worker's or the report's SQL."""

from __future__ import annotations

import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from streams.erasure import Eraser
from studies.arrangement import quintiles
from studies.arrangement.read.report import run_experiment_report, with_quintile_bounds
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write import closed_sums, quintile_rekey, slice_rows
from studies.arrangement.write.quintile_context import BOUNDS_GUARD, QuintileContext

EXP = "fq"
START = datetime(2026, 11, 20, tzinfo=UTC)
ARMS = ("control", "swap_1_2")
INSTALLS = [f"install-{i}" for i in range(12)]
CUTS = (45, 52, 60, 70)
PLAIN_CUTS = (48, 55, 63, 72)
SHA = "a" * 64
BUCKET = "toInt16(floor(log10(n_candidates) * 10))"


def click(rng: random.Random, moment: datetime, install: str) -> dict[str, Any]:
    shown = rng.random() < 0.9
    ads, box = rng.random() < 0.4, rng.random() < 0.15
    return {
        "type": "click", "schema_version": 1, "event_id": str(uuid.uuid4()),
        "sent_at": moment.isoformat(), "received_at": moment.isoformat(), "experiment_id": EXP,
        "arm": rng.choice(ARMS), "engine": "google", "install_id": install,
        "install_day": (START - timedelta(days=rng.choice([0, 10]))).date().isoformat(),
        "extension_version": "0.3.0", "page_index": 0, "n_organic": 10,
        "ads_top_count": 2 if ads else 0, "box": "top" if box else "none", "ssr_positions": [],
        "n_candidates": int(10 ** rng.uniform(4, 8)) if shown else None, "identified": rng.random() < 0.9,
        "ui_lang": "de", "market": "de", "element_type": "organic",
        "original_rank": rng.randint(1, 3), "display_rank": 1,
    }  # fmt: skip


def events(seed: int, days: range, per_day: int = 120) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for day in days:
        for _ in range(per_day):
            moment = START + timedelta(days=day, seconds=rng.randrange(0, 86400 - 7200))
            out.append(click(rng, moment, rng.choice(INSTALLS)))
    return out


async def store_batch(store: ChdbStore, batch: list[dict[str, Any]]) -> None:
    """What the worker does with a batch: raw rows, the slices it touched, the touched
    installs' study-wide rows (and sets) through the closed sums."""
    await store.insert_json_rows("raw_extension_events", b"\n".join(orjson.dumps(e) for e in batch))
    moments = (int(datetime.fromisoformat(e["received_at"]).timestamp()) for e in batch)
    slices = {(EXP, "google", moment // 10 * 10) for moment in moments}
    await store.execute(slice_rows.slices_sql(slices))
    installs = {(EXP, "google", e["install_id"]) for e in batch}
    await closed_sums.recompute(store, installs, slices, closed_sums.targets_of(slices))


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[ChdbStore]:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    await migrate(store)
    await store_batch(store, events(1, range(3)))
    try:
        yield store
    finally:
        await store.close()


async def freeze(store: ChdbStore, version: int = 2, cuts: tuple[int, ...] = CUTS) -> None:
    families = {"n_candidates": cuts, "no_ads_no_box_n_candidates": PLAIN_CUTS}
    await store.execute(quintiles.row_sql(EXP, version, SHA, families, ready=False))
    assert await quintile_rekey.rekey(store, EXP, settle_s=0)


def recount_sql(subset: str, cuts: tuple[int, ...] = CUTS) -> str:
    """Units and c1 clicks per (install, arm, age capped, identified) of a quintile subset
    (or a named one), from the raw events."""
    condition = {"all": "1", "box": "box != 'none'"}.get(subset, "")
    if "_q" in subset:
        plain, k = subset.startswith("no_ads_no_box_"), int(subset[-1])
        bounds = PLAIN_CUTS if plain else cuts
        low = f"{BUCKET} > {bounds[k - 2]}" if k > 1 else "n_candidates > 0"
        high = f"{BUCKET} <= {bounds[k - 1]}" if k < 5 else "1"
        condition = f"n_candidates > 0 AND {low} AND {high}"
        if plain:
            condition += " AND ads_top_count = 0 AND box = 'none'"
    return (
        "SELECT install_id, arm, least(dateDiff('day', install_day, toDate(received_at)), 7) AS age, "
        "toUInt8(identified) AS ident, count() AS units, countIf(original_rank = 1) AS c1 "
        f"FROM raw_extension_events FINAL WHERE experiment_id = '{EXP}' AND type = 'click' AND {condition} "
        "GROUP BY ALL ORDER BY ALL"
    )


def stored_sql(subset: str) -> str:
    return (
        "SELECT install_id, arm, install_age_days, identified, units, clicks[1] FROM "
        f"agg_arrangement_install_subset FINAL WHERE experiment_id = '{EXP}' AND subset = '{subset}' "
        "AND units > 0 ORDER BY ALL"
    )


def norm(rows: list[Any]) -> list[tuple[int | str, ...]]:
    return [tuple(int(v) if str(v).isdigit() else str(v) for v in row) for row in rows]


QUINTILE_SUBSETS = [f"{p}n_candidates_q{k}" for p in ("", "no_ads_no_box_") for k in range(1, 6)]


async def assert_recounted(store: ChdbStore, cuts: tuple[int, ...] = CUTS) -> None:
    for subset in ["all", "box", *QUINTILE_SUBSETS]:
        stored = norm((await store.query(stored_sql(subset))).rows)
        recounted = norm((await store.query(recount_sql(subset, cuts))).rows)
        assert stored == recounted, subset
    versions = await store.query(
        "SELECT DISTINCT quintiles_version FROM (SELECT quintiles_version FROM agg_arrangement_install "
        "UNION ALL SELECT quintiles_version FROM agg_arrangement_install_subset)"
    )
    assert len(versions.rows) == 1  # the old version's rows are gone
    assert not (await store.query(closed_sums.stale_installs_sql(EXP, "google"))).rows


async def test_without_frozen_boundaries_no_quintile_rows(store: ChdbStore) -> None:
    rows = await store.query(
        "SELECT count() FROM agg_arrangement_install_subset WHERE subset LIKE '%n_candidates_q%'"
    )
    assert rows.rows[0][0] == 0
    recounted = norm((await store.query(recount_sql("all"))).rows)
    assert norm((await store.query(stored_sql("all"))).rows) == recounted
    query = await with_quintile_bounds(store, ReportQuery(EXP, subset="n_candidates_q2"))
    assert not query.study_wide and query.subset_bounds()["frozen"] is False  # type: ignore[index]


async def test_new_boundaries_recompute_the_experiment_once(store: ChdbStore) -> None:
    await freeze(store)
    _, frozen = await quintiles.read_frozen(store, [EXP])
    assert frozen[EXP].ready and frozen[EXP].version == 2 and frozen[EXP].n_candidates == CUTS
    await assert_recounted(store)
    # nothing to do on the next tick: the boundaries are ready and the plan states none
    assert await quintile_rekey.keep_quintiles(store, settle_s=0) == []
    # other boundaries (an explicit amendment): recomputed again, the old quintiles gone
    await freeze(store, version=3, cuts=(40, 50, 58, 66))
    await assert_recounted(store, (40, 50, 58, 66))


async def test_live_and_replayed_batches_land_in_their_quintile(store: ChdbStore) -> None:
    await freeze(store)
    live = events(2, range(3, 5))  # a new day closes the first days: the sets advance
    await store_batch(store, live)
    await assert_recounted(store)
    before = norm((await store.query(stored_sql("n_candidates_q3"))).rows)
    await store_batch(store, live[:50])  # a replay: the same events again, stored once
    await assert_recounted(store)
    assert norm((await store.query(stored_sql("n_candidates_q3"))).rows) == before


async def test_a_recompute_planned_with_older_boundaries_is_refused(store: ChdbStore) -> None:
    old = await QuintileContext.read(store, [EXP])
    await store.execute(quintiles.row_sql(EXP, 2, SHA, {"n_candidates": CUTS}, ready=False))
    keys = [(EXP, "google", i) for i in INSTALLS]
    with pytest.raises(Exception, match=BOUNDS_GUARD):
        await store.execute(slice_rows.installs_sql(keys, old))
    assert await quintile_rekey.rekey(store, EXP, settle_s=0)
    await store_batch(store, events(3, range(3, 4)))  # recomputes with the new boundaries
    rows = await store.query(
        f"SELECT count() FROM agg_arrangement_install_subset FINAL WHERE experiment_id = '{EXP}' "
        "AND subset LIKE 'no_ads_no_box_n_candidates_q%'"
    )
    assert rows.rows[0][0] == 0  # that plan froze one family only


async def test_a_plan_with_boundaries_and_no_row_gets_one(store: ChdbStore) -> None:
    """A plan stored before migration 0042, or a crash between the plan's row and the
    boundaries': the worker's tick writes the row from the plan and recomputes."""
    families = {"n_candidates": CUTS, "no_ads_no_box_n_candidates": PLAIN_CUTS}
    plan = {"quintiles": {family: {"kept": list(cuts)} for family, cuts in families.items()}}
    row = {"experiment_id": EXP, "version": 1, "plan": orjson.dumps(plan).decode(), "sha256": SHA,
           "registered_at": "2026-11-20 00:00:00", "registered_by": "k", "kind": "registration",
           "reason": ""}  # fmt: skip
    await store.insert_json_rows("analysis_plans", orjson.dumps(row))
    assert await quintile_rekey.keep_quintiles(store, settle_s=0) == [EXP]
    await assert_recounted(store)


async def test_the_report_reads_a_frozen_quintile_like_box(store: ChdbStore) -> None:
    await freeze(store)
    query = await with_quintile_bounds(store, ReportQuery(EXP, burn_in_days=0, subset="n_candidates_q3"))
    assert query.study_wide and "agg_arrangement_install_subset" in query.per_install_sql()
    assert query.subset_bounds() == {
        "column": "n_candidates_bucket", "above": CUTS[1], "at_most": CUTS[2], "frozen": True,
        "plan_version": 2, "plan_sha256": SHA,
    }  # fmt: skip
    report = await run_experiment_report(store, query, ranks=1)
    units = sum(r.units for r in report.figure3)
    kept = [r for r in norm((await store.query(recount_sql("n_candidates_q3"))).rows) if r[3] == 1]
    assert units == sum(int(r[4]) for r in kept)
    # a time range reads the days with the same frozen range
    ranged = await with_quintile_bounds(
        store, ReportQuery(EXP, burn_in_days=0, subset="n_candidates_q3", since=START.date())
    )
    assert not ranged.study_wide and ranged.quintile_bounds == (CUTS, CUTS)
    assert sum(r.units for r in (await run_experiment_report(store, ranged, ranks=1)).figure3) == units


async def test_an_erased_install_leaves_no_row(store: ChdbStore) -> None:
    await freeze(store)

    async def no_looks(experiment_id: str, engine: str) -> None:
        return None

    receipt = await Eraser(store, no_looks, settle_s=0).erase(INSTALLS[0], "operator")
    assert receipt.rows_removed["agg_arrangement_install_subset"] > 0
    for table in quintile_rekey.TABLES:
        left = await store.query(f"SELECT count() FROM {table} WHERE install_id = '{INSTALLS[0]}'")
        assert left.rows[0][0] == 0, table
    await assert_recounted(store)
