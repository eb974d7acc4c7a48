"""Exactly once with several writers against a ClickHouse server (issue 41).

The worker's write (``RawWriter``) and an import's (``BulkImporter``) each go through a
``ServerStore`` of their own, as two processes would; the statements those stores send run
on chDB (``tests/chdb_driver.py``), the same engine a server is. Their batches overlap, and
the two are timed by holding statements back, so that each writer looks the shared ids up
before the other has stored them: the race two connections to a server allow and chDB's
single write lane does not. Each event must be stored once, its first received copy kept.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store.server_store import ServerStore
from schemas.sql import quote
from schemas.topics import EXTENSION
from streams.bulk_import import BulkImporter, ImportWrite, Span
from streams.erasure import Eraser
from streams.recompute.batch import DecodedBatch
from streams.sinks.later_copies import delete_later_copies, later_where, repeated_sql
from streams.sinks.raw_writer import RawWrite, RawWriter
from tests.chdb_driver import ChdbDriverClient

EXP = "two-writers"
WAIT_S = 60
LIVE_AT = datetime(2026, 11, 20, 10, tzinfo=UTC)
WORKER_IDS = range(0, 30)
IMPORT_IDS = range(10, 40)
SHARED = range(10, 30)

WORKER_INSERT = "INSERT INTO raw_extension_events (`"  # the worker's native insert
SETTLE = "HAVING uniqExact(received_at) > 1"


@dataclass
class Gates:
    """Statements held back until a named moment: ``hold[prefix] = moment`` makes a statement
    containing ``prefix`` wait for ``moment``; ``mark[prefix] = moment`` sets it when one
    arrives (before it runs)."""

    hold: dict[str, str] = field(default_factory=dict)
    mark: dict[str, str] = field(default_factory=dict)
    moments: dict[str, threading.Event] = field(default_factory=dict)

    def moment(self, name: str) -> threading.Event:
        return self.moments.setdefault(name, threading.Event())

    def hook(self) -> Callable[[str], None]:
        def seen(sql: str) -> None:
            for part, name in self.mark.items():
                if part in sql:
                    self.moment(name).set()
            for part, name in self.hold.items():
                if part in sql and not self.moment(name).wait(WAIT_S):
                    raise TimeoutError(f"{name} never came")

        return seen


def server_store(path: Path, hook: Callable[[str], None] | None = None) -> ServerStore:
    return ServerStore("clickhouse://w@h/db", read_lanes=1, connect=lambda _: ChdbDriverClient(path, hook))


def events(n: int = 40) -> list[dict[str, Any]]:
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=EXP, installs=6, seed=41, today=LIVE_AT.date()))
    return list(itertools.islice(traffic.events(), n))


EVENTS = events()


def at(event: dict[str, Any], moment: datetime) -> dict[str, Any]:
    return {**event, "received_at": moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]}


def copies(import_first: bool) -> tuple[DecodedBatch, bytes, dict[str, str]]:
    """The worker's batch (received live), the import's chunk (its own received_at, hours
    before or after), overlapping in ``SHARED``, and each event's first received_at."""
    imported_at = LIVE_AT + timedelta(hours=-5 if import_first else 5)
    live = [at(EVENTS[i], LIVE_AT + timedelta(seconds=i)) for i in WORKER_IDS]
    chunk = [at(EVENTS[i], imported_at + timedelta(seconds=i)) for i in IMPORT_IDS]
    first: dict[str, str] = {}
    for e in sorted(live + chunk, key=lambda e: e["received_at"]):
        first.setdefault(e["event_id"], e["received_at"])
    batch = DecodedBatch(events=live, lines=[orjson.dumps(e) for e in live])
    return batch, b"\n".join(orjson.dumps(e) for e in chunk), first


async def stored(path: Path) -> list[tuple[str, str]]:
    """Every raw row of the experiment (no FINAL: what the table holds), id and received_at."""
    client = ChdbDriverClient(path)
    try:
        sql = (
            "SELECT toString(event_id), toString(received_at) FROM raw_extension_events "
            f"WHERE experiment_id = '{EXP}'"
        )
        return sorted((str(i), str(t)) for i, t in await asyncio.to_thread(client.execute, sql))
    finally:
        client.disconnect()


