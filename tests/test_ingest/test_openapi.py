"""The OpenAPI document, built from the real app factory: valid OpenAPI 3.1, every ``/v1``
route in it and nothing else, the event schemas those of ``auditstream schema export``,
the scope each operation names the one its handler checks, served without a key and
built once. ``tests/integration/test_openapi.py`` validates real answers against it."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from jsonschema import Draft202012Validator
from openapi_schema_validator import OAS31Validator
from openapi_spec_validator import OpenAPIV31SpecValidator
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from analytics.stats.arrangement_subsets import subset_names
from core.settings import Settings
from ingest import openapi
from ingest.api_keys import SCOPES, KeyFile
from ingest.app import create_app
from schemas.event_types import AnyEvent
from schemas.events import DAY_PATTERN, TIMESTAMP_PATTERN, Day, Timestamp
from schemas.experiments import ExperimentConfig
from studies.arrangement.selection import MAX_WINDOW_S, parse_moment, parse_window
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
    assert documented == openapi.api_routes(app)
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


def _codes(answer: dict[str, Any]) -> list[str]:
    """The error codes an error answer of the document lists."""
    schema = answer["content"]["application/json"]["schema"]
    if "$ref" in schema:  # a model of its own: its error field is a constant
        return [schema["$ref"]]
    assert schema["allOf"] == [{"$ref": "#/components/schemas/Problem"}], schema
    codes: list[str] = schema["properties"]["error"]["enum"]
    return codes


def test_keyed_operations_name_their_scope_and_error_answers(doc: dict[str, Any]) -> None:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            where = f"{method.upper()} {path}"
            answers = op["responses"]
            assert _codes(answers["500"]) == ["internal_error"], where
            if path == openapi.PATH:
                assert op["security"] == [], where
                continue
            assert op["security"], where
            for requirement in op["security"]:  # alternatives: a key needs one of them
                assert list(requirement) == ["apiKey"] and requirement["apiKey"][0] in SCOPES, where
            assert _codes(answers["401"]) == ["unauthorized"], where
            assert _codes(answers["403"])[0] == "forbidden", where  # erase-own adds not_owner
            assert _codes(answers["429"])[0] == "rate_limited", where
            assert "WWW-Authenticate" in answers["401"]["headers"], where
            assert answers["429"]["headers"]["Retry-After"]["required"], where
            if "503" in answers:
                assert "Retry-After" in answers["503"]["headers"], where


def test_each_error_answer_lists_its_codes_and_says_them(doc: dict[str, Any]) -> None:
    """An error status lists the codes its route answers it with, each known and described;
    Retry-After is required where every code of a 503 is an outage to wait out."""
    for path, item in doc["paths"].items():
        for method, op in item.items():
            for status, answer in op["responses"].items():
                if int(status) < 400 or "$ref" in answer["content"]["application/json"]["schema"]:
                    continue
                codes = _codes(answer)
                assert codes and set(codes) <= set(openapi.CODES), (method, path, status)
                for code in codes:
                    assert f"`{code}`" in answer["description"], (method, path, status, code)
                if status == "503":
                    required = answer["headers"]["Retry-After"]["required"]
                    assert required == openapi.RETRIED.issuperset(codes), (method, path)


def _listed(doc: dict[str, Any], method: str, path: str, status: int) -> list[str]:
    return _codes(doc["paths"][path][method.lower()]["responses"][str(status)])


def test_the_rules_issue_33_found_missing_are_in_the_document(doc: dict[str, Any]) -> None:
    """Each was enforced but absent: the 413 for too many events, the control arm, the
    timeline's window, the events' year range, the recompute's midnights."""
    assert "too_many_events" in _listed(doc, "POST", "/v1/events", 413)
    assert "empty_batch" in _listed(doc, "POST", "/v1/events", 400)
    schemas = doc["components"]["schemas"]
    arms = schemas["ExperimentConfig"]["properties"]["arms"]
    assert arms["required"] == ["control"] and arms["additionalProperties"] is False
    engine_arms = schemas["ExperimentConfig"]["properties"]["engine_arms"]["patternProperties"]
    assert all(v["contains"] == {"const": "control"} for v in engine_arms.values())
    window = schemas["TimelineRequest"]["properties"]["window"]
    assert window["pattern"] == openapi.WINDOW["pattern"]
    assert schemas["SerpView"]["properties"]["sent_at"]["pattern"] == TIMESTAMP_PATTERN
    assert schemas["SerpView"]["properties"]["install_day"]["pattern"] == DAY_PATTERN
    assert schemas["_SpanIn"]["properties"]["day_start"]["multipleOf"] == 86400
    assert schemas["TimelineRequest"]["properties"]["subset"]["enum"] == subset_names()
    assert "invalid_experiment" in _listed(doc, "POST", "/v1/experiments", 422)
    assert "not_read_only" in _listed(doc, "POST", "/v1/sql", 400)


