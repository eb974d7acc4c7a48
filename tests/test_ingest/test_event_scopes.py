"""Which key may post which event type: the extension's key ships inside the extension (anyone
who unpacks it has it), so it must not plant crawl data; a crawler's key cannot post as a
volunteer. A refused request is a 403 for the whole request, before anything is produced."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from core.settings import Settings
from core.store.base import NoStore
from ingest.api_keys import KeyFile
from ingest.app import create_app
from schemas.event_types import EVENT_TYPES, SCOPE_BY_TYPE

COMMON = {"schema_version": 1, "sent_at": "2026-11-23T10:00:00.000Z", "engine": "google"}
CRAWL = {**COMMON, "crawl_id": "scope-c1", "root": "scope root"}
EXTENSION = {**COMMON, "install_id": "scope-install-1", "experiment_id": "scope-exp"}

EVENTS: dict[str, dict[str, Any]] = {
    "serp_view": {**EXTENSION, "type": "serp_view", "page_id": "p1", "arm": "control", "layout": []},
    "click": {**EXTENSION, "type": "click", "page_id": "p1", "arm": "control", "rank": 1},
    "install_profile": {**EXTENSION, "type": "install_profile", "install_day": "2026-11-20"},
    "serp_snapshot": {
        **COMMON,
        "type": "serp_snapshot",
        "study_id": "scope-study",
        "round_id": "scope-r0001",
        "profile_id": "p1",
        "role": "control",
        "treatment": "",
        "query": "coffee",
        "results": [{"rank": 1, "type": "organic", "url": "https://example.org/"}],
        "status": "ok",
    },
    "autocomplete_node": {
        **CRAWL,
        "type": "autocomplete_node",
        "query": "scope root",
        "depth": 0,
        "suggestions": [{"rank": 1, "text": "scope root a"}],
        "status": "ok",
    },
    "crawl_started": {**CRAWL, "type": "crawl_started", "study_id": "scope-study", "max_depth": 1},
    "crawl_completed": {**CRAWL, "type": "crawl_completed", "study_id": "scope-study"},
}


def test_the_table_covers_every_event_type() -> None:
    assert set(EVENTS) == {t.name for t in EVENT_TYPES}
    assert {n for n, s in SCOPE_BY_TYPE.items() if s == "crawler"} == {
        "serp_snapshot",
        "autocomplete_node",
        "crawl_started",
        "crawl_completed",
    }


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[TestClient, dict[str, str]]]:
    # no broker at this address: a request the key may send gets as far as the producer (503)
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    keys = KeyFile(settings.resolved_keys_file)
    secrets = {
        "ingest": keys.create("extension", ("ingest",))[1],
        "crawler": keys.create("crawler", ("crawler",))[1],
        "read": keys.create("analyst", ("read", "admin", "metrics"))[1],
        "both": keys.create("lab", ("ingest", "crawler"))[1],
    }
    test_client = TestClient(TestServer(create_app(settings, NoStore("no store here"))))
    await test_client.start_server()
    yield test_client, secrets
    await test_client.close()


def event(kind: str) -> dict[str, Any]:
    return {**EVENTS[kind], "event_id": str(uuid.uuid4())}


@pytest.mark.parametrize("kind", sorted(EVENTS))
@pytest.mark.parametrize("key", ["ingest", "crawler", "both", "read"])
async def test_a_key_posts_only_the_event_types_of_its_scopes(
    client: tuple[TestClient, dict[str, str]], key: str, kind: str
) -> None:
    http, secrets = client
    resp = await http.post(
        "/v1/events", json=[event(kind)], headers={"Authorization": f"Bearer {secrets[key]}"}
    )
    body = await resp.json()
    allowed = key == "both" or key == SCOPE_BY_TYPE[kind]
    if allowed:
        assert resp.status != 403, body
    else:
        assert resp.status == 403, body
        assert body["error"] == "forbidden"
        assert "scope" in body["message"]


async def test_one_crawl_event_among_extension_events_refuses_the_whole_request(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    http, secrets = client
    batch = [event("serp_view"), event("click"), event("autocomplete_node")]
    resp = await http.post("/v1/events", json=batch, headers={"Authorization": f"Bearer {secrets['ingest']}"})
    assert resp.status == 403
    body = await resp.json()
    assert body["error"] == "forbidden" and "crawler" in body["message"]


async def test_a_key_can_read_its_own_scopes_and_nothing_else(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    http, secrets = client
    resp = await http.get("/v1/keys/self", headers={"Authorization": f"Bearer {secrets['crawler']}"})
    assert resp.status == 200
    body = await resp.json()
    assert (
        body["scopes"] == ["crawler"] and body["name"] == "crawler" and set(body) == {"id", "name", "scopes"}
    )
    assert secrets["crawler"] not in json.dumps(body)
    resp = await http.get("/v1/keys/self")
    assert resp.status == 401


async def test_readyz_says_why_without_naming_the_brokers_address(
    client: tuple[TestClient, dict[str, str]],
) -> None:
    http, _ = client
    resp = await http.get("/readyz")  # no key: it must not leak what the producer's error says
    assert resp.status == 503
    body = await resp.json()
    assert body["reason"] == "broker_unavailable"
    assert "127.0.0.1:9" not in json.dumps(body) and "Error" not in json.dumps(body)
