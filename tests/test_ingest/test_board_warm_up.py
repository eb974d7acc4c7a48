"""The compute process warms its bootstrap weights for the installs the store holds."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from analytics.stats.bootstrap import _CACHE, _weight_rows, install_key
from core.store.base import NoStore
from core.store.chdb_store import ChdbStore
from ingest.board import compute
from schemas.migrate import migrate
from studies.arrangement.tables import REPLICATES
from studies.arrangement.write.slice_rows import INSTALL_COLUMNS


async def test_warm_up_computes_the_weights_of_every_stored_install(tmp_path: Path) -> None:
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    try:
        await migrate(store)
        ids = [f"warm-{i:04d}" for i in range(300)]
        values = ", ".join(
            f"('e', 'google', '{i}', '{arm}', 5, 1, 0, 0, 0, 1, 1, [1,0,0,0,0,0,0,0,0,0], 0, 0, 0, 0, 0, 0, "
            "now(), now(), now64(6))"
            for i in ids
            for arm in ("control", "swap_1_2")
        )
        await store.execute(f"INSERT INTO agg_arrangement_install ({INSTALL_COLUMNS}) VALUES {values}")
        assert await compute._warm(store) == len(ids)  # one key per install, whatever its arms
        keys = np.array(sorted(install_key(i, compute.SEED) for i in ids), dtype=np.uint64)
        known, matrix = _CACHE.cached(REPLICATES, compute.SEED)
        at = np.searchsorted(known, keys)
        assert np.array_equal(known[at], keys)
        assert np.array_equal(matrix[at], _weight_rows(keys, REPLICATES))
    finally:
        await store.close()


def test_warm_up_without_a_store_warms_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.new_event_loop()
    monkeypatch.setitem(compute._CHILD, "loop", loop)
    monkeypatch.setitem(compute._CHILD, "store", NoStore("the store server is not up yet"))
    try:
        assert compute.warm_up() == 0
    finally:
        loop.close()


def test_the_compute_process_turns_numpys_huge_pages_off() -> None:
    import numpy as np

    flag = np._core.multiarray._set_madvise_hugepage
    before = flag(True)
    try:
        compute._no_huge_pages()
        assert flag(True) is False  # what was set: off
    finally:
        flag(before)


def test_readyz_board_state_follows_the_warm_up() -> None:
    """``/readyz``'s board field: starting while the warm-up is pending, ready once it ran
    (warm or not), failed when it raised (a compute process that could not start)."""
    from concurrent.futures import Future

    from ingest.board.compute_process import board_state

    pending: Future[int] = Future()
    assert board_state(pending) == "starting"
    pending.set_result(0)
    assert board_state(pending) == "ready"
    broken: Future[int] = Future()
    broken.set_exception(RuntimeError("the process pool broke"))
    assert board_state(broken) == "failed"
    cancelled: Future[int] = Future()
    cancelled.cancel()
    assert board_state(cancelled) == "failed"


async def test_warm_up_computes_the_panels_of_the_most_recently_active_studies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The board's experiment panel, with its defaults, for the most recently active
    experiment and engine pairs (at most ``WARM_PANELS``); a panel that fails is skipped."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    asked: list[dict] = []

    async def record(_store: object, panel: compute.Panel) -> dict:
        asked.append(dict(panel.params))
        if panel.get("engine") == "google" and panel.get("experiment_id") == "mid":
            raise compute.PanelFailed("refused")
        return {}

    monkeypatch.setattr(compute, "compute", record)
    monkeypatch.setattr(compute, "WARM_PANELS", 3)
    try:
        await migrate(store)
        values = ", ".join(  # the studies' activity comes from their per-hour rows
            f"('{e}', '{g}', toDateTime('{day} 12:00:00', 'UTC'), 'control', 5, 1, 1, now64(6))"
            for e, g, day in (
                ("old", "google", "2026-01-02"),
                ("new", "google", "2026-03-01"),
                ("new", "bing", "2026-02-01"),
                ("mid", "google", "2026-02-15"),
            )
        )
        await store.execute(
            "INSERT INTO agg_arrangement_replicates_1h (experiment_id, engine, hour_start, arm, "
            f"install_age_days, identified, units, computed_at) VALUES {values}"
        )
        assert await compute._warm_panels(store) == 2
    finally:
        await store.close()
    defaults = {"ranks": compute.FIGURE3_RANKS, "intervals": "sequential"}
    assert asked == [
        {"experiment_id": "new", "engine": "bing", **defaults},
        {"experiment_id": "new", "engine": "google", **defaults},
        {"experiment_id": "mid", "engine": "google", **defaults},
    ]
