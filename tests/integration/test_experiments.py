"""The experiment registry through HTTP and the CLI, stored in ClickHouse."""

from __future__ import annotations

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from ingest.api_keys import KeyFile
from tests.helpers import Service, http

pytestmark = pytest.mark.integration
runner = CliRunner()


def cli(service: Service, *args: str) -> str:
    result = runner.invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])
    assert result.exit_code == 0, result.output
    return result.stdout


def admin(service: Service) -> dict[str, str]:
    return {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}


def config(experiment_id: str, **changes: object) -> dict[str, object]:
    """A valid registry body for ``experiment_id``, with ``changes``."""
    body = {
        "experiment_id": experiment_id,
        "engines": ["google"],
        "arms": {"control": 1, "swap_1_2": 1},
        "salt": "salt-0123456",
        "start": "2026-11-01",
    }
    return {**body, **changes}


def test_create_list_show_stop(service: Service) -> None:
    out = cli(
        service,
        "experiment",
        "create",
        "reg-1",
        "--arm",
        "control=2",
        "--arm",
        "swap_1_2=1",
        "--arm",
        "swap_1_3=1",
        "--engine",
        "google",
        "--engine",
        "bing",
        "--salt",
        "salt-0123456",
    )
    assert orjson.loads(out)["arms"] == {"control": 2.0, "swap_1_2": 1.0, "swap_1_3": 1.0}
    assert "reg-1" in cli(service, "experiment", "list", "--format", "csv")
    public = orjson.loads(cli(service, "experiment", "show", "reg-1", "--public"))
    assert public["arms"] == [
        {"arm": "control", "weight": 0.5},
        {"arm": "swap_1_2", "weight": 0.25},
        {"arm": "swap_1_3", "weight": 0.25},
    ]
    assert public["salt"] == "salt-0123456" and "burn_in_days" not in public
    assert "stopped reg-1" in cli(service, "experiment", "stop", "reg-1")
    assert orjson.loads(cli(service, "experiment", "show", "reg-1"))["status"] == "stopped"


def test_registry_refuses_bad_configs_and_wrong_scopes(service: Service) -> None:
    headers = admin(service)
    body = config("reg-2", arms={"swap_1_2": 1, "swap_1_3": 1})
    resp = http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers)
    assert resp.status == 422 and "control" in resp.body["message"]
    body["arms"] = {"control": 1, "swap_1_2": 1}
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 409
    _, ingest_only = KeyFile(service.data_dir / "keys.json").create("ext", ("ingest",))
    ext = {"Authorization": f"Bearer {ingest_only}", "Content-Type": "application/json"}
    assert http("GET", service.url + "/v1/experiments/reg-2/config", None, ext).status == 200
    assert http("POST", service.url + "/v1/experiments/reg-2/stop", b"", ext).status == 403
    assert http("GET", service.url + "/v1/experiments/nope/config", None, ext).status == 404


def test_an_experiment_stopped_before_its_start_ends_on_its_start_day_and_stays_readable(
    service: Service,
) -> None:
    from datetime import UTC, datetime, timedelta

    headers = admin(service)
    start = (datetime.now(UTC).date() + timedelta(days=3)).isoformat()
    body = config("reg-future", start=start)
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201
    stopped = http("POST", service.url + "/v1/experiments/reg-future/stop", b"", headers)
    assert stopped.status == 200 and stopped.body["end"] == start and stopped.body["status"] == "stopped"
    again = http("POST", service.url + "/v1/experiments/reg-future/stop", b"", headers)
    assert again.status == 200 and again.body == stopped.body  # stopping twice changes nothing
    shown = http("GET", service.url + "/v1/experiments/reg-future", None, headers)
    assert shown.status == 200 and shown.body["end"] == start
    assert http("GET", service.url + "/v1/experiments/reg-future/config", None, headers).status == 200


def test_arm_weights_whose_sum_would_overflow_are_refused(service: Service) -> None:
    body = config("reg-huge", arms={"control": 1e308, "swap_1_2": 1e308})
    resp = http("POST", service.url + "/v1/experiments", orjson.dumps(body), admin(service))
    assert resp.status == 422 and resp.body["error"] == "invalid_experiment"


