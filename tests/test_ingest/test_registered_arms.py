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
            self.release.clear()
        return QueryResult(["config"], ["String"], [[orjson.dumps(self.config).decode()]])


async def until(predicate: Any, within: float = 5.0) -> None:
    """Poll ``predicate`` under a deadline."""
    deadline = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.01)  # wait-ok: poll interval under a deadline


def arms(store: Registry, wait_s: float = 0.2) -> RegisteredArms:
    return RegisteredArms(cast(Store, store), every_s=0.05, wait_s=wait_s)


async def test_the_first_read_is_waited_on_and_later_ones_refresh_behind_the_requests() -> None:
    store = Registry()
    registered = arms(store)
    try:
        want = {"reg": (frozenset({"google"}), frozenset({"control", "swap_1_2"}))}
        assert await registered.current() == want
        store.mode = "hang"  # the next read hangs: requests do not wait on it
        await until(lambda: store.reads >= 2)
        assert await asyncio.wait_for(registered.current(), 0.02) == want
        store.config["arms"] = {"control": 1, "hide_box": 1}
        store.release.set()
        await until(lambda: "hide_box" in registered._registry.get("reg", ((), ()))[1])
    finally:
        await registered.close()


async def test_a_quiet_intake_still_reads_an_experiment_registered_meanwhile() -> None:
    """No request for a while, then the first one: the experiment registered in the lull is
    already in the copy (the probe's words in arm got in after 10 quiet seconds)."""
    store = Registry()
    store.config["experiment_id"] = "other"
    registered = arms(store)
    try:
        assert set(await registered.current()) == {"other"}
        store.config["experiment_id"] = "registered-in-the-lull"
        reads = store.reads
        await until(lambda: store.reads >= reads + 2)  # no request meanwhile
        assert set(await registered.current()) == {"registered-in-the-lull"}
    finally:
        await registered.close()


async def test_a_hung_store_holds_no_request_past_the_first_wait_and_an_outage_keeps_the_copy() -> None:
    store = Registry()
    store.mode = "hang"
    registered = arms(store, wait_s=0.1)
    try:
        started = asyncio.get_running_loop().time()
        assert await registered.current() == {}  # waited for the first read, then went on
        assert asyncio.get_running_loop().time() - started < 1.0
        assert await asyncio.wait_for(registered.current(), 0.02) == {}  # no more waiting
        store.mode = "answer"
        store.release.set()
        await until(lambda: "reg" in registered._registry)
        store.mode = "down"
        reads = store.reads
        await until(lambda: store.reads >= reads + 2)
        assert "reg" in await registered.current()  # the last copy, while the store is down
    finally:
        await registered.close()
    assert registered._task is None


async def test_an_experiment_registered_here_is_checked_before_the_next_read() -> None:
    from schemas.experiments import ExperimentConfig

    store = Registry()
    store.mode = "down"
    registered = arms(store)
    try:
        assert await registered.current() == {}
        config = ExperimentConfig.model_validate({**store.config, "experiment_id": "new"})
        registered.note(config)
        assert (await registered.current())["new"][1] == frozenset({"control", "swap_1_2"})
    finally:
        await registered.close()
