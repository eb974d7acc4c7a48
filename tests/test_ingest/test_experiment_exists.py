"""Creating an experiment whose id is taken (issue 40): `experiment stop` then `create` of
the same id was a 409 saying "stop it or pick a new id"; it says what to do instead."""

from __future__ import annotations

from pathlib import Path

import orjson
from aiohttp.test_utils import TestClient, TestServer

from core.settings import Settings
from core.store.base import QueryLimits, QueryResult, Store
from ingest.api_keys import KeyFile
from ingest.app import create_app
from ingest.experiments import exists_message
from schemas.experiments import ExperimentConfig

BODY = {
    "experiment_id": "powermeter-2026",
    "engines": ["google"],
    "arms": {"control": 1.0, "swap_1_2": 1.0},
    "salt": "salt-0123456789",
    "start": "2026-11-01",
}


def config(**changes: object) -> ExperimentConfig:
    return ExperimentConfig.model_validate({**BODY, **changes})


def test_a_stopped_experiment_s_id_is_taken_for_good_and_the_message_names_a_new_one() -> None:
    message = exists_message(config(status="stopped", end="2026-11-20"))
    assert "powermeter-2026 exists (stopped, end 2026-11-20)" in message
    assert "never reused" in message and "register under a new id (e.g. powermeter-2026-2)" in message
    assert "stop it" not in message


def test_a_running_experiment_s_message_says_stopping_does_not_free_the_id() -> None:
    message = exists_message(config())
    assert "exists and is running" in message and "(e.g. powermeter-2026-2)" in message
    assert "`auditstream experiment stop powermeter-2026` ends it, its id stays taken" in message
    assert "another id" in exists_message(config(experiment_id="x" * 64))  # no room for "-2"


class RegistryStore(Store):
    """Holds one stopped experiment; every other read has no rows."""

    async def execute(self, sql: str, *, background: bool = False) -> None:
        raise AssertionError("nothing is written for a refused create")

    async def query(
        self, sql: str, *, read_only: bool = False, limits: QueryLimits | None = None
    ) -> QueryResult:
        if sql.startswith("SELECT config FROM experiments WHERE experiment_id = 'powermeter-2026'"):
            stopped = config(status="stopped", end="2026-11-20").model_dump_json()
            return QueryResult(columns=["config"], types=["String"], rows=[[stopped]])
        return QueryResult()

    async def insert_json_rows(self, table: str, lines: bytes, *, background: bool = False) -> None:
        raise AssertionError("nothing is written for a refused create")


async def test_create_of_a_stopped_id_answers_409_with_what_to_do(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    _, admin = KeyFile(settings.resolved_keys_file).create("admin", ("admin",))
    client = TestClient(TestServer(create_app(settings, RegistryStore())))
    await client.start_server()
    try:
        resp = await client.post(
            "/v1/experiments",
            data=orjson.dumps(BODY),
            headers={"Authorization": f"Bearer {admin}", "Content-Type": "application/json"},
        )
        answer = await resp.json()
    finally:
        await client.close()
    assert resp.status == 409 and answer["error"] == "exists"
    assert answer["message"] == exists_message(config(status="stopped", end="2026-11-20"))
