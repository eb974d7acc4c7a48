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


async def test_an_experiment_with_days_beyond_the_date_column_reads_as_the_view_showed_it(
    tmp_path: Path,
) -> None:
    """Migration 0033: days the model now refuses (0001-01-01, 9999-12-31) become the days
    ClickHouse's Date showed for them."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        base = {
            "engines": ["google"],
            "arms": {"control": 1.0, "swap_1_2": 1.0},
            "salt": "salt-0123456",
            "engine_arms": {},
            "burn_in_days": 4,
            "unit_mode": "click",
            "status": "running",
        }
        configs = {
            "ancient": {"start": "0001-01-01", "end": None},
            "future": {"start": "2026-11-01", "end": "9999-12-31"},
            "both": {"start": "9999-01-01", "end": "9999-12-31"},
            "fine": {"start": "2026-11-01", "end": None},
        }
        rows = [
            {"experiment_id": name, "updated_at": "2026-11-20 00:00:00.000000", "status": "running",
             "config": orjson.dumps({**base, "experiment_id": name, **days}).decode()}
            for name, days in configs.items()
        ]  # fmt: skip
        await store.insert_json_rows("experiments_log", b"\n".join(orjson.dumps(r) for r in rows))
        (mend,) = [m for m in load_migrations() if m.version == 33]
        for _ in range(2):  # applied again: nothing more changes
            for statement in mend.statements:
                await store.execute(statement)
        days = {}
        for name in configs:
            config = await load(store, name)
            assert config is not None
            days[name] = (config.start.isoformat(), config.end.isoformat() if config.end else None)
        assert days == {
            "ancient": ("1970-01-01", None),
            "future": ("2026-11-01", "2149-06-06"),
            "both": ("2149-06-06", "2149-06-06"),
            "fine": ("2026-11-01", None),
        }
        count = await store.query("SELECT count() FROM experiments_log WHERE experiment_id = 'fine'")
        assert count.rows[0][0] == 1  # a valid config is left alone
    finally:
        await store.close()
