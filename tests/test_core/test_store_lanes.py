"""The worker's roll-ups run on the store's background lane: a recompute holding it never
holds up the next batch's writes, and the reverse (core/store/chdb_store.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.store.base import QueryLimits, StoreBusy, StoreError, StoreUnavailable
from core.store.chdb_store import ChdbStore
from core.store.http_store import HttpStore
from core.store.server import create_store_app


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[ChdbStore, HttpStore]]:
    """A chDB store, and a client of it through the store server."""
    store = ChdbStore(tmp_path / "ch", read_lanes=1)
    server = TestServer(create_store_app(store, token="t"))
    await server.start_server()
    remote = HttpStore(str(server.make_url("")).rstrip("/"), token="t")
    try:
        yield store, remote
    finally:
        await remote.close()
        await server.close()
        await store.close()


async def queued_behind(lock: asyncio.Lock) -> None:
    """Until a call waits for ``lock`` (at most 60 s)."""
    async with asyncio.timeout(60):
        while not lock._waiters:
            await asyncio.sleep(0.01)


async def test_background_statements_pass_a_held_write_lane_in_chdb_and_over_http(
    served: tuple[ChdbStore, HttpStore],
) -> None:
    store, remote = served
    await store.execute("CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x")
    async with store._write.lock:  # a batch's statement holds the write lane
        for client in (store, remote):
            await asyncio.wait_for(client.execute("INSERT INTO t VALUES (1)", background=True), 60)
            await asyncio.wait_for(client.insert_json_rows("t", b'{"x": 2}', background=True), 60)
        waiting = asyncio.ensure_future(remote.execute("INSERT INTO t VALUES (4)"))
        await queued_behind(store._write.lock)  # the batch path itself queues behind the holder
        assert not waiting.done()
    async with store._background.lock:  # and a roll-up holding its lane lets batches pass
        await asyncio.wait_for(waiting, 60)
        await asyncio.wait_for(remote.insert_json_rows("t", b'{"x": 8}'), 60)
    assert (await store.query("SELECT sum(x), count() FROM t")).rows == [[1 + 2 + 1 + 2 + 4 + 8, 6]]


async def test_an_id_lookup_and_its_insert_let_no_other_write_between_them(
    served: tuple[ChdbStore, HttpStore],
) -> None:
    """The once-per-event-id write (``insert_new_json_rows``, the worker's) looks its ids up
    only once the write lane is its own, so an import's insert of the same ids that holds
    the lane is seen, not written over: exactly once however the two are timed. Lookups
    made before waiting for the lane (on a read lane) missed such an insert and wrote the
    ids again."""
    store, remote = served
    await store.execute("CREATE TABLE t (event_id String) ENGINE = MergeTree ORDER BY event_id")
    for round_, client in enumerate((store, remote)):
        ids = [f"r{round_}-{k}" for k in range(3)]
        rows = [(i, f'{{"event_id": "{i}"}}'.encode()) for i in ids]
        lookup = f"SELECT event_id FROM t WHERE event_id IN ({', '.join(repr(i) for i in ids)})"
        async with store._write.lock:  # an import's guarded insert holds the write lane
            writing = asyncio.ensure_future(client.insert_new_json_rows("t", rows, [lookup]))
            await queued_behind(store._write.lock)
            values = ", ".join(f"('{i}')" for i in ids[:2])
            await asyncio.to_thread(store._write.run, f"INSERT INTO t VALUES {values}", "CSV")
        found = await asyncio.wait_for(writing, 60)
        assert found == set(ids[:2])
        stored = await store.query(
            f"SELECT event_id, count() FROM t WHERE event_id LIKE 'r{round_}-%' GROUP BY 1"
        )
        assert sorted(map(tuple, stored.rows)) == [(i, 1) for i in ids]


async def test_a_read_whose_connection_broke_is_sent_again_and_a_write_is_not() -> None:
    """A store process that was started again (after a crash, say) leaves the connections a
    client had pooled to the old one dead; a process whose loop sat idle (the board's
    compute process between panels) finds out only when it sends on one. Here each route's
    first request loses its connection: a read is sent again on a new connection and
    answers; a write is not sent twice (it may have been done): it says the store is
    unavailable, and the next one goes through."""
    calls: dict[str, int] = {}

    async def flaky(request: web.Request) -> web.Response:
        calls[request.path] = calls.get(request.path, 0) + 1
        await request.read()
        if calls[request.path] == 1:
            assert request.transport is not None
            request.transport.abort()  # as a dead process's socket: no answer
        doc = {"columns": ["x"], "types": ["UInt8"], "rows": [[1]]}
        return web.json_response(doc if request.path == "/query" else {})

    app = web.Application()
    app.router.add_post("/query", flaky)
    app.router.add_post("/insert", flaky)
    server = TestServer(app)
    await server.start_server()
    remote = HttpStore(str(server.make_url("")).rstrip("/"))
    try:
        assert (await remote.query("SELECT 1", read_only=True)).rows == [[1]]
        assert calls["/query"] == 2
        with pytest.raises(StoreUnavailable):
            await remote.insert_json_rows("t", b'{"x": 1}')
        assert calls["/insert"] == 1
        await remote.insert_json_rows("t", b'{"x": 2}')
        assert calls["/insert"] == 2
        # a store that is down (nothing listens) is not a broken connection: calls fail at
        # once, and no session is set aside for each of them
        await server.close()
        for _ in range(5):
            with pytest.raises(StoreUnavailable):
                await remote.query("SELECT 1", read_only=True)
        assert len(remote._retired) <= 1
    finally:
        await remote.close()
        await server.close()


async def test_an_analysts_query_waits_for_a_lane_no_longer_than_it_may_run(
    served: tuple[ChdbStore, HttpStore],
) -> None:
    """Six slow analyst queries on two lanes had made the sixth, and a SELECT 1 after it,
    wait 90 s: a query now waits for a lane at most its time limit, then the store is busy
    (a 503 to say retry, not that the store is down), in chDB and through the store server."""
    store, remote = served
    limits = QueryLimits(max_execution_time_s=0.3)
    lane = await store._idle.get()  # the only read lane, held as a long query would
    try:
        for client in (store, remote):
            async with asyncio.timeout(30):  # before: waited for the lane for good
                with pytest.raises(StoreBusy):
                    await client.query("SELECT 1", read_only=True, limits=limits)
    finally:
        store._idle.put_nowait(lane)
    for client in (store, remote):
        assert (await client.query("SELECT 1", read_only=True, limits=limits)).rows == [[1]]


async def test_a_store_that_stops_answering_ends_calls_and_a_slow_one_does_not() -> None:
    """A store process that hangs (SIGSTOP, a dead disk) keeps its connections open: every
    call waited the whole 120 s timeout. While a call runs the client asks the store's
    /status; a store that answers it may take as long as its query needs, one that does not
    ends the call as unavailable."""
    hung = asyncio.Event()
    release = asyncio.Event()

    async def query(request: web.Request) -> web.Response:
        await request.read()
        await release.wait()
        return web.json_response({"columns": ["x"], "types": ["UInt8"], "rows": [[1]]})

    async def status(request: web.Request) -> web.Response:
        if hung.is_set():
            await asyncio.Event().wait()  # never answers
        return web.json_response({"reads_busy": 1})

    app = web.Application()
    app.router.add_post("/query", query)
    app.router.add_get("/status", status)
    server = TestServer(app)
    await server.start_server()
    remote = HttpStore(str(server.make_url("")).rstrip("/"), watch_every_s=0.1)
    try:
        slow = asyncio.ensure_future(remote.query("SELECT 1", read_only=True))
        await asyncio.sleep(1.0)  # wait-ok: ten checks of a store that answers them; the call goes on
        assert not slow.done()
        release.set()
        assert (await slow).rows == [[1]]

        release.clear()
        hung.set()
        async with asyncio.timeout(30):  # far under the 120 s the call waited before
            with pytest.raises(StoreUnavailable, match="stopped answering"):
                await remote.query("SELECT 1", read_only=True)
    finally:
        release.set()
        await remote.close()
        await server.close()


async def test_a_read_lane_cannot_write_whatever_text_reaches_it(served: tuple[ChdbStore, HttpStore]) -> None:
    """Defence behind the SQL guard: a read lane's session is read-only, so a statement
    smuggled in before the last one (whose SETTINGS bind only to the last) writes nothing,
    on every lane and after a lane is renewed."""
    store, remote = served
    limits = QueryLimits(max_execution_time_s=5)
    for client in (store, remote, store):
        with pytest.raises(StoreError, match="readonly"):
            await client.query(
                "SELECT 1; CREATE TABLE smuggled (x UInt8) ENGINE = Memory; SELECT 2",
                read_only=True,
                limits=limits,
            )
    lane = await store._idle.get()
    await lane.renew(store.path)
    store._idle.put_nowait(lane)
    with pytest.raises(StoreError, match="readonly"):
        await store.query("CREATE TABLE smuggled (x UInt8) ENGINE = Memory", read_only=True)
    assert (await store.query("SELECT 2", read_only=True, limits=limits)).rows == [[2]]
    assert not (await store.query("EXISTS TABLE smuggled")).rows[0][0]


async def test_a_long_analyst_query_never_delays_a_write_in_chdb(served: tuple[ChdbStore, HttpStore]) -> None:
    """Issue 41's scenario on the embedded path: an analyst's query runs on a read lane
    while the worker's writes, a batch's lookup-and-insert and a recompute all pass; the
    query is killed when its caller goes away."""
    store, remote = served
    await store.execute("CREATE TABLE w (event_id String) ENGINE = MergeTree ORDER BY event_id")
    long_read = "SELECT count() FROM system.numbers WHERE NOT ignore(sipHash64(number))"
    reading = asyncio.ensure_future(
        remote.query(long_read, read_only=True, limits=QueryLimits(max_execution_time_s=120))
    )
    async with asyncio.timeout(60):  # the read has its lane
        while store._idle.qsize():
            await asyncio.sleep(0.01)
    for i in range(3):
        await asyncio.wait_for(remote.insert_json_rows("w", f'{{"event_id": "a{i}"}}'.encode()), 20)
        rows = [(f"b{i}", f'{{"event_id": "b{i}"}}'.encode())]
        await asyncio.wait_for(remote.insert_new_json_rows("w", rows, ["SELECT event_id FROM w"]), 20)
        await asyncio.wait_for(remote.execute("INSERT INTO w VALUES ('c')", background=True), 20)
    assert not reading.done()
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    async with asyncio.timeout(60):  # killed in chDB: its lane is free again
        while not store._idle.qsize():
            await asyncio.sleep(0.01)
    assert (await store.query("SELECT count() FROM w")).rows == [[9]]
