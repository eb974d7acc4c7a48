"""What ``test_report_readers.py`` reads of a report on a fresh chDB (in a process of its
own: chDB allows one session per process; run as ``python -m``, prints JSON).

A study stored and recomputed as a bulk import does, registered with equal weights for
arms the simulator allocates 40/15/15/10/10/10 (so the kept clicks fail the SRM test),
with planted values inserted straight into ``planted_values`` (two recordings of the same
keys: FINAL keeps the later; a row of another subset that must not show). Reported with
confidence sequences and a targets file no install has answers for, then over its first
ten minutes (thin arms)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from collectors.simulate.extension_traffic import DEFAULT_ARMS, TrafficConfig
from core.store.chdb_store import ChdbStore
from ingest.experiments import save
from schemas.experiments import ExperimentConfig
from schemas.migrate import migrate
from studies.arrangement.long_form import COLUMNS, long_rows
from studies.arrangement.read.report import report_json, run_experiment_report
from studies.arrangement.selection import ReportQuery
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "readers"
START = datetime(2026, 9, 1, 6, tzinfo=UTC)
DAYS = 3
PLANTED = [  # (arm, quantity, rank, value, recorded_at, subset)
    ("control", "ctr", 1, 0.111, "2026-09-01 00:00:00.000", "all"),  # replaced below
    ("control", "ctr", 1, 0.43, "2026-09-02 00:00:00.000", "all"),
    ("swap_1_2", "delta", 1, -0.19, "2026-09-02 00:00:00.000", "all"),
    ("swap_1_2", "beta", 1, 0.44, "2026-09-02 00:00:00.000", "all"),
    ("swap_1_2", "delta", 1, -0.5, "2026-09-02 00:00:00.000", "box"),  # another subset
]


async def plant(store: ChdbStore) -> None:
    rows = [
        {"experiment_id": EXP, "engine": "google", "subset": subset, "baseline": "control", "arm": arm,
         "quantity": quantity, "rank": rank, "value": value, "seed": 1, "model": "clickmodel",
         "recorded_at": at}
        for arm, quantity, rank, value, at, subset in PLANTED
    ]  # fmt: skip
    await store.insert_json_rows("planted_values", b"\n".join(orjson.dumps(r) for r in rows))


def answer(report: Any) -> dict[str, Any]:
    """The report as the service answers it (orjson: NaN as null) and its long CSV rows."""
    doc = orjson.loads(orjson.dumps({**report_json(report), "burn_in_days": 0, "unit_mode": "click"}))
    return {"doc": doc, "csv": [dict(zip(COLUMNS, r, strict=True)) for r in long_rows(doc)]}


async def run(path: Path, events: int) -> dict[str, Any]:
    store = ChdbStore(path)
    try:
        await migrate(store)
        config = TrafficConfig(experiment_id=EXP, seed=11, installs=150, today=START.date())
        await store_study(store, config, START, DAYS, events)
        arms = {arm: 1.0 for arm, _ in DEFAULT_ARMS}
        registered = ExperimentConfig(
            experiment_id=EXP, engines=["google"], arms=arms, salt="readers-salt", start=date(2026, 9, 1)
        )
        await save(store, registered)
        await plant(store)
        query = ReportQuery(EXP, burn_in_days=0)
        targets = {"age_band": {"18-24": 0.5, "65+": 0.5}}
        whole = await run_experiment_report(store, query, 3, intervals="sequential", targets=targets)
        first = ReportQuery(EXP, burn_in_days=0, since=START, until=START + timedelta(minutes=10))
        thin = await run_experiment_report(store, first, 3, intervals="sequential")
        return {"whole": answer(whole), "thin": answer(thin)}
    finally:
        await store.close()


if __name__ == "__main__":
    print_run(run, 6000)
