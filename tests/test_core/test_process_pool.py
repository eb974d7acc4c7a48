"""A process pool whose process dies is started again (core/process_pool.py): the board's
compute process and the import's validation processes come back without restarting ingest."""

from __future__ import annotations

import asyncio
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
        assert not pool.broken()
        pid = await pool.run(die_once, str(tmp_path / "died"))
        assert (tmp_path / "died").exists() and pid != os.getpid() and not pool.broken()
        assert (pool.restarts, starts) == (1, [True, False])
        assert await pool.run(die_once, str(tmp_path / "died")) == pid  # the new process stays
    finally:
        pool.shutdown()


async def test_a_second_death_is_unavailable_and_the_pool_still_recovers(tmp_path: Path) -> None:
    starts.clear()
    pool = RestartingPool("test pool", start, restart_every_s=0)
    try:
        with pytest.raises(PoolUnavailable, match="test pool died again"):
            await pool.run(die)
        (tmp_path / "died").touch()  # answers at once: the pool left broken is started again
        assert await pool.run(die_once, str(tmp_path / "died")) > 0
        assert pool.restarts == 2 and starts == [True, False, False]
    finally:
        pool.shutdown()


async def test_restarts_are_spaced_and_a_shut_pool_starts_nothing(tmp_path: Path) -> None:
    """A process that dies at every call does not make a new process per call: within
    ``restart_every_s`` of a restart, calls are unavailable at once."""
    starts.clear()
    pool = RestartingPool("test pool", start, restart_every_s=600)
    try:
        with pytest.raises(PoolUnavailable):
            await pool.run(die)  # dies, is started again once, dies again
        with pytest.raises(PoolUnavailable):
            await pool.run(die_once, str(tmp_path / "never"))  # broken, and too soon to restart
        assert (pool.restarts, starts) == (1, [True, False])
    finally:
        pool.shutdown()
    with pytest.raises(PoolUnavailable, match="shut down"):
        await pool.run(die_once, str(tmp_path / "never"))
    assert starts == [True, False] and not (tmp_path / "never").exists()


async def test_a_dead_process_is_seen_before_the_next_call() -> None:
    """What /readyz reports: the pool is broken as soon as its process dies, not only once
    a call finds out; the next call starts another."""
    starts.clear()
    pool = RestartingPool("test pool", start)
    try:
        pid = await pool.run(os.getpid)
        os.kill(pid, signal.SIGKILL)
        async with asyncio.timeout(30):
            while not pool.broken():
                await asyncio.sleep(0.05)  # wait-ok: polled under a deadline
        assert await pool.run(os.getpid) != pid and not pool.broken()
    finally:
        pool.shutdown()
