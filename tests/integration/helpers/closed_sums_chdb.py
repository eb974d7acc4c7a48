"""The study-wide per-install rows from closed days' sums (migration 0034) on a fresh chDB, in
a process of its own (chDB allows one session per process; run by test_closed_sums.py as
``python -m``).

A study's first days are stored and recomputed the way they were before the migration, and
the migration's backfill runs on them (an existing data directory upgrading). Then installs
come back day after day in several batches each through the worker's roll-up, with a late
event for an old day, a replayed batch, a set left half-written (a crash), and an import of
old events. After each step every derived table is compared with a recount from the
deduplicated raw rows (``extension_events``), written here from the raw columns, not from the
code under test. Prints, as JSON, per step the rows that differ per table and what the
recomputes did (installs from their closed sums, installs recomputed whole, sets written).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from schemas.sql import load_migrations
from schemas.topics import EXTENSION
from streams.bulk_import import BulkImporter
from streams.processors.arrangement_rollup import ArrangementRollup
from streams.recompute.batch import install_keys, slice_keys
from studies.arrangement.write import clicks_by_rank, closed_sums, hourly_replicates, slice_rows
from tests.integration.helpers.chdb_study import print_run
from tests.integration.test_end_to_end import HOURLY_RECOUNT, HOURLY_STORED, hourly_recount

EXP = "closed"
START = datetime(2026, 9, 1, tzinfo=UTC)
HISTORY_DAYS = 4
LIVE_DAYS = 5
BATCHES_PER_DAY = 3
FRESH = "fresh-install-0001"
YOUNG = "closed-young"
GOOGLE = (("google", 1.0),)

LEADING_SSR = "length(arrayFilter((p, i) -> p = i, ssr_positions, arrayEnumerate(ssr_positions)))"
SSR_BETWEEN = f"has(ssr_positions, {LEADING_SSR} + 2)"
"""An SSR between c1 and c2, recounted in its own words: the leading run of specialized
positions (each equal to its index), k long, then position k + 2 specialized."""
CONTEXT = (
    "experiment_id, engine, install_id, arm, "
    "toUInt8(least(greatest(dateDiff('day', install_day, toDate(received_at)), 0), 7)) AS age, "
    "toUInt8(identified) AS ident, toUInt8(ads_top_count > 0) AS ads, toUInt8(box != 'none') AS boxp, "
    f"toUInt8({SSR_BETWEEN}) AS ssr"
)
COUNTS = (
    "countIf(type = 'click' AND page_index = 0) AS units, "
    "countIf(type = 'serp_view' AND page_index = 0) AS impressions, ["
    + ", ".join(
        f"countIf(type = 'click' AND element_type = 'organic' AND page_index = 0 AND original_rank = {r})"
        for r in range(1, 11)
    )
    + "] AS clicks, countIf(type = 'click' AND page_index = 0 AND element_type = 'ad') AS clicks_ad, "
    "countIf(type = 'click' AND page_index = 0 AND element_type = 'shopping_box') AS clicks_box, "
    "countIf(type = 'click' AND page_index = 0 AND element_type = 'ssr') AS clicks_ssr, "
    "countIf(type = 'click' AND page_index = 0 AND element_type = 'other') "
    "AS clicks_other, countIf(type = 'click' AND page_index > 0) AS later_units, "
    "countIf(type = 'serp_view' AND page_index > 0) AS later_impressions"
)
SLICE = "toStartOfInterval(received_at, INTERVAL 10 SECOND)"
INSTALL_RECOUNT = f"""
SELECT {CONTEXT}, {COUNTS}, toDateTime(min({SLICE}), 'UTC') AS first_slice,
       toDateTime(max({SLICE}), 'UTC') AS last_slice
FROM extension_events WHERE experiment_id = '__EXP__' AND {{where}}
GROUP BY experiment_id, engine, install_id, arm, age, ident, ads, boxp, ssr
"""
INSTALL_STORED = """
SELECT experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present,
       ssr_c1_c2, units, impressions, clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units,
       later_impressions, first_slice, last_slice
