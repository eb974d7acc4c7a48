"""A volunteer's install erased through ``auditstream up`` (issue 35, Done-means 2).

Three installs post events and their onboarding answers; the operator erases one with
``auditstream participants erase``. No row of it is left in any table that has an
``install_id`` (raw or derived), every derived table equals a recount of the remaining raw
rows, the receipt's counts are what was stored, and its events are never stored again:
re-sent with the same ids or new ones (refused: ``install_erased``), or already in the
broker when the erasure ran (the worker drops them).
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from collectors.simulate.poster import post_batches
from schemas.erased_installs import install_hash
from schemas.migrate import load_migrations
from tests.helpers import Service, wait_for
from tests.integration.test_end_to_end import (
    assert_aggregate_exact,
    assert_hourly_replicates_exact,
    assert_install_stats_exact,
    assert_study_install_rows_exact,
)

pytestmark = pytest.mark.integration


def profile(exp: str, install_id: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "event_id": str(uuid.uuid4()),
        "sent_at": datetime.now(UTC).isoformat(),
        "type": "install_profile",
        "install_id": install_id,
        "install_day": datetime.now(UTC).date().isoformat(),
        "extension_version": "1.0.0",
        "experiment_id": exp,
        "consent": "given",
        "country": "CH",
    }


def tables_with_install_id() -> list[str]:
    """Every table the migrations create with an install_id column, read from their text
    (not from the erasure's own list)."""
    create = re.compile(
        r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s*\((.*?)\)\s*ENGINE", re.I | re.S
    )
    drop = re.compile(r"^\s*DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)", re.I)
    tables = set()
    for migration in load_migrations():
        for statement in migration.statements:
            match = create.match(statement)
            if match and re.search(r"^\s*install_id\s", match[2], re.M):
                tables.add(match[1])
            elif dropped := drop.match(statement):
                tables.discard(dropped[1])
    assert {"raw_extension_events", "agg_arrangement_install_closed"} <= tables
    return sorted(tables)


def rows_of(svc: Service, install_id: str) -> dict[str, int]:
    out = {
        t: int(svc.scalar(f"SELECT count() FROM {t} WHERE install_id = '{install_id}'"))
        for t in tables_with_install_id()
    }
    out["dead_letters"] = int(
        svc.scalar(f"SELECT count() FROM dead_letters WHERE position(payload, '{install_id}') > 0")
    )
    return out


async def send_to_broker(svc: Service, lines: list[dict[str, Any]]) -> None:
    """One message of JSON lines on the extension topic, as ingest writes one (what was in the
    broker when the erasure ran)."""
    bootstrap = (svc.data_dir / "run" / "broker.addr").read_text().strip()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        value = b"\n".join(orjson.dumps(e) for e in lines)
        await producer.send_and_wait("auditstream.extension", value, key=lines[0]["install_id"].encode())
    finally:
        await producer.stop()


@pytest.mark.timeout(600)
def test_an_erased_install_leaves_no_row_and_is_never_stored_again(service: Service) -> None:
    exp = f"erase-{uuid.uuid4().hex[:8]}"
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=exp, seed=35, installs=3))
    batches = list(traffic.batches(100, 3000))
    events = [e for batch in batches for e in batch]
    installs = sorted({e["install_id"] for e in events})
    assert len(installs) == 3
    stats = asyncio.run(post_batches(service.url, service.api_key, iter(batches), keep_ids=True))
    assert stats.accepted == 3000
    assert all(service.post([profile(exp, i)]).status == 202 for i in installs)
    where = f"experiment_id = '{exp}'"
    wait_for(
        lambda: service.scalar(f"SELECT count() FROM raw_extension_events WHERE {where}") == 3000,
        120,
        "stored",
    )
    assert_aggregate_exact(service, exp)
    assert_install_stats_exact(service, exp)

    gone, kept = installs[0], installs[1:]
    before = rows_of(service, gone)
    assert before["raw_extension_events"] == sum(e["install_id"] == gone for e in events)
    assert before["raw_install_profiles"] == 1
    out = subprocess.run(
        [sys.executable, "-m", "auditstream", "participants", "erase", gone, "--url", service.url, "--json"],
        env={"AUDITSTREAM_API_KEY": service.api_key, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
        timeout=300,
    )
    (receipt,) = orjson.loads(out.stdout)
    assert receipt["install_hash"] == install_hash(gone)
    assert gone not in out.stdout.decode()  # the receipt names the install by its hash only
    removed = receipt["rows_removed"]
    for table in (
        "raw_extension_events",
        "raw_install_profiles",
        "agg_arrangement_10s",
        "agg_arrangement_install",
    ):
        assert removed[table] == before[table], (table, removed, before)

    # no row of it anywhere; the others' rows untouched and every derived table a recount
    assert rows_of(service, gone) == {t: 0 for t in rows_of(service, gone)}
    for install in kept:
        assert rows_of(service, install)["raw_extension_events"] == sum(
            e["install_id"] == install for e in events
        )
    assert_aggregate_exact(service, exp)
    assert_install_stats_exact(service, exp)
    assert_study_install_rows_exact(service, exp)
    assert_hourly_replicates_exact(service, exp)

    # sent again: its earlier events (same ids) and new ones are refused, never stored
    earlier = [e for e in events if e["install_id"] == gone][:50]
    new = [{**e, "event_id": str(uuid.uuid4())} for e in earlier]
    for batch in (earlier, new):
        answer = service.post(batch)
        assert answer.status == 422, answer.body
        assert {r["reason"] for r in answer.body["rejected"]} == {"install_erased"}
    # in the broker already (accepted before the erasure): dropped by the worker; a kept
    # install's event in the same message is stored, so once it is, the message was handled
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    sentinel = {**next(e for e in events if e["install_id"] == kept[0]), "event_id": str(uuid.uuid4())}
    lines = [{**e, "received_at": stamp} for e in (*new[:5], sentinel)]
    asyncio.run(send_to_broker(service, lines))
    wait_for(
        lambda: (
            service.scalar(
                f"SELECT count() FROM raw_extension_events WHERE event_id = '{sentinel['event_id']}'"
            )
            == 1
        ),
        120,
        "the kept install's event of that message stored",
    )
    assert rows_of(service, gone)["raw_extension_events"] == 0

    logged = service.sql(
        f"SELECT toString(erasure_id) AS id, requested_by, rows_removed FROM erasure_log "
        f"WHERE install_hash = '{install_hash(gone)}'"
    )
    assert [(r["id"], r["requested_by"]) for r in logged] == [(receipt["erasure_id"], "operator")]
    assert {k: int(v) for k, v in logged[0]["rows_removed"].items()} == removed
