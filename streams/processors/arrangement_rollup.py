"""Per-install arrangement statistics, recomputed for many batches at once.

Recomputing the touched 10-second slices after every batch repeats work: consecutive
batches touch the same current slice, which is recomputed whole each time. Here the
batches stored while one recompute runs (and during ``interval_s`` after it) are
recomputed together by the next one. Exactness across crashes comes from the
acknowledgement, not from a durable to-do list: each batch gets a future that is
resolved once a recompute covering it has completed, and the agent acknowledges the
batch only then (streams/app.py). A crash before that replays the batch, and the
replay marks the same keys again. The recomputes are idempotent, so doing one twice
is harmless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from core.store import Store
from core.store.retry import until_done
from streams.metrics import WorkerMetrics
from studies.arrangement.tables import DAY_S, GRACE_S
from studies.arrangement.write import closed_sums, hourly_replicates, slice_rows
from studies.arrangement.write import looks as stored_looks

log = logging.getLogger(__name__)

SliceKey = tuple[str, str, int]  # experiment_id, engine, slice start (unix seconds)
InstallKey = tuple[str, str, str]  # experiment_id, engine, install_id


@dataclass
class _Pending:
    slices: set[SliceKey] = field(default_factory=set)
    installs: set[InstallKey] = field(default_factory=set)
    waiters: list[asyncio.Future[None]] = field(default_factory=list)


class _Coalescer:
    """One recompute loop: keys marked while a recompute runs (and during ``interval_s``
    after it) share the next one, and each mark's future completes once a recompute that
    covers it has stored its rows."""

    def __init__(
        self, name: str, interval_s: float, recompute: Callable[[_Pending], Awaitable[None]]
    ) -> None:
        self.name, self.interval_s, self.recompute = name, interval_s, recompute
        self._pending = _Pending()
        self._running = _Pending()  # the keys of the recompute under way
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def mark(self, slices: Iterable[SliceKey], installs: Iterable[InstallKey]) -> asyncio.Future[None]:
        if self._task is None or self._task.done():
            if self._task is not None and not self._task.cancelled():
                self._task.result()  # re-raise what stopped the loop
            self._task = asyncio.create_task(self._run(), name=self.name)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.slices.update(slices)
        self._pending.installs.update(installs)
        self._pending.waiters.append(future)
        self._wake.set()
        return future

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for future in (*self._running.waiters, *self._pending.waiters):
            future.cancel()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            due = self._running = self._pending
            self._pending = _Pending()
            if not due.waiters:
                continue
            started = time.monotonic()
            await self.recompute(due)
            for future in due.waiters:
                if not future.done():
                    future.set_result(None)
            # at most one recompute per interval: batches stored meanwhile share the next one
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - started)))


class ArrangementRollup:
    """Coalesces the recomputes of ``agg_arrangement_10s`` and, after them, of the touched
    installs' study-wide rows in ``agg_arrangement_install`` (every ``interval_s``; from their
    closed days' sums and the slices since, ``studies/arrangement/write/closed_sums.py``), and
    beside them the touched hours' replicate sums in ``agg_arrangement_replicates_1h``
    (every ``hourly_interval_s``: each is an hour recomputed whole, from its raw rows,
    so it is done less often than the per-install rows the board and reports read).

    ``mark`` returns a future that completes when the marked keys are recomputed in both.
    ``on_done`` gets the experiments of each completed per-install recompute (the SRM check
    then reads statistics that include them).
    """

    def __init__(
        self,
        store: Store,
        interval_s: float = 1.0,
        max_backoff_s: float = 10.0,
        on_done: Callable[[set[str]], None] | None = None,
        metrics: WorkerMetrics | None = None,
        hourly_interval_s: float = 5.0,
    ) -> None:
        self.metrics = metrics or WorkerMetrics.create()
        self.store = store
        self.interval_s = interval_s
        self.max_backoff_s = max_backoff_s
        self.on_done = on_done
        self._installs = _Coalescer("arrangement-rollup", interval_s, self._recompute_installs)
        self._hours = _Coalescer("arrangement-hours", hourly_interval_s, self._recompute_hours)

    def mark(self, slices: Iterable[SliceKey], installs: Iterable[InstallKey] = ()) -> asyncio.Future[None]:
        """Queue keys for the next recomputes; the future completes once they are stored."""
        slices = set(slices)
        both = (self._installs.mark(slices, installs), self._hours.mark(slices, ()))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def settle(_: object) -> None:
            if done.done() or not all(f.done() for f in both):
                return
            failed = next((f for f in both if f.cancelled() or f.exception() is not None), None)
            if failed is None:
                done.set_result(None)
            elif failed.cancelled():
                done.cancel()
            else:
                done.set_exception(failed.exception())  # type: ignore[arg-type]

        for f in both:
            f.add_done_callback(settle)
        return done

    async def close(self) -> None:
        """Stop recomputing; batches still waiting stay unacknowledged and are replayed."""
        await self._installs.close()
        await self._hours.close()

    async def _recompute_installs(self, due: _Pending) -> None:
        async def once() -> None:
            started = time.perf_counter()
            # on the store's background lane: the next batches' raw rows and minute
            # aggregate do not wait behind the recompute
            await self.store.execute(slice_rows.slices_sql(due.slices), background=True)
            await forget_old_looks(self.store, due.slices)
            # the touched installs' study-wide rows from their closed days' sums and the
            # slices since: work that follows the batch, not the installs' histories
            targets = closed_sums.targets_of(due.slices)
            await closed_sums.recompute(self.store, due.installs, due.slices, targets, background=True)
            self.metrics.rollup_seconds.observe(time.perf_counter() - started)
            self.metrics.rollup_batches.observe(len(due.waiters))

        await until_done(
            once,
            what="recomputing per-install statistics",
            count=lambda kind: self.metrics.rollup_errors.labels(kind).inc(),
            max_backoff_s=self.max_backoff_s,
        )
        if self.on_done is not None:
            self.on_done({k[0] for k in due.slices})

    async def _recompute_hours(self, due: _Pending) -> None:
        async def once() -> None:
            await hourly_replicates.recompute_hours(self.store, hourly_replicates.hours_of(due.slices))

        await until_done(
            once,
            what="recomputing per-hour replicate sums",
            count=lambda kind: self.metrics.rollup_errors.labels(kind).inc(),
            max_backoff_s=self.max_backoff_s,
        )


def stale_looks(slices: Iterable[SliceKey], now: float) -> dict[tuple[str, str], date]:
    """Per study, the first day whose stored decision-line look the recomputed ``slices``
    make stale: a slice of a day that has been over for ``GRACE_S`` (a replay after a long
    outage); a look is stored only for such days (studies/arrangement/write/looks.py)."""
    newest_stored = now - GRACE_S - DAY_S  # latest start of a stored day
    oldest: dict[tuple[str, str], int] = {}
    for experiment_id, engine, start in slices:
        day_start = start - start % DAY_S
        if day_start <= newest_stored:
            key = (experiment_id, engine)
            oldest[key] = min(oldest.get(key, day_start), day_start)
    return {key: datetime.fromtimestamp(start, UTC).date() for key, start in oldest.items()}


async def forget_old_looks(store: Store, slices: Iterable[SliceKey], now: float | None = None) -> None:
    """Forget the looks that recomputed slices made stale; the next report stores them anew."""
    for (experiment_id, engine), day in sorted(
        stale_looks(slices, time.time() if now is None else now).items()
    ):
        log.info("slices of %s recomputed after its look was stored: forgetting looks from it on", day)
        await stored_looks.forget_looks(store, experiment_id, engine, day)