def test_events_of_a_registered_experiment_must_name_its_arms_and_engines(service: Service) -> None:
    """A client that is not the extension could put words in ``arm`` or ``engine``: for a
    registered experiment those events are refused by field, by ``/v1/events`` and by the
    import alike, and never reach the tables; the others in the same request are stored."""
    import itertools
    import uuid

    from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
    from tests.helpers import wait_for

    body = config("reg-arms", engines=["google"])
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), admin(service)).status == 201
    traffic = TrafficConfig(
        experiment_id="reg-arms", engines=(("google", 1.0),), arms=(("control", 1.0), ("swap_1_2", 1.0))
    )
    good = list(itertools.islice(ExtensionTraffic(traffic).events(), 3))

    def probe() -> bool:  # the intake reads the registry every few seconds
        event = {**good[0], "event_id": str(uuid.uuid4()), "arm": "probe"}
        answer = service.post([event])
        return answer.status == 422 and answer.body["rejected"][0]["reason"] == "unregistered_arm"

    wait_for(probe, 30, "the intake to know the registered arms")
    word = {**good[0], "event_id": str(uuid.uuid4()), "arm": "john.smith"}
    bing = {**good[0], "event_id": str(uuid.uuid4()), "engine": "bing"}
    answer = service.post([good[0], word, bing, good[1]])
    assert answer.status == 202 and answer.body["accepted"] == 2
    assert answer.body["rejected"] == [
        {"index": 1, "reason": "unregistered_arm", "field": "arm"},
        {"index": 2, "reason": "unregistered_arm", "field": "engine"},
    ]
    assert b"john.smith" not in orjson.dumps(answer.body)

    lines = b"\n".join(orjson.dumps(e) for e in (good[2], {**word, "event_id": str(uuid.uuid4())}))
    headers = {**admin(service), "Content-Type": "application/x-ndjson"}
    imported = http("POST", service.url + "/v1/import", lines, headers)
    assert imported.status == 200 and imported.body["accepted"] == 1
    assert imported.body["rejected_by_reason"] == {"unregistered_arm": 1}

    ids = ", ".join(f"'{e['event_id']}'" for e in good)
    wait_for(
        lambda: service.scalar(f"SELECT count() FROM extension_events WHERE event_id IN ({ids})") == 3,
        60,
        "the accepted events stored",
    )
    assert service.scalar("SELECT count() FROM extension_events WHERE experiment_id = 'reg-arms' "
                          "AND (arm = 'john.smith' OR engine != 'google')") == 0  # fmt: skip


def test_concurrent_creates_of_one_id_give_one_experiment(service: Service) -> None:
    """Six clients create one id at once, each with its own arms: one 201, five 409, and the
    registry holds the arms the 201 answered."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    together = threading.Barrier(6)

    def create(n: int) -> tuple[int, dict[str, object]]:
        body = orjson.dumps(config("reg-race", arms={"control": 1, f"arm{n}": 1}))
        together.wait(10)  # all six at once
        answer = http("POST", service.url + "/v1/experiments", body, admin(service))
        return answer.status, answer.body

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(create, range(6)))
    assert sorted(status for status, _ in answers) == [201, 409, 409, 409, 409, 409]
    (won,) = [body for status, body in answers if status == 201]
    shown = http("GET", service.url + "/v1/experiments/reg-race", None, admin(service))
    assert shown.status == 200 and shown.body["arms"] == won["arms"]


def test_planted_values_are_replaced_and_read_back(service: Service) -> None:
    """PUT replaces an experiment's planted values (a key the new values lack is gone), GET
    reads them; unknown experiments are 404, bad bodies 400, all as JSON."""
    url = service.url + "/v1/experiments/planted-1/planted"
    assert (
        http(
            "POST", service.url + "/v1/experiments", orjson.dumps(config("planted-1")), admin(service)
        ).status
        == 201
    )
    row = {"engine": "google", "subset": "all", "baseline": "control", "arm": "swap_1_2"}
    first = [
        {**row, "quantity": "ctr", "rank": 1, "value": 0.24},
        {**row, "quantity": "delta", "rank": 1, "value": -0.19},
        {**row, "quantity": "beta", "rank": 1, "value": 0.44},
    ]
    body = {"seed": 7, "model": "powermeter-v1", "values": first}
    put = http("PUT", url, orjson.dumps(body), admin(service))
    assert put.status == 200, put.body
    assert put.body["seed"] == 7 and put.body["model"] == "powermeter-v1" and len(put.body["values"]) == 3

    second = {
        "seed": 8,
        "model": "powermeter-v1",
        "values": [{**row, "quantity": "ctr", "rank": 1, "value": 0.25}],
    }
    assert http("PUT", url, orjson.dumps(second), admin(service)).status == 200
    got = http("GET", url, headers=admin(service))
    assert got.status == 200
    assert got.body["seed"] == 8 and got.body["values"] == [
        {**row, "quantity": "ctr", "rank": 1, "value": 0.25}
    ]
    assert got.body["recorded_at"]

    bad_bodies = [
        {**second, "extra": 1},
        {**second, "values": [{**row, "quantity": "ctr", "rank": 11, "value": 0.1}]},
        {**second, "values": [{**row, "quantity": "odds", "rank": 1, "value": 0.1}]},
        {**second, "values": [{**row, "arm": "swap_1_3", "quantity": "ctr", "rank": 1, "value": 0.1}]},
        {**second, "values": [{**row, "engine": "bing", "quantity": "ctr", "rank": 1, "value": 0.1}]},
        {**second, "values": [{**row, "subset": "nowhere", "quantity": "ctr", "rank": 1, "value": 0.1}]},
        {**second, "values": second["values"] * 2},
        {"seed": 1, "model": "m", "values": [{**row, "quantity": "ctr", "rank": 1, "value": "NaN"}]},
    ]
    for bad in bad_bodies:
        answer = http("PUT", url, orjson.dumps(bad), admin(service))
        assert answer.status == 400 and answer.body["error"] == "bad_request", (bad, answer.body)
    assert http("GET", url, headers=admin(service)).body["seed"] == 8  # untouched by the refusals
    unknown = service.url + "/v1/experiments/no-such-planted/planted"
    assert http("GET", unknown, headers=admin(service)).body["error"] == "not_found"
    assert http("PUT", unknown, orjson.dumps(second), admin(service)).status == 404
