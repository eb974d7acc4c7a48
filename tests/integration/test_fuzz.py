"""Fuzzing every route of a running service (issue 11, Done-means 1).

Hypothesis draws batches of requests: every route and some that do not exist, every
method, keys that are missing, unknown or absurdly long, content types, bodies that are
not JSON, JSON of any shape, and events of every type with fields removed, added or
replaced by any JSON value (dates and timestamps in every near-miss form among them).
Each batch is sent concurrently. Over at least 10,000 requests:

- no answer is a 500 or above, and no connection is dropped;
- every error answer is JSON with an ``error`` code;
- every event answered as accepted is stored in its raw table exactly once, and none of
  them is a dead letter.

The service is its own (not the session's): fuzzed events must not reach other tests'
experiments, studies or detectors.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from schemas.event_types import FAMILY_BY_TYPE
from tests.helpers import Service, own_service, wait_for

pytestmark = pytest.mark.integration

BATCH, EXAMPLES = 25, int(os.environ.get("FUZZ_EXAMPLES", "420"))  # 10,500 requests
KEY = "fuzz-key-0123456789abcdef-padded-to-35-chars"
ROUTES = [
    ("POST", "/v1/events"),
    ("POST", "/v1/sql"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/metrics"),
    ("POST", "/v1/experiments"),
    ("GET", "/v1/experiments"),
    ("GET", "/v1/experiments/fuzz-exp"),
    ("GET", "/v1/experiments/fuzz-exp/config"),
    ("POST", "/v1/experiments/fuzz-exp/stop"),
    ("PUT", "/v1/experiments/fuzz-exp/planted"),
    ("GET", "/v1/experiments/fuzz-exp/planted"),
    ("PUT", "/v1/experiments/fuzz-exp/plan"),
    ("GET", "/v1/experiments/fuzz-exp/plan"),
    ("POST", "/v1/experiments/fuzz-exp/plan/amendments"),
    ("POST", "/v1/experiments/fuzz-exp/plan/freeze-quintiles"),
    ("GET", "/v1/experiments/fuzz-exp/plan/deviations"),
    ("POST", "/v1/experiments/fuzz-exp/pilot-world"),
    ("GET", "/"),
    ("GET", "/board"),
    ("GET", "/board/static/board.js"),
    ("GET", "/v1/board/index"),
    ("GET", "/v1/board/experiments/fuzz-exp"),
    ("GET", "/v1/board/autocomplete"),
    ("GET", "/v1/board/personalization/fuzz-study"),
    ("GET", "/v1/board/alerts"),
    ("GET", "/v1/board/figures/powermeter/figure8"),
    ("POST", "/v1/import"),
    ("POST", "/v1/import/recompute"),
    ("GET", "/v1/import/recompute/rc_0123456789abcdef0123"),
    ("GET", "/v1/export/personalization"),
    ("GET", "/v1/export/personalization/personalization_rounds"),
    ("GET", "/v1/keys/self"),
    ("POST", "/v1/participants/erase"),
    ("POST", "/v1/participants/erase-own"),
    ("POST", "/v1/reports/experiment"),
    ("POST", "/v1/reports/timeline"),
    ("GET", "/v1/openapi.json"),
]
OTHER_PATHS = ["/x", "/v1/event", "/v1/events/", "/v1/sql/x", "/v2/events", "/board/static/../../etc/passwd",
               "/v1/experiments/%00", "/v1/experiments/" + "x" * 300, "/v1/board/experiments/"]  # fmt: skip


def test_the_fuzzed_routes_are_every_documented_route() -> None:
    """A route added to the service (and so to its OpenAPI document) is fuzzed too."""
    from ingest.openapi import OPERATIONS

    def concrete(path: str) -> str:
        concrete = path.replace("{experiment_id}", "fuzz-exp").replace("{study_id}", "fuzz-study")
        concrete = concrete.replace("{paper}", "powermeter").replace("{figure}", "figure8")
        concrete = concrete.replace("{kind}", "personalization").replace("{table}", "personalization_rounds")
        return concrete.replace("{recompute_id}", "rc_0123456789abcdef0123")

    assert {(op.method, concrete(op.path)) for op in OPERATIONS} <= set(ROUTES)


METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]
TIMES = ["2026-11-01T00:00:00Z", "2026-11-01", "2026-11-01T00:00:00", "1969-12-31T23:59:59Z",
         "2300-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "", "now", "0",
         "2026-13-01T00:00:00Z", "2026-11-01T00:00:00+14:00", "2026-11-01 00:00:00Z"]  # fmt: skip
DAYS = ["2026-11-01", "2026-11-01T00:00:00Z", "1969-12-31", "1970-01-01", "2149-06-06", "2149-06-07",
        "2300-01-01", "20261101", "2026-02-30", "", "2026-1-1"]  # fmt: skip

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(TIMES + DAYS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def base_events() -> list[dict[str, Any]]:
    """One valid event of every type (fresh ids are given per request)."""
    view, click = None, None
    for event in ExtensionTraffic(TrafficConfig(experiment_id="fuzz-exp", seed=3, installs=20)).events():
        if event["type"] == "serp_view" and view is None:
            view = event
        if event["type"] == "click" and click is None:
            click = event
        if view and click:
            break
    common = {"schema_version": 1, "sent_at": "2026-11-23T10:00:00.000Z", "engine": "google"}
    crawl = {**common, "crawl_id": "fuzz-c1", "root": "fuzz root"}
    snapshot = {
        **common,
        "type": "serp_snapshot",
        "study_id": "fuzz-study",
        "round_id": "fuzz-r0001",
        "profile_id": "p1",
        "role": "control",
        "treatment": "",
        "query": "coffee",
        "results": [{"rank": 1, "type": "organic", "url": "https://example.org/"}],
        "status": "ok",
    }
    node = {
        **crawl,
        "type": "autocomplete_node",
        "query": "fuzz root",
        "depth": 0,
        "suggestions": [{"rank": 1, "text": "fuzz root a"}],
        "status": "ok",
    }
    started = {**crawl, "type": "crawl_started", "study_id": "fuzz-study", "max_depth": 1}
    profile = {
        "schema_version": 1,
        "sent_at": "2026-11-23T10:00:00.000Z",
        "type": "install_profile",
        "install_id": "fuzz-install-1",
        "install_day": "2026-11-20",
        "extension_version": "0.1.0",
        "experiment_id": "fuzz-exp",
        "consent": "given",
        "age_band": "25-34",
        "search_languages": ["en", "de"],
        "country": "DE",
        "search_frequency": "daily",
    }
    assert view is not None and click is not None
    return [view, click, snapshot, node, started, profile]


BASES = base_events()


@st.composite
def events(draw: st.DrawFn) -> Any:
    event = dict(draw(st.sampled_from(BASES)))
    event["event_id"] = str(uuid.uuid4())
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from([*event, "extra", "query", "url", "title"]))
        action = draw(st.sampled_from(["set", "delete", "time", "day", "big"]))
        if action == "delete":
            event.pop(field, None)
        elif action == "time":
            event["sent_at"] = draw(st.sampled_from(TIMES))
        elif action == "day":
            event["install_day"] = draw(st.sampled_from(DAYS))
        elif action == "big":
            event[field] = draw(st.sampled_from([2**31, 2**32, 2**63, 2**64, -1, 10**30, 101, 255, 256]))
        else:
            event[field] = draw(json_values)
    return event


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], bytes]:
    if draw(st.integers(0, 9)) == 0:
        method, path = draw(st.sampled_from(METHODS)), draw(st.sampled_from(OTHER_PATHS))
    else:
        method, path = draw(st.sampled_from(ROUTES))
        if draw(st.integers(0, 9)) == 0:
            method = draw(st.sampled_from(METHODS))
    headers = {}
    auth = draw(st.sampled_from(["good", "good", "good", "none", "unknown", "long", "basic"]))
    if auth != "none":
        secret = {"good": KEY, "unknown": "nope-" + "x" * 20, "long": KEY * 80, "basic": KEY}[auth]
        headers["Authorization"] = ("Basic " if auth == "basic" else "Bearer ") + secret
    headers["Content-Type"] = draw(
        st.sampled_from(
            ["application/json"] * 6
            + ["text/plain", "application/x-www-form-urlencoded", "", "application/x-ndjson"]
        )
    )
    kind = draw(st.sampled_from(["events", "events", "events", "sql", "json", "bytes", "truncated", "empty"]))
    if kind == "events":
        body = dumps(
            draw(st.lists(events(), min_size=0, max_size=6)) if draw(st.booleans()) else draw(events())
        )
    elif kind == "sql":
        statements = st.sampled_from(
            ["SELECT 1", "SELECT * FROM file('/etc/passwd')", "SELECT 1 FORMAT TSV", ""]
        )
        body = dumps({"sql": draw(statements | json_values)})
    elif kind == "json":
        body = dumps(draw(json_values))
    elif kind == "bytes":
        body = draw(st.binary(max_size=200))
    elif kind == "truncated":
        full = dumps([draw(events())])
        body = full[: draw(st.integers(0, len(full) - 1))]
    else:
        body = b""
    return method, path, headers, body


@pytest.fixture(scope="module")
def fuzz_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with own_service(tmp_path_factory.mktemp("fuzz") / "data", KEY) as svc:
        yield svc


class Tally:
    def __init__(self) -> None:
        self.requests = 0
        self.statuses: dict[int, int] = {}
        self.accepted: dict[str, str] = {}  # event id -> type
        self.failures: list[str] = []


def dumps(value: Any) -> bytes:
    """JSON of any drawn value (integers beyond 64 bits included, which orjson refuses)."""
    return json.dumps(value).encode()


async def send_all(url: str, batch: list[tuple[str, str, dict[str, str], bytes]], tally: Tally) -> list[str]:
    """Send a batch concurrently; what went wrong with it (also kept in ``tally``)."""
    failures: list[str] = []
    async with aiohttp.ClientSession() as session:

        async def one(method: str, path: str, headers: dict[str, str], body: bytes) -> None:
            try:
                async with session.request(method, url + path, data=body, headers=headers) as resp:
                    raw = await resp.read()
                    status = resp.status
            except aiohttp.ClientError as exc:  # a dropped connection
                failures.append(f"{method} {path}: {exc!r}")
                return
            tally.requests += 1
            tally.statuses[status] = tally.statuses.get(status, 0) + 1
            if status >= 500:
                failures.append(f"{method} {path} -> {status}: {raw[:200]!r}")
            if status >= 400 and method != "HEAD":
                try:
                    assert "error" in orjson.loads(raw)
                except Exception:
                    failures.append(f"{method} {path} -> {status} without JSON: {raw[:100]!r}")
            if path == "/v1/events" and method == "POST" and status == 202:
                doc = orjson.loads(body)
                items = doc if isinstance(doc, list) else [doc]
                rejected = {r["index"] for r in orjson.loads(raw)["rejected"]}
                for i, item in enumerate(items):
                    if i not in rejected:
                        tally.accepted[str(uuid.UUID(item["event_id"]))] = item["type"]
            if path == "/v1/import" and method == "POST" and status == 200:
                answer = orjson.loads(raw)
                assert answer["rejected_by_reason"] or not answer["rejected"]
                refused = {r["line"] for r in answer["rejected"]}
                for number, line in enumerate(body.split(b"\n"), start=1):
                    if line.strip() and number not in refused:
                        item = orjson.loads(line)
                        tally.accepted[str(uuid.UUID(item["event_id"]))] = item["type"]

        await asyncio.gather(*(one(*r) for r in batch))
    tally.failures.extend(failures)
    return failures


@pytest.mark.timeout(600)  # ~80 CPU-s (10,500 requests): beside two CPU burners past 300 s
def test_ten_thousand_malformed_requests_get_4xx_and_every_accepted_event_is_stored(
    fuzz_service: Service,
) -> None:
    tally = Tally()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(requests(), min_size=BATCH, max_size=BATCH))
    def batch_of_requests(batch: list[tuple[str, str, dict[str, str], bytes]]) -> None:
        failures = asyncio.run(send_all(fuzz_service.url, batch, tally))
        assert not failures, failures[:5]

    batch_of_requests()
    assert tally.requests >= 10_000, tally.requests
    assert all(status < 500 for status in tally.statuses)
    assert tally.accepted, "some events were valid and accepted"

    by_table: dict[str, set[str]] = {}
    for event_id, kind in tally.accepted.items():
        by_table.setdefault(FAMILY_BY_TYPE[kind].raw_table, set()).add(event_id)

    def stored(table: str) -> dict[str, int]:
        rows = fuzz_service.sql(f"SELECT toString(event_id) AS id, count() AS n FROM {table} GROUP BY id")
        return {r["id"]: r["n"] for r in rows}

    for table, ids in by_table.items():

        def all_there(table: str = table, ids: set[str] = ids) -> dict[str, int] | None:
            counts = stored(table)
            return counts if ids <= set(counts) else None

        found = wait_for(all_there, 120, f"every accepted event in {table}")
        assert all(found[i] == 1 for i in ids), table  # exactly once (before merges: no copies at all)
    dead = fuzz_service.sql("SELECT payload FROM dead_letters")
    assert not [d for d in dead if any(i in d["payload"] for i in tally.accepted)]
    statuses = dict(sorted(tally.statuses.items()))
    print(f"{tally.requests} requests: {statuses}; {len(tally.accepted)} events accepted")
