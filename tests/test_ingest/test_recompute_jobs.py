"""``POST /v1/import/recompute`` answers at once (202) and recomputes in the background, each
day once however often it is named; ``GET /v1/import/recompute/{id}`` says how far it got.
1,000 days took over 60 s in the request before (100 took 8.3 s).

The app is the real one; its store stands in for ClickHouse: it records each statement and
can hold them until the test lets them run, so "answered before the work is done" is a
fact the test arranges, not a race it hopes to win."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer

from collectors.import_upload import recompute
from core.settings import Settings
from core.store import StoreUnavailable
from core.store.base import NoStore, QueryLimits, QueryResult, Store
from ingest.api_keys import KeyFile
from ingest.app import create_app
from ingest.import_routes import IMPORTER, RECOMPUTES, Recomputes
from studies.arrangement.write import clicks_by_rank, hourly_replicates

DAY = 86400
DAY0 = 20_000 * DAY


class HeldStore(Store):
    """Records every statement; ``held`` keeps them waiting until it is set."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.held = asyncio.Event()
        self.held.set()
        self.fail_at: int | None = None

    async def execute(self, sql: str, *, background: bool = False) -> None:
        await self.held.wait()
        if self.fail_at is not None and len(self.statements) >= self.fail_at:
            raise StoreUnavailable("the store went away")
        self.statements.append(sql)

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        return QueryResult()  # SELECT 1, and the intake's reads of the experiment registry

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        raise AssertionError("a recompute inserts nothing itself")


@dataclass
class Service:
    client: TestClient
    store: HeldStore
    headers: dict[str, str]
    data_dir: Path

    async def post(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        resp = await self.client.post("/v1/import/recompute", json=body, headers=self.headers)
        return resp.status, await resp.json()

    async def poll(self, recompute_id: str) -> tuple[int, dict[str, Any]]:
        resp = await self.client.get(f"/v1/import/recompute/{recompute_id}", headers=self.headers)
        return resp.status, await resp.json()

    async def until_ended(self, recompute_id: str, within_s: float = 30) -> dict[str, Any]:
        async with asyncio.timeout(within_s):
            while True:
                status, state = await self.poll(recompute_id)
                assert status == 200, state
                if state["status"] != "running":
                    return state
                await asyncio.sleep(0.02)  # wait-ok: poll interval under a deadline


@pytest.fixture
async def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Service]:
    async def hourly(store: Store, lo: int, hi: int, raw_where: str, stored_where: str) -> None:
        """The per-hour replicate sums of a day (computed from Arrow reads and inserted since
        the closed sums, migration 0034; tested on chDB in test_closed_sums and test_import):
        here one statement, so that holding and failing the store still apply to it."""
        await store.execute(f"-- hourly replicate sums {lo}-{hi}")

    monkeypatch.setattr(hourly_replicates, "_recompute", hourly)
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    _, admin = KeyFile(settings.resolved_keys_file).create("lab", ("admin",))
    store = HeldStore()
    client = TestClient(TestServer(create_app(settings, store)))
    await client.start_server()
    yield Service(client, store, {"Authorization": f"Bearer {admin}"}, tmp_path)
    await client.close()


def span(day: int, experiment_id: str = "e") -> dict[str, Any]:
    return {"experiment_id": experiment_id, "engine": "google", "day_start": DAY0 + day * DAY}


def days_recomputed(store: HeldStore) -> list[int]:
    """The days of the minute aggregate's statements, in the order they ran."""
    marker = "received_at >= toDateTime64("
    return [
        (int(sql.split(marker, 1)[1].split(",", 1)[0]) - DAY0) // DAY
        for sql in store.statements
        if f"INSERT INTO {clicks_by_rank.TABLE}" in sql
    ]


async def test_each_day_named_twice_or_more_is_recomputed_once(service: Service) -> None:
    asked = [span(d) for d in (3, 1, 3, 2, 1, 3)]
    status, state = await service.post({"spans": asked})
    assert status == 202, state
    assert state["days"] == 3 and state["steps"] == 3
    done = await service.until_ended(state["id"])
    assert done["status"] == "done" and done["done"] == 3
    assert days_recomputed(service.store) == [3, 1, 2]  # each once, in the order first named
    per_day = len(service.store.statements) // 3  # the same statements for each day, once
    assert per_day >= 2 and len(service.store.statements) == 3 * per_day


async def test_a_large_recompute_is_answered_before_its_work_is_done(service: Service) -> None:
    service.store.held.clear()  # no statement finishes until the test says so
    asked = [span(d) for d in range(1000)]
    status, state = await service.post({"spans": asked})
    assert status == 202 and state["status"] == "running" and state["done"] == 0, state
    assert state["steps"] == 1000
    polled_status, polled = await service.poll(state["id"])
    assert polled_status == 200 and polled["status"] == "running" and polled["done"] == 0
    assert service.store.statements == []

    again_status, again = await service.post({"spans": list(reversed(asked))[::-1]})
    assert again_status == 202 and again["id"] == state["id"], "the same work, already running"

    service.store.held.set()
    done = await service.until_ended(state["id"], within_s=120)
    assert done == {**state, "status": "done", "done": 1000}
    assert days_recomputed(service.store) == list(range(1000))