PROBLEM_CALL = re.compile(r"\bproblem\(\s*(\d{3})\s*,\s*\"(\w+)\"")
NOT_V1 = {(404, "not_found")}  # /board/static/{name}: not a /v1 route (and a /v1 code too)


def test_every_code_a_handler_raises_is_in_the_document(doc: dict[str, Any]) -> None:
    """A ``problem(status, "code", ...)`` anywhere under ``ingest/`` that no operation lists
    is an answer the document does not know: the drift issue 33 found."""
    root = Path(openapi.__file__).parent
    raised = {
        (int(status), code)
        for source in root.rglob("*.py")
        for status, code in PROBLEM_CALL.findall(source.read_text())
    }
    listed = {
        (int(status), code)
        for item in doc["paths"].values()
        for op in item.values()
        for status, answer in op["responses"].items()
        if int(status) >= 400 and "$ref" not in answer["content"]["application/json"]["schema"]
        for code in _codes(answer)
    }
    assert raised - NOT_V1 - listed == set()


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
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if not op["security"]:
                continue
            scopes = [r["apiKey"][0] for r in op["security"]]
            others = tuple(s for s in SCOPES if s not in scopes)
            lacking = keys.create(f"not-{len(scopes)}-{scopes[0]}", others)[1] if others else None
            url = path.format(
                experiment_id="nope",
                study_id="nope",
                recompute_id="nope",
                paper="powermeter",
                figure="nope",
                kind="personalization",
                table="nope",
            )
            tries = [(None, 401), *((only[s], None) for s in scopes), *([(lacking, 403)] if lacking else [])]
            for key, refused in tries:
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                resp = await client.request(method.upper(), url, headers=headers)
                body = await resp.json() if resp.content_type == "application/json" else await resp.text()
                assert_valid(doc, method, path, resp.status, body, resp.content_type)
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


# --------------------------------------------------------------------------- patterns = validators


def _search(pattern: str) -> Any:
    """``pattern`` as JSON Schema reads it (ECMA-262: ``$`` is the end, not before a last newline)."""
    return re.compile(pattern.replace("$", r"\Z")).search


