"""The worker's per-batch work on the study-wide per-install statistics as installs age:
batches of one size for installs with ~10, ~100 and ~1000 prior events each, the old
recompute (every touched install from all of its slices) against the one from closed days'
sums (migration 0034), in the same run.

    .venv/bin/python -m bench.install_age [--installs 200] [--levels 10,100,1000] [--rounds 12]

One fresh chDB (in a temporary folder) holds one study per level: ``--installs`` installs
with ``level`` prior events each on average, about 20 a day (so 1000 events are 50 days),
stored raw and recomputed as an import does. Then, round after round, a batch of ``--batch``
events of every study arrives at its 'now' (18:00, the end of its history); each batch
is stored raw and recomputed twice, the old way and the new, in alternating order (each
leaves every table exact, so each finds what the other left). Timed per batch: the roll-up's
statements (the touched slices, then the study-wide and per-subset rows; the new way also
its plan and, once a day per install, the closed sums), as wall time and as this process's
CPU time (chDB runs in it). Prints the medians, each level's ratio to the ~10 level of the
same way and the new way's ratio to the old, and a single first batch of the next day (02:00,
when the new way also moves the touched installs' closed sums a day forward); checks that
the study-wide rows equal a recount, and appends a JSON line with the git sha to
``bench/results.jsonl``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from bench.common import append_result
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from streams.bulk_import import BulkImporter, Span
from streams.recompute.batch import install_keys, slice_keys
from studies.arrangement.write import clicks_by_rank, closed_sums, slice_rows

PER_DAY = 20
"""Prior events per install and day."""
NOW = datetime(2026, 9, 1, 18, tzinfo=UTC)
"""Where every study's history ends and its batches arrive."""

Batch = tuple[set[tuple[str, str, int]], list[tuple[str, str, str]]]


def received(event: dict[str, Any], moment: datetime) -> dict[str, Any]:
    event["received_at"] = moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    return event