async def test_a_recompute_the_store_breaks_off_is_reported_failed(service: Service) -> None:
    status, state = await service.post({"spans": [span(0)]})  # how many statements one day takes
    await service.until_ended(state["id"])
    per_day = len(service.store.statements)
    service.store.statements.clear()
    service.store.fail_at = 2 * per_day + 1  # the third day's second statement
    status, state = await service.post({"spans": [span(d) for d in range(1, 11)]})
    assert status == 202
    failed = await service.until_ended(state["id"])
    assert failed["status"] == "failed" and failed["error"] == "store_unavailable", failed
    assert failed["done"] == 2 and "message" in failed


async def test_a_store_that_is_down_is_said_at_once_not_by_the_poll(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    _, admin = KeyFile(settings.resolved_keys_file).create("lab", ("admin",))
    client = TestClient(TestServer(create_app(settings, NoStore("no store here"))))
    await client.start_server()
    try:
        resp = await client.post(
            "/v1/import/recompute", json={"spans": [span(0)]}, headers={"Authorization": f"Bearer {admin}"}
        )
        assert resp.status == 503 and (await resp.json())["error"] == "store_unavailable"
        assert int(resp.headers["Retry-After"]) >= 1
    finally:
        await client.close()


async def test_an_unknown_or_malformed_id_is_404(service: Service) -> None:
    for recompute_id in ("rc_00000000000000000000", "..%2Fkeys.json", "rc_zz"):
        status, body = await service.poll(recompute_id)
        assert status == 404 and body["error"] == "unknown_recompute", (recompute_id, body)


async def test_a_poll_is_answered_by_any_process_sharing_the_data_dir(service: Service) -> None:
    """Another ingest process (here: another registry on the same directory) sees a running
    recompute as running, and one whose process died (its lock free) as failed."""
    service.store.held.clear()
    _, state = await service.post({"spans": [span(0)]})
    other = Recomputes(service.client.app[RECOMPUTES].directory)
    assert (other.state(state["id"]) or {})["status"] == "running"
    service.store.held.set()
    await service.until_ended(state["id"])
    assert (other.state(state["id"]) or {})["status"] == "done"

    orphan = "rc_" + "0" * 20  # "running" on file, and nobody holds its lock
    (other.directory / f"{orphan}.json").write_bytes(
        orjson.dumps({**state, "id": orphan, "status": "running"})
    )
    (other.directory / f"{orphan}.lock").touch()
    status, seen = await service.poll(orphan)
    assert status == 200 and seen["status"] == "failed" and seen["error"] == "interrupted", seen


async def test_the_import_client_recomputes_days_then_studies_and_counts_each_step(service: Service) -> None:
    """``auditstream import``'s client: every day (1,501: two requests) before any study,
    each polled to its end, one progress step per day and per study."""
    spans = {("e", "google", DAY0 + d * DAY) for d in range(1500)} | {("f", "google", DAY0)}
    order: list[str] = []

    async def installs(experiment_id: str, engine: str) -> None:
        order.append(f"{experiment_id} after {len(days_recomputed(service.store))} days")

    service.client.app[IMPORTER].recompute_installs = installs  # type: ignore[method-assign]
    steps: list[int] = []
    key = service.headers["Authorization"].removeprefix("Bearer ")
    await recompute(str(service.client.make_url("/")), key, spans, lambda: steps.append(1))
    assert len(steps) == 1501 + 2
    assert sorted(days_recomputed(service.store)) == sorted([*range(1500), 0])
    assert order == ["e after 1501 days", "f after 1501 days"]


async def test_crawler_studies_are_recomputed_after_the_experiments_one_step_each(service: Service) -> None:
    """An import of autocomplete and SERP events names their studies: each is analysed again
    once, after the days and installs, as a step of its own."""
    order: list[str] = []
    importer = service.client.app[IMPORTER]

    async def installs(experiment_id: str, engine: str) -> None:
        order.append(f"installs {experiment_id}")

    async def crawls(study: Any) -> None:
        order.append(f"crawls {study.engine}/{study.study_id}")

    async def rounds(study_id: str) -> None:
        order.append(f"rounds {study_id}")

    importer.recompute_installs = installs  # type: ignore[method-assign]
    importer.recompute_crawl_study = crawls  # type: ignore[method-assign]
    importer.recompute_serp_study = rounds  # type: ignore[method-assign]
    status, state = await service.post({"crawl_studies": [{"engine": "google", "study_id": "ac"}] * 2})
    assert status == 202 and (state["studies"], state["steps"]) == (1, 1)
    await service.until_ended(state["id"])
    order.clear()
    steps: list[int] = []
    key = service.headers["Authorization"].removeprefix("Bearer ")
    crawled = [("google", "ac"), ("bing", "ac"), ("google", "ac")]
    url = str(service.client.make_url("/"))
    await recompute(url, key, {("e", "google", DAY0)}, lambda: steps.append(1), 30, crawled, ["p1", "p1"])
    assert order == ["installs e", "crawls bing/ac", "crawls google/ac", "rounds p1"]
    assert len(steps) == 1 + 1 + 2 + 1
