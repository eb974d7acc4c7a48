"""Which tables the sequential and the reweighted report read when they are asked again (a
board refresh, another report of the same study), on a fresh chDB in a process of its own
(chDB allows one session per process; run by test_feature_reads.py as ``python -m``).

A study is stored and recomputed as a bulk import does. After the first sequential report
the worker's step stores the decision line's looks of the complete days (a read of the
10-second slices, once per day and selection; reports never store them). Every statement
of the reports after it is then noted, with the tables it names. Prints JSON.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from collectors.simulate.extension_traffic import TrafficConfig
from core.store.base import QueryLimits, QueryResult
from core.store.chdb_store import ChdbStore
from schemas.migrate import migrate
from studies.arrangement.read.report import run_experiment_report
from studies.arrangement.selection import ReportQuery
from studies.arrangement.write.looks import stored_through
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "reads"
START = datetime(2026, 8, 20, 5, tzinfo=UTC)
DAYS = 6
AGE_SHARES = {"18-24": 0.11, "25-34": 0.16, "35-44": 0.16, "45-54": 0.18, "55-64": 0.17, "65+": 0.22}
TARGETS = {"age_band": AGE_SHARES}
TABLE = re.compile(r"\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)")


class NotingStore(ChdbStore):
    """A chDB store that notes the tables every read statement names."""

    statements: list[list[str]]

    def _note(self, sql: str) -> None:
        self.statements.append(sorted(set(TABLE.findall(sql))))

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        self._note(sql)
        return await super().query(sql, read_only=read_only, limits=limits)

    async def query_arrow(self, sql: str) -> Any:
        self._note(sql)
        return await super().query_arrow(sql)


async def run(path: Path, events: int) -> dict[str, Any]:
    store = NotingStore(path)
    store.statements = []
    out: dict[str, Any] = {}
    try:
        await migrate(store)
        config = TrafficConfig(experiment_id=EXP, seed=7, installs=120, today=START.date())
        await store_study(store, config, START, DAYS, events)
        query = ReportQuery(EXP, burn_in_days=0)

        async def noted(**kwargs: Any) -> dict[str, Any]:
            store.statements.clear()
            report = await run_experiment_report(store, query, **kwargs)
            return {
                "tables": sorted({t for s in store.statements for t in s}),
                "statements": len(store.statements),
                "arms": len(report.figure3),
                "decisions": report.decisions,
            }

        out["first sequential"] = await noted(ranks=10, intervals="sequential")
        await stored_through(store, query)  # the worker's step: the complete days' looks stored
        out["sequential again"] = await noted(ranks=5, intervals="sequential")
        out["reweighted"] = await noted(ranks=10, targets=TARGETS)
        out["reweighted sequential"] = await noted(ranks=8, intervals="sequential", targets=TARGETS)
    finally:
        await store.close()
    return out


if __name__ == "__main__":
    print_run(run, 6000)
