"""Done-means (issue 3) 4: a 52/48 split on a 50/50 experiment raises exactly one SRM alert."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from confluent_kafka import Consumer

from collectors.simulate.poster import post_batches
from tests.helpers import Service, http, wait_for

pytestmark = pytest.mark.integration


def clicks(experiment: str, n: int, control_percent: int) -> list[dict]:
    now = datetime.now(UTC)
    events = []
    for i in range(n):
        events.append(
            {
                "type": "click",
                "schema_version": 1,
                "event_id": str(uuid.uuid4()),
                "sent_at": now.isoformat(),
                "experiment_id": experiment,
                "arm": "control" if i % 100 < control_percent else "swap_1_2",
                "engine": "google",
                "install_id": f"srm-install-{i % 2000:05d}",
                "install_day": (now - timedelta(days=30)).date().isoformat(),
                "extension_version": "1.5.0",
                "page_index": 0,
                "n_organic": 10,
                "ads_top_count": 0,
                "box": "none",
                "ssr_positions": [],
                "identified": True,
                "ui_lang": "de",
                "element_type": "organic",
                "original_rank": 1,
                "display_rank": 1,
            }
        )
    return events


def register(service: Service, experiment: str) -> None:
    body = {
        "experiment_id": experiment,
        "engines": ["google"],
        "arms": {"control": 1, "swap_1_2": 1},
        "salt": "srm-salt-0001",
        "start": datetime.now(UTC).date().isoformat(),
    }
    headers = {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201


def post(service: Service, events: list[dict]) -> None:
    batches = [events[i : i + 500] for i in range(0, len(events), 500)]
    stats = asyncio.run(post_batches(service.url, service.api_key, batches))
    assert stats.accepted == len(events)


def srm_alerts(service: Service, experiment: str) -> int:
    return service.scalar(
        f"SELECT count() FROM alerts WHERE kind = 'srm' AND subject = '{experiment}/google'"
    )


def test_srm_alerts_once_for_a_bad_split_and_never_for_a_fair_one(service: Service) -> None:
    register(service, "srm-bad")
    register(service, "srm-fair")
    post(service, clicks("srm-fair", 20_000, 50))
    post(service, clicks("srm-bad", 10_000, 52))
    wait_for(lambda: srm_alerts(service, "srm-bad") == 1, 120, "the SRM alert")
    post(service, clicks("srm-bad", 10_000, 52))  # more evidence: still one alert
    wait_for(
        lambda: (
            service.scalar("SELECT sum(units) FROM arrangement_install_day WHERE experiment_id = 'srm-bad'")
            == 20_000
        ),
        120,
        "all srm-bad units stored",
    )
    wait_for(
        lambda: (
            service.scalar("SELECT sum(units) FROM arrangement_install_day WHERE experiment_id = 'srm-fair'")
            == 20_000
        ),
        120,
        "all srm-fair units stored",
    )
    assert srm_alerts(service, "srm-bad") == 1
    assert srm_alerts(service, "srm-fair") == 0
    summary = service.scalar("SELECT summary FROM alerts WHERE subject = 'srm-bad/google'")
    assert "sample ratio mismatch" in summary

    broker = (service.data_dir / "run" / "broker.addr").read_text().strip()
    consumer = Consumer(
        {"bootstrap.servers": broker, "group.id": f"t-{uuid.uuid4()}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe(["auditstream.alerts"])
    seen: list[dict] = []

    def alert_on_topic() -> bool:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            seen.append(orjson.loads(msg.value()))
        return any(a["subject"] == "srm-bad/google" for a in seen)

    wait_for(alert_on_topic, 30, "the alert on the alerts topic")
    consumer.close()
