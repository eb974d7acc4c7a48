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


def test_engines_running_fewer_arms_are_tested_against_their_own_arms(service: Service) -> None:
    """The paper ran only swap 1-2 on Bing: with engine_arms, Bing's units are expected 2:1
    between control and swap_1_2 (no SRM), its report has only those arms, and a unit in an
    arm Bing does not run is a mismatch at once."""
    from collectors.simulate.extension_traffic import TrafficConfig
    from tests.helpers import post_study, report_json

    arms = {"control": 2.0, "swap_1_2": 1.0, "hide_box": 1.0}
    body = {
        "experiment_id": "srm-engines",
        "engines": ["google", "bing"],
        "arms": arms,
        "engine_arms": {"bing": ["control", "swap_1_2"]},
        "salt": "srm-engines-salt",
        "start": datetime.now(UTC).date().isoformat(),
    }
    headers = {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201
    config = TrafficConfig(
        experiment_id="srm-engines",
        salt="srm-engines-salt",
        arms=tuple(arms.items()),
        engines=(("google", 0.5), ("bing", 0.5)),
        engine_arms={"bing": ("control", "swap_1_2")},
        installs=300,
        seed=41,
    )
    post_study(service, config, 12_000, batch=250)

    def arm_units(engine: str) -> dict[str, int]:
        doc = report_json(service, "srm-engines", "--engine", engine, "--burn-in-days", "0", "--ranks", "1")
        return {a["arm"]: a["units"] for a in doc["arms"]}

    bing, google = arm_units("bing"), arm_units("google")
    assert set(bing) == {"control", "swap_1_2"} and set(google) == set(arms)
    assert 0.6 < bing["control"] / sum(bing.values()) < 0.73  # 2/3 expected
    public = http("GET", service.url + "/v1/experiments/srm-engines/config", headers=headers).body
    assert [a["arm"] for a in public["engine_arms"]["bing"]] == ["control", "swap_1_2"]

    def subject_alerts(engine: str) -> int:
        return service.scalar(
            f"SELECT count() FROM alerts WHERE kind = 'srm' AND subject = 'srm-engines/{engine}'"
        )

    board = f"{service.url}/v1/board/experiments/srm-engines?engine=bing"
    wait_for(
        lambda: http("GET", board, headers=headers).body["srm"]["status"] == "ok",
        60,
        "the board's SRM panel for Bing",
    )
    srm = http("GET", board, headers=headers).body["srm"]
    expected = {r["arm"]: r["expected_share"] for r in srm["arms"]}
    assert expected == pytest.approx({"control": 2 / 3, "swap_1_2": 1 / 3})
    assert subject_alerts("bing") == 0 and subject_alerts("google") == 0

    # A client that ignores engine_arms: hide_box on Bing is a mismatch however few.
    stray = [{**e, "engine": "bing", "arm": "hide_box"} for e in clicks("srm-engines", 50, 0)]
    post(service, stray)
    wait_for(lambda: subject_alerts("bing") == 1, 120, "the SRM alert for Bing")
    assert subject_alerts("google") == 0
