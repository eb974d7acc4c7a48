"""/v1/sql checks statements in processes of its own (ingest/sql_guard_pool.py): a statement
over the size cap is refused before it is parsed, a check is bounded in CPU time, a dead
guard pool is a 503, and a key has at most ``sql_max_concurrent_per_key`` statements in
flight. The store here is NoStore: a statement that passes the guard ends as 503
store_unavailable, which is how these tests see that it got past the guard."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from core.settings import Settings
from core.store.base import NoStore
from ingest.api_keys import ApiKey, KeyFile
from ingest.app import create_app
from ingest.app_state import SQL_GUARD
from ingest.sql_guard_pool import GuardTooSlow, InFlight, SqlGuard
from schemas.sql import ReadOnlyViolation

SLOW = "SELECT " + "+".join(["1"] * 30_000)
"""60 kB that take sqlglot ~2.5 s of CPU to check."""


@dataclass
class Client:
    http: TestClient
    settings: Settings
    keys: dict[str, tuple[ApiKey, str]]

    async def sql(self, statement: str, key: str = "alice") -> tuple[int, dict[str, Any], Any]:
        headers = {"Authorization": f"Bearer {self.keys[key][1]}"}
        async with self.http.post("/v1/sql", json={"sql": statement}, headers=headers) as resp:
            return resp.status, orjson.loads(await resp.read()), resp.headers

    @property
    def guard(self) -> SqlGuard:
        return self.http.server.app[SQL_GUARD]


@pytest.fixture
async def client(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    fields = getattr(request, "param", {})
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9", **fields)
    key_file = KeyFile(settings.resolved_keys_file)
    keys = {name: key_file.create(name, ("read",)) for name in ("alice", "bob")}
    app: web.Application = create_app(settings, NoStore("no store here"))
    test_client = TestClient(TestServer(app))
    await test_client.start_server()
    yield Client(test_client, settings, keys)
    await test_client.close()  # the app's cleanup shuts its guard down


def test_in_flight_counts_each_key_up_to_its_cap() -> None:
    slots = InFlight(2)
    assert slots.take("a") and slots.take("a") and not slots.take("a")
    assert slots.take("b")  # another key has slots of its own
    slots.give_back("a")
    assert slots.count("a") == 1 and slots.take("a") and not slots.take("a")
    with pytest.raises(web.HTTPTooManyRequests) as refused, slots.slot("a", retry_after_s=7):
        pass
    assert refused.value.headers["Retry-After"] == "7"
    assert orjson.loads(refused.value.text or "")["error"] == "too_many_queries"
    with pytest.raises(RuntimeError), slots.slot("c", retry_after_s=1):
        assert slots.count("c") == 1
        raise RuntimeError("the query failed")
    assert slots.count("c") == 0  # given back however the block ended


async def test_a_statement_over_the_cap_is_refused_at_once(client: Client) -> None:
    started = time.monotonic()
    status, body, _ = await client.sql("SELECT " + "+".join(["1"] * 300_000))  # ~600 kB
    assert status == 413 and body["error"] == "statement_too_large", body
    assert "at most 262144" in body["message"]
    assert time.monotonic() - started < 5  # it took ~25 s of parsing before
    assert client.guard.pool.restarts == 0 and client.guard.pool._pool is None  # never parsed


async def test_a_key_with_its_most_queries_in_flight_gets_429(client: Client) -> None:
    alice = client.keys["alice"][0]
    slots = client.guard.in_flight
    assert slots.most == 2  # the default
    assert slots.take(alice.id) and slots.take(alice.id)  # two of alice's queries running
    status, body, headers = await client.sql("SELECT 1")
    assert status == 429 and body["error"] == "too_many_queries" and body["message"], body
    assert int(headers["Retry-After"]) >= 1
    status, body, _ = await client.sql("SELECT 1", key="bob")  # bob is not held up
    assert status == 503 and body["error"] == "store_unavailable", body
    slots.give_back(alice.id)
    status, body, _ = await client.sql("SELECT 1")
    assert status == 503 and body["error"] == "store_unavailable", body
    assert slots.count(alice.id) == 1 and slots.count(client.keys["bob"][0].id) == 0  # answered: given back


@pytest.mark.parametrize("client", [{"sql_max_concurrent_per_key": 1}], indirect=True)
async def test_a_query_holds_its_slot_while_it_is_checked(client: Client) -> None:
    first = asyncio.create_task(client.sql(SLOW))
    alice = client.keys["alice"][0]
    async with asyncio.timeout(30):
        while client.guard.in_flight.count(alice.id) == 0:
            await asyncio.sleep(0.01)
    status, body, _ = await client.sql("SELECT 1")
    assert status == 429 and body["error"] == "too_many_queries", body
    assert (await first)[0] == 503  # it passed the guard, and the store is not there
    assert client.guard.in_flight.count(alice.id) == 0


async def test_refusals_of_the_guard_keep_their_answers(client: Client) -> None:
    status, body, _ = await client.sql("SELECT dictGetString('users', 'name', toUInt64(1))")
    assert status == 400 and body["error"] == "not_read_only" and "dictgetstring" in body["message"]
    status, body, _ = await client.sql("SELECT * FROM file('/etc/passwd')")
    assert status == 400 and body["error"] == "not_read_only", body
    assert client.guard.in_flight.count(client.keys["alice"][0].id) == 0


@pytest.mark.parametrize("client", [{"sql_guard_cpu_s": 0.3}], indirect=True)
async def test_a_statement_too_slow_to_check_is_a_400_and_its_process_serves_on(client: Client) -> None:
    status, body, _ = await client.sql(SLOW)
    assert status == 400 and body["error"] == "statement_too_complex", body
    assert "0.3 s of CPU" in body["message"]
    status, body, _ = await client.sql("SELECT 1")
    assert status == 503 and body["error"] == "store_unavailable", body
    assert client.guard.pool.restarts == 0  # the timer ended the check, not the process


async def test_a_dead_guard_pool_is_a_503_with_retry_after_never_a_500(client: Client) -> None:
    guard = client.guard
    guard.pool.restart_every_s = 600  # a second death within this is not restarted
    assert (await client.sql("SELECT 1"))[0] == 503  # the pool is up
    guard.pool.kill()
    status, body, _ = await client.sql("SELECT 1")  # started again, and the statement checked
    assert status == 503 and body["error"] == "store_unavailable", body
    assert guard.pool.restarts == 1
    guard.pool.kill()
    status, body, headers = await client.sql("SELECT 1")
    assert status == 503 and body["error"] == "sql_guard_unavailable", body
    assert int(headers["Retry-After"]) >= 1


async def test_the_guard_checks_in_its_own_process_within_its_cpu_time() -> None:
    guard = SqlGuard(processes=1, cpu_s=0.5, per_key=2, max_bytes=262_144)
    try:
        assert await guard.check("select 1 + 1") == "SELECT 1 + 1"
        with pytest.raises(ReadOnlyViolation):
            await guard.check("SELECT dictIsIn('regions', 1, 2)")
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        with pytest.raises(GuardTooSlow, match=r"0\.5 s of CPU"):
            await guard.check(SLOW)
        ticker.cancel()
        assert ticks >= 10  # the event loop ran while sqlglot parsed
        assert await guard.check("SELECT 2") == "SELECT 2"
    finally:
        guard.shutdown()