def _accepts(parse: Any, text: str) -> bool:
    try:
        parse(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("low, high", [(0, 0), (0, 9), (1, 9), (1, 366), (7, 123), (1970, 2105), (10, 20000)])
def test_between_is_exactly_the_numbers_from_low_to_high(low: int, high: int) -> None:
    match = re.compile(f"^(?:{openapi.between(low, high)})\\Z").match
    for n in range(high + 1000):
        assert bool(match(str(n))) == (low <= n <= high), n
    assert not match("0" + str(max(low, 1))) and not match(f"+{low}") and not match("")


def test_the_window_pattern_takes_what_parse_window_takes() -> None:
    search = _search(openapi.WINDOW["pattern"])
    top = {unit: MAX_WINDOW_S // seconds for unit, seconds in openapi.UNIT_SECONDS.items()}
    texts = [
        f"{n}{unit}"
        for unit in (*openapi.UNIT_SECONDS, "x", "S")
        for n in (*range(0, 1000), *range(top.get(unit, 99) - 30, top.get(unit, 99) + 30))
    ]
    texts += ["1h ", " 1h", "\t1d\n", "\u30001m\u2028", "\x1c1h", "\u200b1h", "1 h", "01h", "+1h", "1H", ""]
    texts += ["h", "1.5h", "\uff11h", "1h1m", "1e3s", "-10s", "10s\n\n"]
    for text in texts:
        assert bool(search(text)) == _accepts(parse_window, text), repr(text)


def test_the_moment_pattern_takes_what_parse_moment_takes() -> None:
    search = _search(openapi.MOMENT["pattern"])
    years = (1969, 1970, 1971, 1972, 1999, 2000, 2023, 2024, 2100, 2104, 2105, 2106)
    days = [f"{y}-{m:02}-{d:02}" for y in years for m in range(0, 14) for d in range(0, 33)]
    for day in days:
        for text in (day, f"{day}T00:00", f"{day}T23:59:59", f"{day}T24:00", f"{day}T12:60"):
            assert bool(search(text)) == _accepts(parse_moment, text), text
    for text in ("2024-01-01T10:00:00+05:00", "2024-01-01 10:00", "20240101", "2024-01-01T10"):
        assert not search(text)  # the service takes more forms than the document names


def _format_and_pattern(schema: dict[str, Any]) -> Any:
    return OAS31Validator(schema, format_checker=OAS31Validator.FORMAT_CHECKER).is_valid


def _model_accepts(adapter: TypeAdapter[Any], text: str) -> bool:
    try:
        adapter.validate_python(text)
    except ValidationError:
        return False
    return True


def test_the_day_schema_takes_what_a_day_field_takes(doc: dict[str, Any]) -> None:
    schema = doc["components"]["schemas"]["SerpView"]["properties"]["install_day"]
    valid, adapter = _format_and_pattern(schema), TypeAdapter(Day)
    years = (1969, 1970, 2000, 2100, 2148, 2149, 2150)
    for text in [f"{y}-{m:02}-{d:02}" for y in years for m in range(0, 14) for d in range(0, 33)]:
        assert valid(text) == _model_accepts(adapter, text), text


def test_the_timestamp_schema_takes_no_more_than_a_timestamp_field(doc: dict[str, Any]) -> None:
    """Equal a day away from the range's ends; within it, the schema takes only the moments
    inside at any offset (``TIMESTAMP_PATTERN``), and it names RFC 3339's form, not the
    space pydantic also reads: never more than the service."""
    schema = doc["components"]["schemas"]["SerpView"]["properties"]["sent_at"]
    valid, adapter = _format_and_pattern(schema), TypeAdapter(Timestamp)
    days = [
        f"{y}-{md}" for y in (1899, 1900, 1901, 2000, 2298, 2299, 2300) for md in ("01-01", "02-29", "12-31")
    ]
    clocks = ("00:00:00", "00:30:00", "23:30:00", "23:59:59", "24:00:00", "12:00:60")
    fractions = ("", ".5", ".999", ".9991", ".123456789")
    offsets = ("Z", "z", "+00:00", "-00:00", "+01:00", "-01:00", "+23:59", "-23:59", "+24:00", "")
    for day, t, clock, fraction, offset in itertools.product(days, "Tt ", clocks, fractions, offsets):
        text = f"{day}{t}{clock}{fraction}{offset}"
        schema_ok, model_ok = valid(text), _model_accepts(adapter, text)
        assert model_ok or not schema_ok, text
        if t != " " and day not in ("1899-12-31", "1900-01-01", "2299-12-31", "2300-01-01"):
            assert schema_ok == model_ok, text


RULES: list[tuple[str, dict[str, Any], bool]] = [
    ("Click", {"element_type": "organic"}, False),
    ("Click", {"element_type": "organic", "original_rank": None}, False),
    ("Click", {"element_type": "organic", "original_rank": 3}, True),
    ("Click", {"element_type": "ad"}, True),
    ("InstallProfile", {"consent": "declined"}, True),
    ("InstallProfile", {"consent": "declined", "age_band": "25-34"}, False),
    ("InstallProfile", {"consent": "declined", "search_languages": ["en"]}, False),
    ("InstallProfile", {"consent": "given", "age_band": "25-34", "search_languages": ["en", "de"]}, True),
    ("InstallProfile", {"consent": "given", "search_languages": ["en", "en"]}, False),
    ("ExperimentConfig", {}, True),
    ("ExperimentConfig", {"arms": {"a": 1, "b": 1}}, False),
    ("ExperimentConfig", {"arms": {"control": 1, "b": 1, "not an id": 1}}, False),
    ("ExperimentConfig", {"engine_arms": {"bing": ["control", "b"]}}, True),
    ("ExperimentConfig", {"engine_arms": {"bing": ["b", "c"]}}, False),
    ("ExperimentConfig", {"engine_arms": {"bing": ["control", "b", "b"]}}, False),
    ("ExperimentConfig", {"start": "1969-12-31"}, False),
]
"""Rules of model validators, stated in the schemas (if/then, required, uniqueItems, contains)."""


def _example(model: str, changes: dict[str, Any]) -> dict[str, Any]:
    context = {
        "schema_version": 1,
        "event_id": "e3e70682-c209-4cac-a29f-6fbed82c07cd",
        "sent_at": "2026-01-01T10:00:00Z",
        "install_id": "install-0001",
        "install_day": "2026-01-01",
        "extension_version": "1.0",
        "experiment_id": "exp-1",
    }
    base: dict[str, dict[str, Any]] = {
        "Click": {
            **context,
            "type": "click",
            "arm": "control",
            "engine": "google",
            "page_index": 0,
            "n_organic": 10,
            "ads_top_count": 0,
            "box": "none",
            "ssr_positions": [],
            "identified": True,
            "ui_lang": "en",
            "element_type": "ad",
        },
        "InstallProfile": {**context, "type": "install_profile", "consent": "given"},
        "ExperimentConfig": {
            "experiment_id": "exp-1",
            "engines": ["google", "bing"],
            "arms": {"control": 1, "b": 1},
            "salt": "salt-salt",
            "start": "2026-01-01",
        },
    }
    return {**base[model], **changes}


@pytest.mark.parametrize("model, changes, ok", RULES)
def test_model_rules_are_in_the_schemas(
    doc: dict[str, Any], model: str, changes: dict[str, Any], ok: bool
) -> None:
    payload = _example(model, changes)
    schema = {"$ref": f"#/components/schemas/{model}", "components": doc["components"]}
    assert OAS31Validator(schema, format_checker=OAS31Validator.FORMAT_CHECKER).is_valid(payload) == ok
    adapter: TypeAdapter[Any] = TypeAdapter(ExperimentConfig if model == "ExperimentConfig" else AnyEvent)
    assert _model_accepts(adapter, payload) == ok  # type: ignore[arg-type]
