"""The OpenAPI document, built from the real app factory: valid OpenAPI 3.1, every ``/v1``
route in it and nothing else, the event schemas those of ``auditstream schema export``,
the scope each operation names the one its handler checks, served without a key and
built once. ``tests/integration/test_openapi.py`` validates real answers against it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator
from typer.testing import CliRunner

from core.settings import Settings
from ingest import openapi
from ingest.api_keys import SCOPES, KeyFile
from ingest.app import create_app
from tests.openapi_check import assert_valid


def settings_for(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[web.Application]:
    yield create_app(settings_for(tmp_path))


@pytest.fixture
def doc(app: web.Application) -> dict[str, Any]:
    return openapi.document(app)


def test_the_document_is_valid_openapi_3_1(doc: dict[str, Any]) -> None:
    assert doc["openapi"].startswith("3.1.")
    errors = [e.message for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert not errors, errors[:5]
    for schema in doc["components"]["schemas"].values():
        Draft202012Validator.check_schema(schema)
    assert "$defs" not in orjson.dumps(doc).decode(), "every definition belongs in components/schemas"


def test_every_v1_route_is_documented_and_every_operation_is_a_route(
    app: web.Application, doc: dict[str, Any]
) -> None:
    assert openapi.undocumented(app) == (set(), set())
    documented = {(m.upper(), p) for p, item in doc["paths"].items() for m in item}
    assert documented == openapi.v1_routes(app)
    assert ("GET", openapi.PATH) in documented


def test_a_route_added_without_its_entry_is_reported(app: web.Application) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response()

    app.router.add_post("/v1/something-new", handler)
    assert openapi.undocumented(app) == ({("POST", "/v1/something-new")}, set())
    assert "/v1/something-new" not in openapi.document(app)["paths"]


def test_event_schemas_are_the_exported_json_schemas(tmp_path: Path, doc: dict[str, Any]) -> None:
    """``auditstream schema export`` and the document come from the same models: each exported
    schema, with its ``$defs`` moved to components, is the document's."""
    from auditstream.cli import app as cli

    out = tmp_path / "schema"
    result = CliRunner().invoke(cli, ["schema", "export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    components = doc["components"]["schemas"]
    files = sorted(out.glob("*.schema.json"))
    assert len(files) > 1
    for path in files:
        text = path.read_text().replace('"#/$defs/', '"#/components/schemas/')
        exported = json.loads(text)
        for name, schema in exported.pop("$defs", {}).items():
            assert components[name] == schema, (path.name, name)
        name = "Event" if path.name == "event.schema.json" else exported["title"]
        assert components[name] == exported, path.name


def test_keyed_operations_name_their_scope_and_error_answers(doc: dict[str, Any]) -> None:
    problem = {"$ref": "#/components/schemas/Problem"}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            where = f"{method.upper()} {path}"
            answers = op["responses"]
            assert answers["500"]["content"]["application/json"]["schema"] == problem, where
            if path == openapi.PATH:
                assert op["security"] == [], where
                continue
            [requirement] = op["security"]
            assert list(requirement) == ["apiKey"] and requirement["apiKey"][0] in SCOPES, where
            for status in ("401", "403", "429"):
                assert answers[status]["content"]["application/json"]["schema"] == problem, where
            assert "WWW-Authenticate" in answers["401"]["headers"], where
            assert "Retry-After" in answers["429"]["headers"], where
            if "503" in answers:
                assert "Retry-After" in answers["503"]["headers"], where


@pytest.fixture
async def client(app: web.Application) -> AsyncIterator[TestClient]:
    client = TestClient(TestServer(app))
    await client.start_server()
    yield client
    await client.close()


async def test_each_operation_checks_the_scope_it_documents(
    client: TestClient, app: web.Application, doc: dict[str, Any], tmp_path: Path
) -> None:
    """A key with every scope but the documented one gets 403, a key with only that scope
    gets past the check, no key gets 401; each answer is one the document declares."""
    keys = KeyFile(settings_for(tmp_path).resolved_keys_file)
    only = {scope: keys.create(f"only-{scope}", (scope,))[1] for scope in SCOPES}
    all_but = {s: keys.create(f"not-{s}", tuple(o for o in SCOPES if o != s))[1] for s in SCOPES}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if not op["security"]:
                continue
            scope = op["security"][0]["apiKey"][0]
            url = path.format(experiment_id="nope", study_id="nope")
            for key, refused in ((None, 401), (all_but[scope], 403), (only[scope], None)):
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                resp = await client.request(method.upper(), url, headers=headers)
                body = await resp.json()
                assert_valid(doc, method, path, resp.status, body)
                if refused is not None:
                    assert resp.status == refused, (method, path, resp.status, body)
                else:
                    assert resp.status not in (401, 403), (method, path, resp.status, body)


async def test_served_without_a_key_and_built_once(
    client: TestClient, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    build = openapi.document

    def counting(app: web.Application) -> dict[str, Any]:
        calls.append(1)
        return build(app)

    monkeypatch.setattr(openapi, "document", counting)
    first = await client.get(openapi.PATH)
    assert first.status == 200 and first.content_type == "application/json"
    second = await client.get(openapi.PATH)
    assert await first.read() == await second.read()
    assert await first.json() == build(app)
    assert len(calls) == 1
