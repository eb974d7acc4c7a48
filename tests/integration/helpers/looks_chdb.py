"""The decision line's stored looks extended day by day from their stored totals, on a fresh
chDB in a process of its own (chDB allows one session per process; run by
test_decision_looks.py as ``python -m``).

A study over two calendar months is stored and recomputed as a bulk import does. Its
looks are then stored as the days complete, a few days at a time and across the month's
end, after a forget from a day on, after the totals were lost, and from scratch; each
time they are compared with one pass over every day (``compute_looks``). Prints JSON.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from analytics.stats.arrangement_table import Look, first_exclusions
from collectors.simulate.extension_traffic import TrafficConfig
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from schemas.sql import quote
from studies.arrangement import looks as shared
from studies.arrangement.read import decision_line
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write import looks as keeper
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "looks"
START = datetime(2026, 8, 26, 5, tzinfo=UTC)
DAYS = 10
"""Aug 26 05:00 .. Sep 5 05:00: the study crosses a month's end (the slices' partitions)."""


def as_stored(looks: list[Look], through: date) -> list[list[Any]]:
    """Looks up to ``through`` as lists (a NaN bound as the text "nan": NaN != NaN)."""

    def value(x: float) -> float | str:
        return "nan" if math.isnan(x) else x

    return [
        [shared.day_of(x.look).isoformat(), x.arm, x.installs, value(x.low), value(x.high)]
        for x in sorted(looks, key=lambda x: (x.look, x.arm))
        if shared.day_of(x.look) <= through
    ]


def same(got: list[list[Any]], want: list[list[Any]]) -> bool:
    """The same looks: days, arms and installs exactly, bounds to 1e-12 (the arms may come
    in another order from another set of rows, which moves the last bit of a sum)."""

    def close(x: float | str, y: float | str) -> bool:
        if isinstance(x, str) or isinstance(y, str):
            return x == y
        return math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15)

    return len(got) == len(want) and all(
        a[:3] == b[:3] and close(a[3], b[3]) and close(a[4], b[4]) for a, b in zip(got, want, strict=True)
    )


class CountingStore(ChdbStore):
    """A chDB store that notes which days each read of the slices covered, and whether it
    read stored totals with them."""

    reads: list[str]
    after_read: Callable[[], Awaitable[None]] | None = None
    """Run once, right after the next read of the slices (a forget landing mid-extension)."""

    async def query_arrow(self, sql: str) -> Any:
        table = await super().query_arrow(sql)
        if "agg_arrangement_10s" in sql:
            days = re.findall(r"slice_start (?:>=|<) toDateTime\('(\d{4}-\d{2}-\d{2})", sql)
            self.reads.append("..".join(days) + (" + totals" if shared.TOTALS in sql else ""))
            hook, self.after_read = self.after_read, None
            if hook is not None:
                await hook()
        return table


async def run(path: Path, events: int) -> dict[str, Any]:
    store = CountingStore(path)
    store.reads = []
    out: dict[str, Any] = {"steps": {}}
    try:
        await migrate(store)
        # box pages rare enough that some early looks of the box subset have too few installs
        config = TrafficConfig(experiment_id=EXP, seed=41, installs=80, today=START.date(), p_box=0.01)
        await store_study(store, config, START, DAYS, events)

        query = ReportQuery(EXP, burn_in_days=0)
        selection = shared.selection_key(query, 0, "control")
        reference = await shared.compute_looks(store, query, 0, "control")
        last = START.date() + timedelta(days=DAYS)
        out["arms"] = sorted({x.arm for x in reference})
        out["reference_days"] = len({x.look for x in reference})
        found = first_exclusions(reference, [a for a in out["arms"]])
        want = {arm: None if day is None else shared.day_of(day).isoformat() for arm, day in found.items()}
        out["decided"] = want

        async def step(name: str, through: date) -> None:
            store.reads.clear()
            await keeper.stored_through(store, query, now=shared.completed_at(through))  # the worker's step
            decided = await decision_line.decision_days(store, query)
            reads = list(store.reads)
            looks, stored_through = await shared.stored_looks(store, query, selection)
            totals = await store.query(
                f"SELECT DISTINCT toString(through) FROM {shared.TOTALS} WHERE selection = {quote(selection)}"
            )
            out["steps"][name] = {
                "through": str(stored_through),
                "equal": same(as_stored(looks, through), as_stored(reference, through)),
                "looks": len(looks),
                "decisions_equal": decided == want,
                "reads": reads,
                "totals_through": sorted(r[0] for r in totals.rows),
            }

        await step("first three days", START.date() + timedelta(days=2))
        await step("one more day", START.date() + timedelta(days=3))
        await step("across the month's end", date(2026, 9, 2))

        # a replay rewrites Aug 31 while the looks are being extended to Sep 4: the forget
        # lands after the read, and the extension must not keep what it read
        async def forget_aug_31() -> None:
            await keeper.forget_looks(store, EXP, "google", date(2026, 8, 31))

        store.after_read = forget_aug_31
        await keeper.stored_through(store, query, now=shared.completed_at(date(2026, 9, 4)))
        looks, stored_through = await shared.stored_looks(store, query, selection)
        totals = await store.query(
            f"SELECT count() FROM {shared.TOTALS} FINAL WHERE selection = {quote(selection)} "
            "AND through >= '2026-08-31'"
        )
        out["forget_during_extension"] = {
            "through": str(stored_through),
            "last_look": shared.day_of(max(x.look for x in looks)).isoformat() if looks else None,
            "totals_from_aug_31": int(totals.rows[0][0]),
        }
        await step("every day", last)
        await keeper.forget_looks(store, EXP, "google", date(2026, 8, 30))
        await step("after a forget from Aug 30", last)
        await keeper.forget_looks(store, EXP, "google", date(2026, 9, 3))
        await store.execute(f"DELETE FROM {shared.TOTALS} WHERE 1")
        await step("after the totals were lost", last)
        await keeper.forget_looks(store, EXP, "google")
        await step("from scratch", last)

        # a look whose sequence is not defined yet (too few installs in an arm) is kept as NaN
        sparse = ReportQuery(EXP, burn_in_days=0, subset="box")
        sparse_reference = await shared.compute_looks(store, sparse, 0, "control")
        await keeper.stored_through(store, sparse, now=shared.completed_at(last))
        sparse_key = quote(shared.selection_key(sparse, 0, "control"))
        nans = await store.query(
            "SELECT countIf(isNaN(delta_low)), countIf(delta_low = 0 AND delta_high = 0) "
            f"FROM {shared.TABLE} WHERE arm != '' AND selection = {sparse_key}"
        )
        out["nan_looks"] = {
            "reference": sum(math.isnan(x.low) for x in sparse_reference),
            "stored": int(nans.rows[0][0]),
            "zero_reference": sum(x.low == 0 and x.high == 0 for x in sparse_reference),
            "zero_stored": int(nans.rows[0][1]),
        }

        # the totals equal the per-install counts of every day, summed by hand in Python
        days = await store.query_arrow(query.windows_keys_sql(shared.DAY_S, 0, ranks=1))
        by_hand: dict[tuple[int, str], list[float]] = {}
        for row in days.to_pylist():
            sums = by_hand.setdefault((row["install_key"], row["arm"]), [0.0, 0.0])
            sums[0] += row["n_units"]
            sums[1] += row["c1"]
        stored_totals = await store.query_arrow(
            f"SELECT install_key, toString(arm) AS arm, n_units, c1 FROM {shared.TOTALS} FINAL "
            f"WHERE arm != '' AND selection = {quote(selection)} AND through = {quote(last.isoformat())}"
        )
        kept = {(r["install_key"], r["arm"]): [r["n_units"], r["c1"]] for r in stored_totals.to_pylist()}
        out["totals_equal"] = kept == by_hand
        out["totals_rows"] = len(kept)
    finally:
        await store.close()
    return out


if __name__ == "__main__":
    print_run(run, 8000)