async def race(
    path: Path, worker_gates: Gates, import_gates: Gates, import_first: bool, settle: bool = True
) -> tuple[RawWrite, ImportWrite]:
    """The worker's batch and the import's chunk written at once, each through a server store
    of its own, timed by the gates (whose moments they share)."""
    batch, chunk, _ = copies(import_first)
    worker_store = server_store(path, worker_gates.hook())
    import_store = server_store(path, import_gates.hook())
    if not settle:  # the statements as they were before writers settled later copies
        worker_store.one_writer = import_store.one_writer = True
    try:
        worker = asyncio.ensure_future(RawWriter(worker_store).write(EXTENSION, batch))
        imported = await BulkImporter(import_store).write(EXTENSION, chunk, len(IMPORT_IDS))
        import_gates.moment("import done").set()
        return await asyncio.wait_for(worker, WAIT_S), imported
    finally:
        await worker_store.close()
        await import_store.close()


@pytest.mark.parametrize("import_first", [False, True], ids=["live-first", "import-first"])
async def test_the_worker_that_inserts_last_deletes_the_later_copies(path: Path, import_first: bool) -> None:
    """The worker looks its ids up, then the import stores its chunk whole (finding none of
    the worker's), then the worker inserts and, looking again, finds two copies."""
    worker_gates = Gates(hold={WORKER_INSERT: "import done"})
    import_gates = Gates(moments=worker_gates.moments)
    worker, imported = await race(path, worker_gates, import_gates, import_first)
    rows = await stored(path)
    assert rows == sorted(copies(import_first)[2].items())  # once each, the first copy kept
    assert len(rows) == 40
    if import_first:  # the worker's own copies were the later ones: it stored nothing of them
        assert (worker.inserted, worker.duplicates, imported.inserted) == (10, 20, 30)
    else:  # the import had answered before its later copies were deleted (README, "Limits")
        assert (worker.inserted, worker.duplicates, imported.inserted) == (30, 0, 30)
    # handed back either way, so the worker recomputes what they may have been counted in
    deleted = {(r["event_id"], r["received_at"]) for r in worker.later_copies}
    assert len(deleted) == len(SHARED) and not deleted & set(rows)


@pytest.mark.parametrize("import_first", [False, True], ids=["live-first", "import-first"])
async def test_the_import_that_looks_last_deletes_the_later_copies(path: Path, import_first: bool) -> None:
    """Both insert before either looks again; the import looks first and deletes, and the
    worker then finds one copy each. A live copy the import deleted may have been counted
    by the worker already: its day is among the days the import recomputes."""
    worker_gates = Gates(
        hold={WORKER_INSERT: "import inserted", SETTLE: "import done"}, mark={SETTLE: "worker inserted"}
    )
    import_gates = Gates(
        hold={SETTLE: "worker inserted"}, mark={SETTLE: "import inserted"}, moments=worker_gates.moments
    )
    worker, imported = await race(path, worker_gates, import_gates, import_first)
    rows = await stored(path)
    assert rows == sorted(copies(import_first)[2].items())
    assert len(rows) == 40
    assert not worker.later_copies  # the import had settled them
    day = int(LIVE_AT.timestamp()) // 86400 * 86400
    live_days = {Span(EXP, e["engine"], day) for e in EVENTS[: len(WORKER_IDS)]}
    if import_first:  # the worker had counted its copies before the import deleted them
        assert (worker.inserted, imported.inserted) == (30, 30)
        assert live_days <= imported.spans  # the deleted live copies' days are recomputed
    else:  # the import's own copies were the later ones, and it counts what it kept
        assert (worker.inserted, imported.inserted, imported.duplicates) == (30, 10, 20)


async def test_without_settling_the_same_race_stores_copies_twice(path: Path) -> None:
    """The statements as they were: both copies of each shared event stay."""
    worker_gates = Gates(hold={WORKER_INSERT: "import done"})
    import_gates = Gates(moments=worker_gates.moments)
    await race(path, worker_gates, import_gates, import_first=False, settle=False)
    rows = await stored(path)
    assert len(rows) == 40 + len(SHARED) and len({i for i, _ in rows}) == 40