FROM {table} FINAL WHERE experiment_id = '{exp}' AND arm != ''
"""
SUBSETS = {
    "all": "1",
    "ads_or_box": "ads = 1 OR boxp = 1",
    "no_ads_no_box": "ads = 0 AND boxp = 0",
    "box": "boxp = 1",
    "ssr_c1_c2": "ssr = 1",
    "ads_no_box": "ads = 1 AND boxp = 0",
    "no_ssr_c1_c2": "ssr = 0",
    "ads": "ads = 1",
}
IN_SUBSETS = ", ".join(f"if({condition}, '{name}', '')" for name, condition in SUBSETS.items())
SUBSET_RECOUNT = f"""
SELECT experiment_id, engine, subset, install_id, arm, age, ident, sum(units), sum(impressions),
       sumForEach(clicks), sum(clicks_ad), sum(clicks_box), sum(clicks_ssr), sum(clicks_other),
       sum(later_units), sum(later_impressions)
FROM ({INSTALL_RECOUNT.format(where="1")})
ARRAY JOIN arrayFilter(s -> s != '', [{IN_SUBSETS}]) AS subset
GROUP BY experiment_id, engine, subset, install_id, arm, age, ident
"""
SUBSET_STORED = """
SELECT experiment_id, engine, subset, install_id, arm, install_age_days, identified, units, impressions,
       clicks, clicks_ad, clicks_box, clicks_ssr, clicks_other, later_units, later_impressions
FROM agg_arrangement_install_subset FINAL WHERE experiment_id = '__EXP__'
"""
SLICE_RECOUNT = f"""
SELECT engine, install_id, toDateTime({SLICE}, 'UTC') AS slice, arm, {COUNTS}
FROM extension_events WHERE experiment_id = '__EXP__'
GROUP BY engine, install_id, slice, arm
"""
SLICE_STORED = """
SELECT engine, install_id, slice_start, arm, sum(units), sum(impressions), sumForEach(clicks), sum(clicks_ad),
       sum(clicks_box), sum(clicks_ssr), sum(clicks_other), sum(later_units), sum(later_impressions)
FROM agg_arrangement_10s FINAL WHERE experiment_id = '__EXP__'
GROUP BY engine, install_id, slice_start, arm
"""
MINUTE_RECOUNT = """
SELECT engine, arm, r, toStartOfMinute(received_at) AS window_start,
       countIf(type = 'click' AND page_index = 0), countIf(type = 'serp_view' AND page_index = 0),
       countIf(type = 'click' AND page_index = 0 AND ifNull(original_rank, 0) = r)
FROM extension_events ARRAY JOIN range(1, 11) AS r WHERE experiment_id = '__EXP__'
GROUP BY engine, arm, r, window_start
"""
MINUTE_STORED = """
SELECT engine, arm, original_rank, window_start, units, impressions, clicks
FROM clicks_by_rank_1m WHERE experiment_id = '__EXP__'
"""
CLOSED_SETS = f"""
SELECT install_id, engine, max(through) AS through, {closed_sums.WHOLE_SQL} AS whole
FROM agg_arrangement_install_closed FINAL WHERE experiment_id = '__EXP__'
GROUP BY install_id, engine
"""


async def differing_rows(store: ChdbStore, one: str, other: str) -> int:
    """Rows of either query missing from the other."""
    total = 0
    for a, b in ((one, other), (other, one)):
        result = await store.query(f"SELECT count() FROM ({a} EXCEPT {b})")
        total += int(result.rows[0][0])
    return total


async def differing_sets(store: ChdbStore, exp: str) -> int:
    """The whole sets of closed sums whose rows differ from a recount of their install's raw
    rows before the set's ``through`` (a set not whole is never read: its install is
    recomputed whole and its set rebuilt). One statement for every set: each raw row is held
    to its own install's ``through``."""
    rows = (await store.query(CLOSED_SETS.replace("__EXP__", exp))).rows
    sets = [(install_id, engine, through) for install_id, engine, through, whole in rows if int(whole)]
    if not sets:
        return 0
    key = "concat(install_id, '|', engine)"
    keys = ", ".join(f"'{install_id}|{engine}'" for install_id, engine, _ in sets)
    throughs = ", ".join(f"'{through}'" for _, _, through in sets)
    mine = f"{key} IN ({keys})"
    through = f"toDateTime64(transform({key}, [{keys}], [{throughs}], '1970-01-01 00:00:00'), 3, 'UTC')"
    stored = INSTALL_STORED.format(table="agg_arrangement_install_closed", exp=exp) + f" AND {mine}"
    recount = INSTALL_RECOUNT.replace("__EXP__", exp).format(where=f"{mine} AND received_at < {through}")
    either = (
        f"SELECT install_id, engine FROM ({stored} EXCEPT {recount}) "
        f"UNION ALL SELECT install_id, engine FROM ({recount} EXCEPT {stored})"
    )
    result = await store.query(f"SELECT uniqExact(install_id, engine) FROM ({either})")
    return int(result.rows[0][0])


