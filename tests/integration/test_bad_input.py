"""Done-means 5: bad input gets its status and reason; nothing rejected reaches Kafka."""

from __future__ import annotations

import copy
import socket
import uuid
from typing import Any

import orjson
import pytest
from confluent_kafka import Consumer

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from ingest.api_keys import KeyFile
from schemas.topics import all_topics
from supervisor.broker import TansuBroker
from tests.helpers import Service, http

pytestmark = pytest.mark.integration

SECRET_URL = "https://private.example.org/secret-page-xyz"
SECRET_QUERY = "very-private-query-text-abc"


def good_event(seed: int = 1) -> dict[str, Any]:
    event = next(ExtensionTraffic(TrafficConfig(seed=seed)).events())
    event["event_id"] = str(uuid.uuid4())
    return event


def changed(**fields: Any) -> dict[str, Any]:
    event = good_event()
    event.update(fields)
    return event


def without(field: str) -> dict[str, Any]:
    event = good_event()
    del event[field]
    return event


# (name, body bytes or events, expected status, expected error or (reason, field))
CASES: list[tuple[str, Any, int, Any]] = [
    ("malformed json", b'{"type": "click",', 400, "malformed_json"),
    ("not json at all", b"\x00\x01garbage", 400, "malformed_json"),
    ("empty array", b"[]", 400, "empty_batch"),
    ("wrong type", changed(page_index="3"), 422, ("wrong_type", "page_index")),
    ("bool as string", changed(identified="true"), 422, ("wrong_type", "identified")),
    ("unknown field", changed(colour="blue"), 422, ("unknown_field", "colour")),
    ("forbidden query", changed(query=SECRET_QUERY), 422, ("forbidden_field", "query")),
    ("forbidden url", changed(url=SECRET_URL), 422, ("forbidden_field", "url")),
    ("url smuggled in an id", changed(arm=SECRET_URL), 422, ("invalid_value", "arm")),
    ("missing field", without("install_id"), 422, ("missing_field", "install_id")),
    ("unknown event type", changed(type="purchase"), 422, ("unknown_type", "type")),
    ("future schema", changed(schema_version=2), 422, ("unsupported_schema_version", "schema_version")),
    ("not an object", [1], 422, ("not_an_object", None)),
    ("too many events", [good_event()] * 501, 413, "too_many_events"),
    ("oversized body", b'["' + b"x" * (1024 * 1024 + 10) + b'"]', 413, "body_too_large"),
]


def consume_all(bootstrap: str) -> list[dict[str, Any]]:
    """Every message in the event topics, read with an independent client (librdkafka)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(all_topics("auditstream")[:3])
    out: list[dict[str, Any]] = []
    idle = 0
    while idle < 30:
        msg = consumer.poll(0.2)
        if msg is None:
            idle += 1 if out else 0
            continue
        if msg.error():
            continue
        out.extend(orjson.loads(line) for line in msg.value().split(b"\n"))
        idle = 0
    consumer.close()
    return out


def raw_post(
    svc: Service, path: str, body: bytes, headers: bytes, key: bytes | None = None
) -> tuple[int, bytes]:
    """POST as raw bytes (headers no client library would send), answered on a closed connection."""
    host, port = svc.url.removeprefix("http://").split(":")
    secret = svc.api_key.encode() if key is None else key
    request = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n".encode()
        + b"Content-Type: application/json\r\nAuthorization: Bearer " + secret + b"\r\n"
        + headers + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    )  # fmt: skip
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall(request)
        answer = b"".join(iter(lambda: conn.recv(65536), b""))
    head, _, rest = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), rest


@pytest.mark.parametrize(
    "lone_ingest",
    [{"AUDITSTREAM_RATE_LIMIT_RPS": "0.5", "AUDITSTREAM_RATE_LIMIT_BURST": "60"}],
    indirect=True,
)
def test_bad_input_table(lone_ingest: tuple[Service, TansuBroker]) -> None:
    svc, broker = lone_ingest
    for name, body, status, expected in CASES:
        raw = body if isinstance(body, bytes) else None
        resp = svc.post(copy.deepcopy(body), raw=raw)
        assert resp.status == status, (name, resp.status, resp.body)
        if isinstance(expected, str):
            assert resp.body["error"] == expected, name
        else:
            assert resp.body["accepted"] == 0, name
            assert resp.body["rejected"] == [{"index": 0, "reason": expected[0], "field": expected[1]}], name
        assert SECRET_URL not in orjson.dumps(resp.body).decode(), name

    assert svc.post([good_event()], raw=b"{}", content_type="text/plain").status == 415
    assert svc.post([good_event()], key="").status == 401
    assert svc.post([good_event()], key="not-a-key").status == 401
    keys = KeyFile(svc.data_dir / "keys.json")
    revoked, secret = keys.create("to-revoke", ("ingest",))
    assert svc.post([good_event()], key=secret).status == 202
    keys.revoke(revoked.id)
    assert svc.post([good_event()], key=secret).status == 401

    # Bodies and headers that cannot be read as sent: a 4xx with JSON, never a 500.
    body = orjson.dumps([changed(query=SECRET_QUERY)])
    lying = raw_post(svc, "/v1/events", body, b"Content-Encoding: gzip\r\n")  # not gzip at all
    assert lying[0] == 400 and orjson.loads(lying[1])["error"] == "unreadable_body"
    assert SECRET_QUERY.encode() not in lying[1]
    deflate = raw_post(svc, "/v1/events", body, b"Content-Encoding: deflate\r\n")
    assert deflate[0] == 400 and orjson.loads(deflate[1])["error"] == "unreadable_body"
    for route in ("/v1/events", "/v1/sql"):  # a key that is not UTF-8 is no key
        answer = raw_post(svc, route, b"{}", b"", key=b"\xc3\x28-not-utf-8")
        assert answer[0] == 401 and orjson.loads(answer[1])["error"] == "unauthorized"

    mixed = [good_event(7), changed(query=SECRET_QUERY), good_event(8)]
    resp = svc.post(mixed)
    assert resp.status == 202
    assert resp.body == {
        "accepted": 2,
        "rejected": [{"index": 1, "reason": "forbidden_field", "field": "query"}],
    }

    # Over the rate: the bucket (burst 60, 0.5/s) runs dry within a few dozen requests.
    responses = [svc.post([good_event()]) for _ in range(80)]
    limited = [r for r in responses if r.status == 429]
    assert limited and all(int(r.headers["Retry-After"]) >= 1 for r in limited)
    assert {r.status for r in responses} <= {202, 429}

    assert http("GET", svc.url + "/healthz").status == 200
    assert svc.process is not None and svc.process.poll() is None

    accepted_ids = {e["event_id"] for e in mixed if "query" not in e}
    messages = consume_all(broker.bootstrap)
    assert accepted_ids <= {m["event_id"] for m in messages}
    n_good = 1 + 2 + sum(r.status == 202 for r in responses)
    assert len(messages) == n_good  # nothing from any rejected request or event
    blob = orjson.dumps(messages).decode() + (svc.data_dir / "ingest.log").read_text()
    assert SECRET_URL not in blob and SECRET_QUERY not in blob
    _, scraper = KeyFile(svc.data_dir / "keys.json").create("scraper", ("metrics",))
    metrics = http("GET", svc.url + "/metrics", headers={"Authorization": f"Bearer {scraper}"}).body
    forbidden = [
        line
        for line in metrics.splitlines()
        if line.startswith('auditstream_ingest_events_rejected_total{reason="forbidden_field",source=')
    ]
    assert len(forbidden) == 1 and forbidden[0].endswith(" 3.0"), forbidden
