"""What storing one more day's decision-line look costs on a kept study, against one pass
over every day (the way before migration 0029), in the same run.

Run from a checkout on a study kept by ``bench.read_scale --keep DIR`` while no service
runs on it (chDB has one owner): ``.venv/bin/python -m bench.daily_look DIR``.

For the study's default selection it times, in turn: the pass over every day up to the
last complete day (``compute_looks``, the baseline); the looks stored from scratch up to
the day before it (a calendar month per pass, with their totals); then the one more day
stored from those totals, as a live study does once a day. It leaves the study's looks
stored with their totals, as the service would.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from analytics.stats.arrangement_table import Look
from bench.common import append_result
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from studies.arrangement import looks as shared
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write import looks as kept


def same_look(a: Look, b: Look) -> bool:
    """One look as stored and as computed, bounds to 1e-12 (NaN equals NaN)."""

    def close(x: float, y: float) -> bool:
        return math.isnan(x) == math.isnan(y) and (math.isnan(x) or math.isclose(x, y, rel_tol=1e-12))

    return (
        (a.look, a.arm, a.installs) == (b.look, b.arm, b.installs)
        and close(a.low, b.low)
        and close(a.high, b.high)
    )


async def run(data_dir: Path, experiment_id: str) -> dict[str, Any]:
    store = ChdbStore(data_dir / "data" / "clickhouse")
    try:
        await migrate(store)
        query = ReportQuery(experiment_id)
        span = await shared.data_days(store, query)
        if span is None:
            raise SystemExit(f"no data for {experiment_id} in {data_dir}")
        first, last = span
        started = time.perf_counter()
        looks = await shared.compute_looks(store, query, 0, "control", last)
        one_pass = time.perf_counter() - started
        print(f"one pass over {len({x.look for x in looks})} days: {one_pass:.2f} s", file=sys.stderr)

        await kept.forget_looks(store, experiment_id, query.engine)
        started = time.perf_counter()
        await kept.stored_through(store, query, now=shared.completed_at(last - timedelta(days=1)))
        scratch = time.perf_counter() - started
        print(f"stored from scratch to the day before: {scratch:.2f} s", file=sys.stderr)
        started = time.perf_counter()
        stored, through, _ = await kept.stored_through(store, query, now=shared.completed_at(last))
        one_day = time.perf_counter() - started
        print(f"one more day from the stored totals: {one_day:.2f} s", file=sys.stderr)
        same = len(stored) == len(looks) and all(
            (a.look, a.arm, a.installs) == (b.look, b.arm, b.installs)
            for a, b in zip(stored, looks, strict=True)
        )
        return {
            "bench": "daily_look",
            "first_day": first.isoformat(),
            "through": str(through),
            "one_pass_s": round(one_pass, 3),
            "from_scratch_s": round(scratch, 3),
            "one_more_day_s": round(one_day, 3),
            "one_more_day_ratio_to_one_pass": round(one_day / one_pass, 3),
            "same_looks": same,
        }
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", type=Path, help="a study kept by bench.read_scale --keep")
    parser.add_argument("--experiment", default="national-panel")
    args = parser.parse_args()
    row = asyncio.run(run(args.dir, args.experiment))
    print(row)
    append_result(Path(__file__).with_name("results.jsonl"), row)


if __name__ == "__main__":
    main()
