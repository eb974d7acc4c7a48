"""Events of a registered experiment must name its engines and arms (ingest/registered_arms.py)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, cast

import orjson

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from core.store import Store, StoreUnavailable
from core.store.base import QueryResult
from ingest.import_chunks import prepare_chunk
from ingest.registered_arms import RegisteredArms, unregistered, without_unregistered
from ingest.validation import validate_batch

REGISTRY = {"reg": (frozenset({"google", "bing"}), frozenset({"control", "swap_1_2", "hide_box"}))}


def events(n: int, **changes: Any) -> list[dict[str, Any]]:
    config = TrafficConfig(experiment_id="reg", seed=3, arms=(("control", 1.0), ("swap_1_2", 1.0)))
    return [{**e, **changes} for e in itertools.islice(ExtensionTraffic(config).events(), n)]


def test_an_arm_or_engine_the_registered_experiment_lacks_is_named_by_field() -> None:
    batch = [
        *events(1),
        *events(1, arm="john.smith"),
        *events(1, engine="duckduckgo"),
        *events(1, engine="bing", arm="hide_box"),  # an arm it has; engine_arms is the SRM's job
        *events(1, experiment_id="other", arm="anything"),  # not registered: taken as before
    ]
    models, rejected = validate_batch(batch)
    assert not rejected and len(models) == 5
    assert unregistered(models, REGISTRY) == [(1, "arm"), (2, "engine")]
    assert unregistered(models, {}) == []


def test_refused_events_keep_their_index_in_the_batch_beside_other_rejections() -> None:
    batch = [*events(1), {"type": "click"}, *events(1, arm="x-word"), 7, *events(1)]
    accepted, rejected = without_unregistered(*validate_batch(batch), REGISTRY)
    assert [str(m.event_id) for m in accepted] == [batch[0]["event_id"], batch[4]["event_id"]]  # type: ignore[attr-defined]
    assert [(r.index, r.reason, r.field) for r in rejected] == [
        (1, "missing_field", "schema_version"),
        (2, "unregistered_arm", "arm"),
        (3, "not_an_object", None),
    ]


def test_an_import_chunk_refuses_them_by_line_and_keeps_the_rest() -> None:
    lines = [orjson.dumps(e) for e in [*events(3), *events(1, arm="words-here"), *events(2)]]
    body = b"\n".join(lines)
    plain = prepare_chunk(body)
    assert not plain.rejected and sum(n for _, n in plain.rows.values()) == 6
    checked = prepare_chunk(body, REGISTRY)
    assert [(r.index, r.reason, r.field) for r in checked.rejected] == [(4, "unregistered_arm", "arm")]
    assert sum(n for _, n in checked.rows.values()) == 5 and b"words-here" not in b"".join(
        rows for rows, _ in checked.rows.values()
    )


class Registry:
    """The store's side of the registry read, as the intake sees it: answers, an outage, or
    a read that hangs until released (the intake's timing, not ClickHouse, is under test)."""

    def __init__(self) -> None:
        self.mode = "answer"
        self.reads = 0
        self.release = asyncio.Event()
        self.config = {
            "experiment_id": "reg",
            "engines": ["google"],
            "arms": {"control": 1, "swap_1_2": 1},
            "salt": "salt-0123456",
            "start": "2026-11-01",
        }

    async def query(self, sql: str, *, read_only: bool = False, limits: object = None) -> QueryResult:
        assert read_only and "experiments" in sql  # a read lane, never the write lane
        self.reads += 1
        if self.mode == "down":
            raise StoreUnavailable("down")
        if self.mode == "hang":
            await self.release.wait()
        return QueryResult(["config"], ["String"], [[orjson.dumps(self.config).decode()]])


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def arms(store: Registry, clock: Clock, wait_s: float = 0.2) -> RegisteredArms:
    return RegisteredArms(cast(Store, store), every_s=5.0, wait_s=wait_s, clock=clock)


async def test_the_first_read_is_waited_on_and_later_ones_refresh_behind_the_requests() -> None:
    store, clock = Registry(), Clock()
    registered = arms(store, clock)
    assert await registered.current() == {"reg": (frozenset({"google"}), frozenset({"control", "swap_1_2"}))}
    store.mode, clock.now = "hang", 5.0  # a refresh is due, and the store hangs
    before = await asyncio.wait_for(registered.current(), 0.05)  # not waited on
    assert "reg" in before and store.reads == 2
    store.config["arms"] = {"control": 1, "hide_box": 1}
    store.release.set()
    await asyncio.sleep(0)  # wait-ok: let the released read finish
    await asyncio.sleep(0)  # wait-ok
    assert (await registered.current())["reg"][1] == frozenset({"control", "hide_box"})
    assert store.reads == 2  # no new read within the period


async def test_a_hung_or_absent_store_never_holds_a_request_past_the_first_wait() -> None:
    store, clock = Registry(), Clock()
    store.mode = "hang"
    registered = arms(store, clock, wait_s=0.1)
    started = asyncio.get_running_loop().time()
    assert await registered.current() == {}  # waited for the first read, then went on
    assert asyncio.get_running_loop().time() - started < 1.0
    clock.now = 0.05  # within the first wait, still before the read answers
    assert await asyncio.wait_for(registered.current(), 1.0) == {}
    clock.now = 0.2  # past it: requests no longer wait, though the read still hangs
    assert await asyncio.wait_for(registered.current(), 0.02) == {}
    await registered.close()  # shutdown does not wait on the hung read for long
    assert store.reads == 1


async def test_an_outage_keeps_taking_events_and_the_registry_is_read_once_it_is_back() -> None:
    store, clock = Registry(), Clock()
    store.mode = "down"
    registered = arms(store, clock)
    assert await registered.current() == {} and store.reads == 1
    clock.now = 1.0
    assert await registered.current() == {} and store.reads == 1  # one read per period
    store.mode, clock.now = "answer", 5.0
    await registered.current()
    await asyncio.sleep(0)  # wait-ok: the refresh runs behind the request
    assert "reg" in await registered.current() and store.reads == 2
