"""Migration 0031: experiments stored with end < start by the old stop route read again."""

from __future__ import annotations

from pathlib import Path

import orjson

from core.store.chdb_store import ChdbStore
from ingest.experiments import load
from schemas.migrate import migrate
from schemas.sql import load_migrations


async def test_an_experiment_stopped_before_its_start_ends_on_its_start_day(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        base = {
            "experiment_id": "early",
            "engines": ["google"],
            "arms": {"control": 1.0, "swap_1_2": 1.0},
            "salt": "salt-0123456",
            "start": "2026-12-01",
            "engine_arms": {},
            "burn_in_days": 4,
            "unit_mode": "click",
        }
        rows = [  # what the old route wrote: a stop on 2026-11-25, before the start
            {"experiment_id": "early", "updated_at": "2026-11-20 00:00:00.000000", "status": "running",
             "config": orjson.dumps({**base, "end": None, "status": "running"}).decode()},
            {"experiment_id": "early", "updated_at": "2026-11-25 00:00:00.000000", "status": "stopped",
             "config": orjson.dumps({**base, "end": "2026-11-25", "status": "stopped"}).decode()},
            {"experiment_id": "fine", "updated_at": "2026-11-25 00:00:00.000000", "status": "stopped",
             "config": orjson.dumps({**base, "experiment_id": "fine", "start": "2026-11-01",
                                     "end": "2026-11-25", "status": "stopped"}).decode()},
        ]  # fmt: skip
        await store.insert_json_rows("experiments_log", b"\n".join(orjson.dumps(r) for r in rows))
        (mend,) = [m for m in load_migrations() if m.version == 31]
        for _ in range(2):  # applied again (an interrupted migration is): nothing more changes
            for statement in mend.statements:
                await store.execute(statement)
        early = await load(store, "early")
        assert early is not None and early.status == "stopped"
        assert (early.start.isoformat(), early.end and early.end.isoformat()) == ("2026-12-01", "2026-12-01")
        fine = await load(store, "fine")
        assert fine is not None and fine.end is not None and fine.end.isoformat() == "2026-11-25"
        count = await store.query("SELECT count() FROM experiments_log WHERE experiment_id = 'fine'")
        assert count.rows[0][0] == 1  # a valid config is left alone
    finally:
        await store.close()
