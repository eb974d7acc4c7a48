"""The analyst SQL guard in processes of its own, and the statements each key has in flight.

sqlglot parses in pure Python and holds the GIL: three 600 kB statements checked in
ingest's event loop kept ``/healthz`` and event intake waiting 77 s (issue 33), and a
thread would not have helped. So ``/v1/sql`` checks statements in ``sql_guard_processes``
spawned processes (a ``core.process_pool.RestartingPool``, started at the first statement).
A check may take ``sql_guard_cpu_s`` of CPU in its process (a profiling timer there ends
it); should one ignore its timer, ingest kills the processes after a wall-clock backstop
and the pool starts again. A key may have ``sql_max_concurrent_per_key`` statements in
flight, from the check until the answer is sent: one read key held every read lane before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from types import FrameType
from typing import TYPE_CHECKING

from core.lifetime import exit_with_parent
from core.process_pool import PoolUnavailable, RestartingPool
from ingest.errors import problem
from schemas.analyst_sql import guard_analyst_sql
from schemas.sql import ReadOnlyViolation, StatementTooLarge

if TYPE_CHECKING:  # not at run time: the guard's processes import this module
    from core.settings import Settings


class GuardTooSlow(Exception):
    """Checking the statement took more CPU time than a check may."""


class GuardBusy(Exception):
    """Every guard process stayed busy with other statements for as long as one may wait."""


class _Overran(BaseException):
    """Raised by the CPU timer inside sqlglot; a BaseException, so that the guard's own
    ``except Exception`` (which fails closed as "could not be checked") lets it through."""


def _overran(signum: int, frame: FrameType | None) -> None:
    raise _Overran


def child_init() -> None:
    """Start of a guard process: it ends with ingest, yields the CPU to intake (checks are
    bounded in CPU time, so a lower priority only makes them wait), its CPU timer raises,
    sqlglot is quiet (as in ingest, ``log_privacy``: its warnings quote the statement, which
    may hold anything, a key pasted by mistake) and warm."""
    exit_with_parent()
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    with contextlib.suppress(OSError):
        os.nice(10)
    signal.signal(signal.SIGPROF, _overran)
    guard_analyst_sql("SELECT 1")


def check_in_child(sql: str, cpu_s: float, max_bytes: int) -> str:
    """``guard_analyst_sql`` in a guard process, in at most ``cpu_s`` of its CPU time."""
    try:
        signal.setitimer(signal.ITIMER_PROF, cpu_s)
        try:
            return guard_analyst_sql(sql, max_bytes=max_bytes)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
    except _Overran:  # also when the timer fired just as the check ended
        raise GuardTooSlow(f"checking the statement took over {cpu_s:g} s of CPU") from None


class InFlight:
    """The statements each key has in flight, at most ``most`` per key."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._counts: Counter[str] = Counter()

    def take(self, key_id: str) -> bool:
        """Count one more for ``key_id``, unless it already has ``most`` (then False)."""
        if self._counts[key_id] >= self.most:
            return False
        self._counts[key_id] += 1
        return True

    def give_back(self, key_id: str) -> None:
        self._counts[key_id] -= 1
        if self._counts[key_id] <= 0:
            del self._counts[key_id]

    def count(self, key_id: str) -> int:
        return self._counts[key_id]

    @contextlib.contextmanager
    def slot(self, key_id: str, retry_after_s: int) -> Iterator[None]:
        """Hold one of the key's slots for the block, or raise 429 too_many_queries."""
        if not self.take(key_id):
            raise problem(
                429,
                "too_many_queries",
                f"this key already has {self.most} queries in flight (the most one key may "
                "have); retry after Retry-After seconds",
                {"Retry-After": str(retry_after_s)},
            )
        try:
            yield
        finally:
            self.give_back(key_id)


class SqlGuard:
    """Checks statements in ``processes`` guard processes, each check in at most ``cpu_s``
    of CPU; a statement waits at most ``2 * cpu_s`` for a free process (waiters go in turn)."""

    def __init__(self, processes: int, cpu_s: float, per_key: int, max_bytes: int) -> None:
        self.processes = processes
        self.cpu_s = cpu_s
        self.max_bytes = max_bytes
        self.wait_s = 2 * cpu_s
        # Generous: the processes run at a lower priority, and on a loaded machine a check's
        # wall time was several times its CPU time (bench/README.md, "Figures behind the
        # code"); the pool's first start counts here too.
        self.backstop_s = 10 * cpu_s + 30
        self.in_flight = InFlight(per_key)
        self.pool = RestartingPool("SQL guard's processes", self._start, restart_every_s=2.0)
        self._free = asyncio.Semaphore(processes)
        self._checks: set[asyncio.Task[str]] = set()

    def _start(self, first: bool) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=child_init,
        )

    async def check(self, sql: str) -> str:
        """The statement to run, or ReadOnlyViolation, GuardTooSlow, GuardBusy or
        PoolUnavailable. A caller that goes away leaves the check to end on its own, and its
        process counted busy until then (a queue behind it would outlast the backstop)."""
        try:
            async with asyncio.timeout(self.wait_s):
                await self._free.acquire()
        except TimeoutError:
            raise GuardBusy("every SQL guard process is busy with other statements") from None
        task = asyncio.create_task(self._run(sql))
        self._checks.add(task)
        task.add_done_callback(self._checked)
        return await asyncio.shield(task)

    async def _run(self, sql: str) -> str:
        try:
            async with asyncio.timeout(self.backstop_s):
                return await self.pool.run(check_in_child, sql, self.cpu_s, self.max_bytes)
        except TimeoutError:
            self.pool.kill()  # a check that ignored its CPU timer: end it, the pool starts again
            raise PoolUnavailable("a SQL guard process did not end its check in time; restarted") from None
        finally:
            self._free.release()

    def _checked(self, task: asyncio.Task[str]) -> None:
        self._checks.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved: a caller that went away does not log it as lost

    def shutdown(self) -> None:
        self.pool.shutdown()


async def checked(guard: SqlGuard, sql: str, retry_after_s: int) -> str:
    """``guard.check(sql)``, its refusals as problems: 413 statement_too_large, 400
    not_read_only or statement_too_complex, 503 sql_guard_busy or sql_guard_unavailable."""
    retry = {"Retry-After": str(retry_after_s)}
    try:
        return await guard.check(sql)
    except StatementTooLarge as exc:
        raise problem(413, "statement_too_large", str(exc)) from None
    except ReadOnlyViolation as exc:
        raise problem(400, "not_read_only", str(exc)) from None
    except GuardTooSlow as exc:
        raise problem(400, "statement_too_complex", f"{exc}; send a simpler statement") from None
    except GuardBusy as exc:
        raise problem(503, "sql_guard_busy", f"{exc}; retry after Retry-After seconds", retry) from None
    except PoolUnavailable as exc:
        raise problem(
            503, "sql_guard_unavailable", f"{exc}; retry after Retry-After seconds", retry
        ) from None


def guard_from(settings: Settings) -> SqlGuard:
    """The app's guard from its settings; its processes start at the first statement."""
    return SqlGuard(
        settings.sql_guard_processes,
        settings.sql_guard_cpu_s,
        settings.sql_max_concurrent_per_key,
        settings.sql_max_statement_bytes,
    )