async def differences(store: ChdbStore, hourly: bool = False, exp: str = EXP) -> dict[str, int]:
    """Per derived table, the rows that differ from a recount from the raw rows; for the
    closed sums, the whole sets whose rows differ from a recount before their ``through``."""

    async def differing(one: str, other: str) -> int:
        return await differing_rows(store, one.replace("__EXP__", exp), other.replace("__EXP__", exp))

    out = {
        "agg_arrangement_10s": await differing(SLICE_STORED, SLICE_RECOUNT),
        "agg_arrangement_install": await differing(
            INSTALL_STORED.format(table="agg_arrangement_install", exp=exp),
            INSTALL_RECOUNT.format(where="1"),
        ),
        "agg_arrangement_install_subset": await differing(SUBSET_STORED, SUBSET_RECOUNT),
        "clicks_by_rank_1m": await differing(MINUTE_STORED, MINUTE_RECOUNT),
    }
    out["agg_arrangement_install_closed"] = await differing_sets(store, exp)
    if hourly:
        expected = hourly_recount((await store.query(HOURLY_RECOUNT.format(exp=exp))).dicts())
        stored_hours = {
            (r["engine"], int(r["hour"]), r["arm"], int(r["age"]), int(r["ident"])): (
                [r["units"], r["impressions"], *r["clicks"]],
                [r["installs_units"], r["installs_impressions"]],
                *(
                    [int(x) for x in r[f"rep_{c}_text"].split(",")]
                    for c in ("units", "impressions", "clicks")
                ),
            )
            for r in (await store.query(HOURLY_STORED.format(exp=exp))).dicts()
        }
        keys = expected.keys() | stored_hours.keys()
        out["agg_arrangement_replicates_1h"] = sum(expected.get(k) != stored_hours.get(k) for k in keys)
    return out


