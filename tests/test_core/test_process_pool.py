"""A process pool whose process dies is started again (core/process_pool.py): the board's
compute process and the import's validation processes come back without restarting ingest."""

from __future__ import annotations

import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from core.process_pool import PoolUnavailable, RestartingPool


def die_once(flag: str) -> int:
    """SIGKILL this process the first time (``flag`` does not exist yet), then answer."""
    if not os.path.exists(flag):
        Path(flag).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid()


def die() -> int:
    os.kill(os.getpid(), signal.SIGKILL)
    return 0


def start(first: bool) -> ProcessPoolExecutor:
    starts.append(first)
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))


starts: list[bool] = []


async def test_a_call_whose_process_died_runs_again_in_a_new_one(tmp_path: Path) -> None:
    starts.clear()
    pool = RestartingPool("test pool", start)
    try:
        assert starts == []  # nothing starts before the first call
        pid = await pool.run(die_once, str(tmp_path / "died"))
        assert (tmp_path / "died").exists() and pid != os.getpid()
        assert (pool.restarts, starts) == (1, [True, False])
        assert await pool.run(die_once, str(tmp_path / "died")) == pid  # the new process stays
    finally:
        pool.shutdown()


async def test_a_second_death_is_unavailable_and_the_pool_still_recovers(tmp_path: Path) -> None:
    starts.clear()
    pool = RestartingPool("test pool", start)
    try:
        with pytest.raises(PoolUnavailable, match="test pool died again"):
            await pool.run(die)
        (tmp_path / "died").touch()  # answers at once: the pool left broken is started again
        assert await pool.run(die_once, str(tmp_path / "died")) > 0
        assert pool.restarts == 2 and starts == [True, False, False]
    finally:
        pool.shutdown()