async def seed(store: ChdbStore, experiment_id: str, level: int, installs: int) -> Iterator[dict[str, Any]]:
    """The study's history stored raw and recomputed as an import does; its traffic, for more."""
    traffic = ExtensionTraffic(
        TrafficConfig(experiment_id=experiment_id, installs=installs, seed=level, today=NOW.date())
    ).events()
    days = max(1, level // PER_DAY)
    total = installs * level
    start = NOW - timedelta(days=days)
    step = days * 86400 / total
    for first in range(0, total, 50_000):
        events = [
            orjson.dumps(received(e, start + timedelta(seconds=(first + i) * step)))
            for i, e in enumerate(itertools.islice(traffic, min(50_000, total - first)))
        ]
        await store.insert_json_rows("raw_extension_events", b"\n".join(events))
    importer = BulkImporter(store)
    first_day = int(start.timestamp()) // 86400 * 86400
    for engine in ("google", "bing"):
        for day in range(days + 2):
            await importer.recompute_day(Span(experiment_id, engine, first_day + day * 86400))
        await importer.recompute_installs(experiment_id, engine)
    return traffic


async def old_way(store: ChdbStore, batch: Batch) -> None:
    """The roll-up before migration 0034: every touched install from all of its slices."""
    slices, installs = batch
    await store.execute(slice_rows.slices_sql(slices), background=True)
    for start in range(0, len(installs), 2000):
        chunk = installs[start : start + 2000]
        await store.execute(slice_rows.installs_sql(chunk), background=True)
        await store.execute(slice_rows.subsets_sql(chunk), background=True)


async def new_way(store: ChdbStore, batch: Batch) -> None:
    """The roll-up now (``ArrangementRollup._recompute_installs`` without the looks)."""
    slices, installs = batch
    await store.execute(slice_rows.slices_sql(slices), background=True)
    targets = closed_sums.targets_of(slices)
    await closed_sums.recompute(store, installs, slices, targets, background=True)


WAYS: dict[str, Callable[[ChdbStore, Batch], Awaitable[None]]] = {"old": old_way, "new": new_way}


async def timed(
    way: Callable[[ChdbStore, Batch], Awaitable[None]], store: ChdbStore, batch: Batch
) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    await way(store, batch)
    return time.perf_counter() - wall, time.process_time() - cpu


async def differing_rows(store: ChdbStore, experiment_id: str) -> int:
    """Study-wide rows that differ from a recount of the slices (both ways)."""
    where = f"experiment_id = '{experiment_id}'"
    context = (
        "experiment_id, engine, install_id, arm, install_age_days, identified, ads_present, box_present, "
    )
    context += "ssr_c1_c2"
    stored = (
        f"SELECT {context}, units, impressions, clicks, first_slice, last_slice "
        f"FROM agg_arrangement_install FINAL WHERE {where}"
    )
    capped = context.replace("install_age_days", "toUInt8(least(install_age_days, 7)) AS install_age_days")
    recount = (
        f"SELECT {capped}, sum(units), sum(impressions), arrayMap(x -> toUInt64(x), sumForEach(clicks)), "
        f"min(slice_start), max(slice_start) FROM agg_arrangement_10s FINAL WHERE {where} GROUP BY {context}"
    )
    total = 0
    for a, b in ((stored, recount), (recount, stored)):
        total += int((await store.query(f"SELECT count() FROM ({a} EXCEPT {b})")).rows[0][0])
    return total


async def run(path: Path, installs: int, levels: list[int], rounds: int, size: int) -> dict[str, Any]:
    store = ChdbStore(path, read_lanes=1)
    try:
        await migrate(store)
        traffic = {}
        for level in levels:
            started = time.perf_counter()
            traffic[level] = await seed(store, f"prior{level}", level, installs)
            print(
                f"~{level} prior events x {installs} installs: {time.perf_counter() - started:.1f} s",
                file=sys.stderr,
            )
        samples: dict[tuple[str, int], list[tuple[float, float]]] = {
            (w, lv): [] for w in WAYS for lv in levels
        }
        touched: dict[int, list[int]] = {level: [] for level in levels}

        async def batch_at(level: int, moment: datetime) -> Batch:
            events = [
                received(e, moment + timedelta(milliseconds=i))
                for i, e in enumerate(itertools.islice(traffic[level], size))
            ]
            await store.insert_json_rows("raw_extension_events", b"\n".join(orjson.dumps(e) for e in events))
            slices = slice_keys(events, clicks_by_rank.SLICE_S)
            await store.execute(clicks_by_rank.recompute_sql(slices))
            touched[level].append(len(install_keys(events)))
            return slices, sorted(install_keys(events))

        for n in range(rounds):
            order = levels[n % len(levels) :] + levels[: n % len(levels)]
            for level in order:
                batch = await batch_at(level, NOW + timedelta(seconds=10 * n))
                for way in ["old", "new"] if n % 2 else ["new", "old"]:
                    samples[way, level].append(await timed(WAYS[way], store, batch))
        # the first batch of the next day (02:00): the new way also advances the sets it touches
        rollover = {}
        for level in levels:
            batch = await batch_at(level, NOW + timedelta(hours=8))
            for way in ("new", "old"):
                wall, cpu = await timed(WAYS[way], store, batch)
                rollover[f"{way} {level}"] = {
                    "wall_ms": round(wall * 1000, 1),
                    "cpu_ms": round(cpu * 1000, 1),
                }
        medians = {
            f"{way} {level}": {
                "wall_ms": round(statistics.median(s[0] for s in runs) * 1000, 1),
                "cpu_ms": round(statistics.median(s[1] for s in runs) * 1000, 1),
            }
            for (way, level), runs in samples.items()
        }
        base = levels[0]
        ratios = {
            f"{way} {level}/{base}": {
                m: round(medians[f"{way} {level}"][m] / medians[f"{way} {base}"][m], 2)
                for m in ("wall_ms", "cpu_ms")
            }
            for way in WAYS
            for level in levels[1:]
        }
        new_to_old = {
            f"{level}": {
                m: round(medians[f"new {level}"][m] / medians[f"old {level}"][m], 2)
                for m in ("wall_ms", "cpu_ms")
            }
            for level in levels
        }
        rows = {}
        for level in levels:
            counted = await store.query(
                "SELECT (SELECT count() FROM agg_arrangement_10s FINAL WHERE experiment_id = "
                f"'prior{level}'), (SELECT count() FROM agg_arrangement_install_closed FINAL WHERE "
                f"experiment_id = 'prior{level}')"
            )
            rows[f"{level}"] = {"slices": int(counted.rows[0][0]), "closed": int(counted.rows[0][1])}
        return {
            "bench": "install_age",
            "installs": installs,
            "batch_events": size,
            "rounds": rounds,
            "installs_per_batch": {f"{lv}": round(statistics.mean(v), 1) for lv, v in touched.items()},
            "rows": rows,
            "medians": medians,
            "ratios_to_fewest_prior_events": ratios,
            "new_to_old": new_to_old,
            "first_batch_of_a_day": rollover,
            "differing_rows": {f"{lv}": await differing_rows(store, f"prior{lv}") for lv in levels},
        }
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--installs", type=int, default=200, help="installs per study")
    parser.add_argument("--levels", default="10,100,1000", help="prior events per install, one study each")
    parser.add_argument("--rounds", type=int, default=12, help="batches per study")
    parser.add_argument("--batch", type=int, default=400, help="events per batch")
    args = parser.parse_args()
    levels = sorted(int(x) for x in args.levels.split(","))
    with tempfile.TemporaryDirectory() as folder:
        row = asyncio.run(run(Path(folder) / "chdb", args.installs, levels, args.rounds, args.batch))
    print(json.dumps(row, indent=2))
    append_result(Path(__file__).with_name("results.jsonl"), row)


if __name__ == "__main__":
    main()