class Counted:
    """What the recomputes planned, per step: installs from their closed sums (``closed``),
    recomputed whole (``whole``), and sets written (``sets``)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._plans_of = closed_sums.plans_of

    def __call__(self, *args: Any, **kwargs: Any) -> list[closed_sums.Plan]:
        plans = self._plans_of(*args, **kwargs)
        for plan in plans:
            self.counts["closed" if plan.valid else "whole"] += 1
            self.counts["sets"] += plan.action
        return plans

    def take(self) -> dict[str, int]:
        out, self.counts = dict(self.counts), Counter()
        return out


def stamped(events: list[dict[str, Any]], day: date, hour: int) -> list[dict[str, Any]]:
    """``events`` received a minute apart from ``hour`` of ``day``."""
    base = datetime(day.year, day.month, day.day, hour, tzinfo=UTC)
    for n, event in enumerate(events):
        moment = base + timedelta(seconds=60 * n + n % 7)
        event["received_at"] = moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return events


def lines(events: list[dict[str, Any]]) -> bytes:
    return b"\n".join(orjson.dumps(e) for e in events)


async def stream(store: ChdbStore, rollup: ArrangementRollup, events: list[dict[str, Any]]) -> None:
    """What the worker does with a batch: raw rows, the minute aggregate, the roll-up."""
    await store.insert_json_rows("raw_extension_events", lines(events))
    slices = slice_keys(events, clicks_by_rank.SLICE_S)
    await store.execute(clicks_by_rank.recompute_sql(slices))
    await rollup.mark(slices, install_keys(events))


async def run(path: Path, events: int) -> dict[str, Any]:
    store = ChdbStore(path)
    out: dict[str, Any] = {}
    counted = Counted()
    closed_sums.plans_of = counted  # type: ignore[assignment]
    try:
        await migrate(store)
        config = TrafficConfig(
            experiment_id=EXP,
            installs=30,
            seed=34,
            today=(START + timedelta(days=3)).date(),
            p_new_install=0.5,
        )
        traffic: Iterator[dict[str, Any]] = ExtensionTraffic(config).events()
        young_config = TrafficConfig(
            experiment_id=YOUNG, installs=8, seed=35, today=START.date(), engines=GOOGLE
        )
        young: Iterator[dict[str, Any]] = ExtensionTraffic(young_config).events()
        per_batch = max(1, events // ((HISTORY_DAYS + LIVE_DAYS) * BATCHES_PER_DAY))

        # 1. the first days stored and recomputed as before the backfill of the closed sums
        history = []
        for day in range(HISTORY_DAYS):
            for batch in range(BATCHES_PER_DAY):
                when = (START + timedelta(days=day)).date()
                history += stamped(list(itertools.islice(traffic, per_batch)), when, 6 + 5 * batch)
        await store.insert_json_rows("raw_extension_events", lines(history))
        for engine in ("google", "bing"):
            for day in range(HISTORY_DAYS):
                lo = int(START.timestamp()) + day * 86400
                await store.execute(clicks_by_rank.range_sql(EXP, engine, lo, lo + 86400))
                await store.execute(slice_rows.slices_range_sql(EXP, engine, lo, lo + 86400))
            await store.execute(slice_rows.experiment_installs_sql(EXP, engine))
            await store.execute(slice_rows.experiment_subsets_sql(EXP, engine))
            await hourly_replicates.recompute_study(store, EXP, engine)
        # the newest backfill of the sets: 0039 (issue 37's recount) rebuilt 0034's with the
        # later-page columns; 0034's own statement writes the columns it knew, and runs on
        # data directories without the later ones only
        (backfill,) = [m for m in load_migrations() if m.version == 39]
        for _ in range(2):  # applied again (an interrupted migration is): the same sets
            for statement in backfill.statements:
                await store.execute(statement)
        out["upgrade"] = await differences(store, hourly=True)
        out["upgrade_sets"] = len((await store.query(CLOSED_SETS.replace("__EXP__", EXP))).rows)

        rollup = ArrangementRollup(store, interval_s=0.0, max_backoff_s=0.5, hourly_interval_s=0.0)
        try:
            # 2. installs come back day after day, a few batches a day
            live = []
            for day in range(HISTORY_DAYS, HISTORY_DAYS + LIVE_DAYS):
                for batch in range(BATCHES_PER_DAY):
                    when = (START + timedelta(days=day)).date()
                    events_now = stamped(list(itertools.islice(traffic, per_batch)), when, 6 + 5 * batch)
                    for e in events_now[:2] if batch == 0 else ():
                        e["install_id"], e["engine"] = FRESH, "google"  # an install new to the study
                    # and a study that begins now: none of its installs has a set yet; its
                    # events come in the same batch, as the worker's batches mix experiments
                    # (one recompute covers both)
                    young_now = stamped(list(itertools.islice(young, 12)), when, 7 + 5 * batch)
                    await stream(store, rollup, events_now + young_now)
                    live.append(events_now)
                out[f"day {day}"] = {**await differences(store), "plans": counted.take()}
            throughs = await store.query(
                f"SELECT DISTINCT through FROM agg_arrangement_install_closed FINAL "
                f"WHERE experiment_id = '{EXP}' AND arm = '' ORDER BY through"
            )
            out["throughs"] = [str(r[0]) for r in throughs.rows]
            fresh = await store.query(
                f"SELECT toString(max(through)) FROM agg_arrangement_install_closed FINAL "
                f"WHERE experiment_id = '{EXP}' AND install_id = '{FRESH}' AND arm = ''"
            )
            out["fresh install through"] = str(fresh.rows[0][0]) if fresh.rows else None
            out["young"] = await differences(store, exp=YOUNG)
            young_sets = await store.query(
                "SELECT toString(min(through)), toString(max(through)), count() FROM "
                f"agg_arrangement_install_closed FINAL WHERE experiment_id = '{YOUNG}' AND arm = ''"
            )
            out["young sets"] = [str(v) for v in young_sets.rows[0]]

            # 3. a late event: an install's event of an old day, after its day was closed
            late = stamped(list(itertools.islice(traffic, 1)), (START + timedelta(days=1)).date(), 23)
            await stream(store, rollup, late)
            out["late event"] = {**await differences(store), "plans": counted.take()}

            # 4. a batch replayed after a crash: stored again, recomputed again
            await stream(store, rollup, live[-2])
            out["replay"] = {**await differences(store), "plans": counted.take()}

            # 5. a crash half-way through writing a set: some of its rows written, wrong ones
            whole = (
                f"SELECT install_id, engine FROM ({CLOSED_SETS.replace('__EXP__', EXP)}) WHERE whole LIMIT 1"
            )
            (victim,) = (await store.query(whole)).rows
            await store.execute(
                "INSERT INTO agg_arrangement_install_closed SELECT * REPLACE (units + 1000 AS units, "
                f"now64(6) AS computed_at) FROM agg_arrangement_install_closed FINAL WHERE experiment_id = "
                f"'{EXP}' AND install_id = '{victim[0]}' AND engine = '{victim[1]}' AND arm != '' LIMIT 1"
            )
            sets = CLOSED_SETS.replace("__EXP__", EXP)
            mine = f"install_id = '{victim[0]}' AND engine = '{victim[1]}'"
            out["half-written set is whole"] = int(
                (await store.query(f"SELECT whole FROM ({sets}) WHERE {mine}")).rows[0][0]
            )
            more = list(itertools.islice(traffic, per_batch))
            for e in more[::2]:
                e["install_id"], e["engine"] = victim  # the batch touches the install of that set
            last_day = (START + timedelta(days=HISTORY_DAYS + LIVE_DAYS - 1)).date()
            await stream(store, rollup, stamped(more, last_day, 22))
            out["after a half-written set"] = {**await differences(store), "plans": counted.take()}
        finally:
            await rollup.close()

        # 6. an import of old events (and of some already stored), as POST /v1/import does
        importer = BulkImporter(store)
        old = stamped(list(itertools.islice(traffic, per_batch * 2)), (START + timedelta(days=2)).date(), 9)
        body = lines(old + history[:5])
        written = await importer.write(EXTENSION, body, len(old) + 5)
        out["import written"] = [written.inserted, written.duplicates]
        for span in sorted(written.spans):
            await importer.recompute_day(span)
        for experiment_id, engine in sorted({(s.experiment_id, s.engine) for s in written.spans}):
            await importer.recompute_installs(experiment_id, engine)
        out["import"] = {**await differences(store, hourly=True), "plans": counted.take()}
    finally:
        closed_sums.plans_of = counted._plans_of  # type: ignore[assignment]
        await store.close()
    return out


if __name__ == "__main__":
    print_run(run, 900)
