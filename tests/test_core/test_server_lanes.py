"""The server store's lanes (core/store/server_store.py), over a fake clickhouse-driver
client: they test the pool and the lanes, not ClickHouse (the SQL is checked on chDB)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from clickhouse_driver import errors

from core.store.base import QueryLimits, StoreBusy, StoreError
from core.store.server_store import ServerStore

WAIT_S = 30


class FakeClient:
    """Records each call; a statement containing ``hold`` blocks until ``release`` is set,
    and one containing ``fail`` raises as the server would."""

    def __init__(self, url: str, log: list[tuple[str, str, dict[str, Any]]]) -> None:
        self.url, self.log = url, log
        self.release = threading.Event()
        self.entered = threading.Event()
        self.disconnects = 0

    def execute(self, sql: str, params: Any = None, **kw: Any) -> Any:
        self.log.append((self.url, sql, {**kw, "params": params}))
        if "hold" in sql:
            self.entered.set()
            if not self.release.wait(WAIT_S):
                raise TimeoutError("never released")
        if "fail" in sql:
            raise errors.ServerException("Code: 62. Syntax error", code=62)
        if sql.startswith("DESCRIBE"):
            return [("x", "UInt8", "", "", "", "", "")]
        return ([[1]], [("x", "UInt8")]) if kw.get("with_column_types") else [["found-id"]]

    def disconnect(self) -> None:
        self.disconnects += 1


class Pool:
    def __init__(self) -> None:
        self.log: list[tuple[str, str, dict[str, Any]]] = []
        self.clients: list[FakeClient] = []

    def connect(self, url: str) -> FakeClient:
        client = FakeClient(url, self.log)
        self.clients.append(client)
        return client

    def store(self, read_lanes: int = 2, read_url: str = "") -> ServerStore:
        return ServerStore("clickhouse://writer@h/db", read_lanes, read_url, connect=self.connect)

    def release_all(self) -> None:
        for client in self.clients:
            client.release.set()


async def entered(client: FakeClient) -> None:
    await asyncio.wait_for(asyncio.to_thread(client.entered.wait, WAIT_S), WAIT_S)


async def test_a_long_read_never_delays_a_write_or_a_recompute() -> None:
    pool = Pool()
    store = pool.store(read_lanes=1)
    reading = asyncio.ensure_future(store.query("SELECT hold", read_only=True, limits=QueryLimits()))
    await entered(pool.clients[-1])  # the read lane (made last)
    await asyncio.wait_for(store.insert_json_rows("t", b'{"x": 1}'), 5)
    await asyncio.wait_for(store.execute("INSERT INTO agg SELECT 1", background=True), 5)
    await asyncio.wait_for(store.insert_new_json_rows("t", [("a", b'{"x": 2}')], ["SELECT ids"]), 5)
    assert not reading.done()
    pool.release_all()
    assert (await asyncio.wait_for(reading, WAIT_S)).rows == [[1]]
    await store.close()


async def test_a_read_waits_for_a_lane_no_longer_than_it_may_run() -> None:
    pool = Pool()
    store = pool.store(read_lanes=1)
    first = asyncio.ensure_future(store.query("SELECT hold", read_only=True))
    await entered(pool.clients[-1])
    with pytest.raises(StoreBusy):
        await store.query("SELECT 1", read_only=True, limits=QueryLimits(max_execution_time_s=0.2))
    assert (await store.status())["saturated"] is False  # the refused one waits no more
    pool.release_all()
    await asyncio.wait_for(first, WAIT_S)
    await store.close()


async def test_reads_go_as_the_read_only_user_with_the_limits_then_readonly() -> None:
    pool = Pool()
    store = pool.store(read_lanes=2, read_url="clickhouse://analyst@h/db")
    assert sorted(c.url for c in pool.clients).count("clickhouse://analyst@h/db") == 2
    await store.query("SELECT 1", read_only=True, limits=QueryLimits())
    url, sql, kw = pool.log[-1]
    assert url == "clickhouse://analyst@h/db" and sql == "SELECT 1"
    assert list(kw["settings"])[-1] == "readonly" and kw["settings"]["max_execution_time"] == 30.0
    assert kw["query_id"].startswith("auditstream-read-")
    await store.query("SELECT 2")
    assert pool.log[-1][0] == "clickhouse://writer@h/db" and "readonly" not in pool.log[-1][2]["settings"]
    await store.close()


async def test_a_read_whose_caller_went_away_is_killed_by_its_query_id_and_its_lane_reset() -> None:
    pool = Pool()
    store = pool.store(read_lanes=1)
    reading = asyncio.ensure_future(store.query("SELECT hold", read_only=True))
    reader = pool.clients[-1]
    await entered(reader)
    query_id = next(kw["query_id"] for _, sql, kw in pool.log if sql == "SELECT hold")
    reading.cancel()
    await asyncio.wait_for(_until(lambda: any("KILL QUERY" in s for _, s, _ in pool.log)), WAIT_S)
    sql, kw = next((s, kw) for _, s, kw in pool.log if "KILL QUERY" in s)
    assert "query_id = %(id)s" in sql and kw["params"] == {"id": query_id}
    pool.release_all()  # the server ends the killed query
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert reader.disconnects == 1
    assert (await store.query("SELECT 1", read_only=True)).rows == [[1]]  # the lane is back
    await store.close()


async def test_a_refused_read_resets_its_lane_and_says_why() -> None:
    pool = Pool()
    store = pool.store(read_lanes=1)
    with pytest.raises(StoreError, match="Syntax error"):
        await store.query("SELECT fail", read_only=True)
    assert pool.clients[-1].disconnects == 1
    await store.close()


async def test_an_id_lookup_and_its_insert_let_no_other_write_of_the_process_between() -> None:
    pool = Pool()
    store = pool.store()
    writer = pool.clients[0]
    both = asyncio.ensure_future(store.insert_new_json_rows("t", [("a", b'{"x": 1}')], ["SELECT hold"]))
    await entered(writer)
    other = asyncio.ensure_future(store.insert_json_rows("t", b'{"x": 9}'))
    await asyncio.sleep(0)
    assert not other.done()
    writer.release.set()
    assert await asyncio.wait_for(both, WAIT_S) == {"found-id"}
    await asyncio.wait_for(other, WAIT_S)
    statements = [(s, kw["params"]) for _, s, kw in pool.log if not s.startswith("DESCRIBE")]
    assert statements[0][0] == "SELECT hold"
    inserted = [p for s, p in statements[1:] if "INSERT INTO t" in s]
    assert inserted == [[[1]], [[9]]]  # the pair's own insert before the other (native columns)
    await store.close()


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.01)
