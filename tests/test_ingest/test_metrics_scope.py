"""``/metrics`` names API keys and counts requests per key: it answers a key with the
``metrics`` scope only (it was open to whoever reached the port, and through the deploy's
proxy as ``/%6detrics``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from core.settings import Settings
from core.store.base import NoStore
from ingest.api_keys import SCOPES, KeyFile
from ingest.app import create_app


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[TestClient, dict[str, str]]]:
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    keys = KeyFile(settings.resolved_keys_file)
    secrets = {
        "metrics": keys.create("prometheus", ("metrics",))[1],
        "others": keys.create("lab", tuple(s for s in SCOPES if s != "metrics"))[1],
        "all": keys.create("cli", SCOPES)[1],  # what `auditstream up --api-key` registers
    }
    test_client = TestClient(TestServer(create_app(settings, NoStore("no store here"))))
    await test_client.start_server()
    yield test_client, secrets
    await test_client.close()


async def test_metrics_answer_a_metrics_key_only(client: tuple[TestClient, dict[str, str]]) -> None:
    http, secrets = client
    for path in ("/metrics", "/%6detrics"):  # aiohttp decodes the path: the same route
        anonymous = await http.get(path)
        assert anonymous.status == 401 and (await anonymous.json())["error"] == "unauthorized"
        refused = await http.get(path, headers={"Authorization": f"Bearer {secrets['others']}"})
        assert refused.status == 403 and "metrics" in (await refused.json())["message"]
    for key in ("metrics", "all"):
        resp = await http.get("/metrics", headers={"Authorization": f"Bearer {secrets[key]}"})
        assert resp.status == 200
        assert "auditstream_ingest_requests_total" in await resp.text()