async def test_overlapping_writes_at_once_untimed_store_each_event_once(path: Path) -> None:
    """No gates: rounds of a worker batch and an import chunk sharing half their events, sent
    at once from two stores, in whatever order the threads run them. Each event is stored
    once, as one of its copies (a copy found stored is kept, whichever was received first:
    the rule of a lookup)."""
    worker_store, import_store = server_store(path), server_store(path)
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=EXP, installs=6, seed=43, today=LIVE_AT.date()))
    copies_of: dict[str, set[str]] = {}
    try:
        for round_ in range(6):
            fresh = list(itertools.islice(traffic.events(), 60))
            import_first = round_ % 2 == 1
            shift = timedelta(hours=-3 if import_first else 3)
            live = [at(e, LIVE_AT + timedelta(minutes=round_, seconds=n)) for n, e in enumerate(fresh[:40])]
            chunk = [
                at(e, LIVE_AT + shift + timedelta(minutes=round_, seconds=n))
                for n, e in enumerate(fresh[20:])
            ]
            for e in live + chunk:
                copies_of.setdefault(e["event_id"], set()).add(e["received_at"])
            batch = DecodedBatch(events=live, lines=[orjson.dumps(e) for e in live])
            body = b"\n".join(map(orjson.dumps, chunk))
            await asyncio.wait_for(
                asyncio.gather(
                    RawWriter(worker_store).write(EXTENSION, batch),
                    BulkImporter(import_store).write(EXTENSION, body, len(chunk)),
                ),
                WAIT_S,
            )
    finally:
        await worker_store.close()
        await import_store.close()
    rows = await stored(path)
    assert sorted(i for i, _ in rows) == sorted(copies_of)
    assert all(t in copies_of[i] for i, t in rows)


async def test_a_copy_earlier_than_the_first_a_writer_saw_is_never_deleted(path: Path) -> None:
    """Three copies: a writer saw b and c and keeps b; a third writer stores a, earlier,
    before the first one's DELETE runs. That DELETE removes c only (not a), and the next
    settling keeps a: the earliest copy always stays."""
    store = server_store(path)
    event = EVENTS[0]
    a, b, c = (at(event, LIVE_AT + timedelta(hours=h)) for h in (-1, 0, 1))
    where = "received_at >= toDateTime64('2026-11-01 00:00:00', 3, 'UTC')"
    try:
        await store.insert_json_rows("raw_extension_events", b"\n".join(orjson.dumps(e) for e in (b, c)))
        seen = await store.query(repeated_sql("raw_extension_events", where, quote(event["event_id"])))
        firsts = [(str(i), str(t)) for i, t in seen.rows]
        assert firsts == [(event["event_id"], b["received_at"])]
        await store.insert_json_rows("raw_extension_events", orjson.dumps(a))
        await store.execute(f"DELETE FROM raw_extension_events WHERE {later_where(where, firsts)}")
        assert [t for _, t in await stored(path)] == [a["received_at"], b["received_at"]]
        deleted = await delete_later_copies(store, "raw_extension_events", where, [quote(event["event_id"])])
        assert [r["received_at"] for r in deleted] == [b["received_at"]]
        assert [t for _, t in await stored(path)] == [a["received_at"]]
    finally:
        await store.close()


@pytest.mark.parametrize("second_look", [True, False], ids=["settled", "as-before"])
async def test_an_install_erased_between_a_writers_lookup_and_its_insert_keeps_no_row(
    path: Path, second_look: bool
) -> None:
    """The worker looks the erasure marks up (none yet); the install is then erased whole
    (marked, its rows deleted, its days recomputed) on another connection; then the
    worker's insert lands. Looking the marks up again, the worker deletes that install's
    events; without the second look (as before) they stay."""
    gates = Gates(hold={WORKER_INSERT: "erased"}, mark={WORKER_INSERT: "worker looked"})
    worker_store, eraser_store = server_store(path, gates.hook()), server_store(path)
    worker_store.one_writer = not second_look
    batch, _, _ = copies(import_first=False)
    install = batch.events[0]["install_id"]

    async def no_looks(experiment_id: str, engine: str) -> None:
        return None

    try:
        worker = asyncio.ensure_future(RawWriter(worker_store).write(EXTENSION, batch))
        assert await asyncio.to_thread(gates.moment("worker looked").wait, WAIT_S)
        await Eraser(eraser_store, no_looks, settle_s=0).erase(install, "operator")
        gates.moment("erased").set()
        written = await asyncio.wait_for(worker, WAIT_S)
    finally:
        await worker_store.close()
        await eraser_store.close()
    others = {e["event_id"] for e in batch.events if e["install_id"] != install}
    left = {i for i, _ in await stored(path)} - others
    assert {i for i, _ in await stored(path)} >= others
    if second_look:
        assert not left and written.inserted == len(others)
    else:  # the race the second look closes
        assert len(left) == len(batch.events) - len(others) > 0
