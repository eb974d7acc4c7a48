"""What ``test_pilot_world.py`` reads of ``POST /v1/experiments/{id}/pilot-world`` on a
fresh chDB (in a process of its own: chDB allows one session per process; run as
``python -m``, prints JSON).

A simulated study of the paper's world (every install past the burn-in) is stored and
recomputed as a bulk import does over ``DAYS`` days, registered with the simulator's arms
and an analysis plan (burn-in 4, primary delta_1 of swap_1_2), then asked for its whole
span, for its first two days, and for what the route refuses. Beside the answers: the
per-install counts of the same events counted in-process (click units on identified first
pages, organic clicks at c1), so the test can hold the route to ``world_from_pilot`` of
exactly those counts, and the simulator's installs' activity.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from aiohttp.test_utils import TestClient, TestServer

from analytics.stats.planner import world_from_pilot
from collectors.simulate.extension_traffic import DEFAULT_ARMS, ExtensionTraffic, TrafficConfig
from core.settings import Settings
from core.store.chdb_store import ChdbStore
from ingest.api_keys import KeyFile
from ingest.app import create_app
from ingest.experiments import save
from schemas.analysis_plan import AnalysisPlan
from schemas.experiments import ExperimentConfig
from schemas.migrate import migrate
from tests.integration.helpers.chdb_study import print_run, store_study

EXP = "pilot-world"
START = datetime(2026, 9, 1, 6, tzinfo=UTC)
DAYS = 6
ARMS = [a for a, _ in DEFAULT_ARMS]


def config() -> TrafficConfig:
    """Google only, every install past the burn-in at the start (so every one is kept)."""
    return TrafficConfig(
        experiment_id=EXP,
        seed=38,
        installs=300,
        engines=(("google", 1.0),),
        p_new_install=0.0,
        today=START.date(),
    )


def counted(traffic_config: TrafficConfig, events: int, days: int, through_days: int) -> dict[str, Any]:
    """The study's events as ``store_study`` receives them (evenly over ``days`` from
    ``START``), counted in-process over its first ``through_days`` calendar days: per install
    units [install, arm] and organic clicks at c1, and ``world_from_pilot`` of them."""
    units: dict[str, np.ndarray] = {}
    clicks: dict[str, np.ndarray] = {}
    traffic = ExtensionTraffic(traffic_config)
    for i, event in enumerate(itertools.islice(traffic.events(), events)):
        moment = START + timedelta(seconds=i * days * 86400 // events)
        if moment.date() >= START.date() + timedelta(days=through_days):
            break
        if event["type"] != "click" or not event["identified"] or event["page_index"] != 0:
            continue
        row = units.setdefault(event["install_id"], np.zeros(len(ARMS)))
        at = clicks.setdefault(event["install_id"], np.zeros((len(ARMS), 1)))
        row[ARMS.index(event["arm"])] += 1
        if event["element_type"] == "organic" and event["original_rank"] == 1:
            at[ARMS.index(event["arm"]), 0] += 1
    ids = sorted(units)
    u = np.array([units[i] for i in ids])
    c = np.array([clicks[i] for i in ids])
    weights = np.array([w for _, w in DEFAULT_ARMS])
    world = world_from_pilot(u, c, weights, ARMS.index("swap_1_2"), 0, through_days)
    activity = np.array([t.activity for t in traffic.traits])
    return {
        "installs": len(ids),
        "units": int(u.sum()),
        "world": vars(world),
        "activity_cv": float(activity.std(ddof=1) / activity.mean()),
    }


async def run(path: Path, events: int) -> dict[str, Any]:
    store = ChdbStore(path)
    await migrate(store)
    traffic = config()
    await store_study(store, traffic, START, DAYS, events)
    registered = ExperimentConfig(
        experiment_id=EXP,
        engines=["google", "bing"],
        arms=dict(DEFAULT_ARMS),
        salt=traffic.salt,
        start=date(2026, 9, 1),
    )
    await save(store, registered)
    plan = AnalysisPlan.model_validate(
        {"experiment_id": EXP, "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}]}
    )
    row = {
        "experiment_id": EXP,
        "version": 1,
        "plan": plan.canonical_json().decode(),
        "sha256": plan.sha256(),
        "registered_at": "2026-09-01 00:00:00.000000",
        "registered_by": "test",
        "kind": "registration",
        "reason": "",
    }
    await store.insert_json_rows("analysis_plans", orjson.dumps(row))
    settings = Settings(data_dir=path.parent / "service", kafka_bootstrap="127.0.0.1:9")
    _, key = KeyFile(settings.resolved_keys_file).create("reader", ("read",))
    client = TestClient(TestServer(create_app(settings, store)))
    await client.start_server()
    headers = {"Authorization": f"Bearer {key}"}

    async def ask(body: dict[str, Any], experiment: str = EXP) -> dict[str, Any]:
        response = await client.post(f"/v1/experiments/{experiment}/pilot-world", json=body, headers=headers)
        return {"status": response.status, "body": await response.json()}

    try:
        two = (START.date() + timedelta(days=1)).isoformat()
        answers = {
            "whole": await ask({}),
            "first_two_days": await ask({"until": two}),
            "unknown": await ask({}, "no-such-experiment"),
            "no_days": await ask({"since": "2001-01-01", "until": "2001-01-31"}),
            "reversed": await ask({"since": two, "until": START.date().isoformat()}),
            "not_a_day": await ask({"since": "20260901"}),
            "no_arm": await ask({"arm": "swap_4_5"}),
            "baseline_arm": await ask({"arm": "control"}),
            "other_engine": await ask({"engine": "yandex"}),
            "no_bing_units": await ask({"engine": "bing"}),
        }
    finally:
        await client.close()
        await store.close()
    return {
        "answers": answers,
        "whole": counted(traffic, events, DAYS, DAYS + 1),  # from 06:00 on day 1 to 06:00 on day 7
        "first_two_days": counted(traffic, events, DAYS, 2),
    }


if __name__ == "__main__":
    print_run(run, 24000)
