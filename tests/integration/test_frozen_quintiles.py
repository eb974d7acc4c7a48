"""Frozen n_candidates quintiles through the service (issue 38): boundaries given at
registration, or frozen from a pilot by ``auditstream plan freeze-quintiles`` (a logged
amendment), make each quintile a named subset the worker keeps, like ``box``; every quintile
report then equals a recount from ``extension_events`` with the frozen boundaries (SQL written
here, not the report's), live, replayed and erased events included; bad requests are 4xx."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.extension_traffic import ExtensionTraffic, TrafficConfig
from schemas.analysis_plan import AnalysisPlan
from tests.helpers import Service, http, post_study, report_json, wait_for

pytestmark = pytest.mark.integration
runner = CliRunner()
BUCKET = "toInt16(floor(log10(n_candidates) * 10))"
FAMILIES = {"": "n_candidates", "no_ads_no_box_": "no_ads_no_box_n_candidates"}
READY_S = 180
"""The worker recomputes a study once new boundaries are stored (its timer ticks every 5 s)."""


def admin(service: Service) -> dict[str, str]:
    return {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}


def register(service: Service, experiment_id: str, **plan: Any) -> str:
    """The experiment (TrafficConfig's arms, both engines) and its plan (a 4-day burn-in)."""
    experiment = {
        "experiment_id": experiment_id,
        "engines": ["google", "bing"],
        "arms": dict(TrafficConfig().arms),
        "salt": "frozen-quintiles",
        "start": "2026-01-01",
    }
    resp = http("POST", service.url + "/v1/experiments", orjson.dumps(experiment), admin(service))
    assert resp.status == 201, resp.body
    body = {"experiment_id": experiment_id, "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}]}
    resp = http("PUT", plan_url(service, experiment_id), orjson.dumps({**body, **plan}), admin(service))
    assert resp.status == 200, resp.body
    return experiment_id


def plan_url(service: Service, experiment_id: str) -> str:
    return f"{service.url}/v1/experiments/{experiment_id}/plan"


def stored(service: Service, experiment_id: str) -> bool:
    return bool(http("GET", plan_url(service, experiment_id), None, admin(service)).body["quintiles_stored"])


def recount(service: Service, experiment_id: str, prefix: str, k: int, cuts: list[int]) -> dict[str, tuple]:
    """Per arm: click units, installs and clicks on c1 on Google's first pages in quintile k of
    ``cuts`` (its family: ``prefix``), after the 4-day burn-in, identified installs only."""
    where = [f"n_candidates > 0 AND {BUCKET} > {cuts[k - 2] if k > 1 else -1}"]
    if k < 5:
        where.append(f"{BUCKET} <= {cuts[k - 1]}")
    if prefix:
        where.append("ads_top_count = 0 AND box = 'none'")
    rows = service.sql(
        "SELECT arm, count() AS units, uniqExact(install_id) AS installs, "
        "countIf(element_type = 'organic' AND original_rank = 1) AS c1 FROM extension_events "
        f"WHERE experiment_id = '{experiment_id}' AND engine = 'google' AND type = 'click' "
        "AND page_index = 0 AND identified AND dateDiff('day', install_day, toDate(received_at)) >= 4 "
        f"AND {' AND '.join(where)} GROUP BY arm"
    )
    return {r["arm"]: (int(r["units"]), int(r["installs"]), int(r["c1"]) / int(r["units"])) for r in rows}


def reported(doc: dict[str, Any]) -> dict[str, tuple]:
    return {a["arm"]: (a["units"], a["installs"], a["ctr_c1"]) for a in doc["arms"] if a["units"]}


def same(report: dict[str, tuple], counted: dict[str, tuple]) -> bool:
    return report.keys() == counted.keys() and all(
        report[a][:2] == counted[a][:2] and abs(report[a][2] - counted[a][2]) < 1e-5 for a in counted
    )


def quintiles_agree(service: Service, experiment_id: str, family: str, cuts: list[int], version: int) -> bool:
    """Every quintile report of the family states the frozen range and equals the recount."""
    prefix = "no_ads_no_box_" if family.startswith("no_ads") else ""
    for k in range(1, 6):
        doc = report_json(service, experiment_id, "--subset", f"{prefix}n_candidates_q{k}", "--ranks", "1")
        bounds = doc["subset_bounds"]
        assert bounds["frozen"] and bounds["plan_version"] == version, bounds
        assert (bounds["above"], bounds["at_most"]) == (
            cuts[k - 2] if k > 1 else None,
            cuts[k - 1] if k < 5 else None,
        )
        if not same(reported(doc), recount(service, experiment_id, prefix, k, cuts)):
            return False
    return True


def study_wide_units(service: Service, experiment_id: str, subset: str) -> int:
    return service.scalar(
        "SELECT sum(units) FROM arrangement_install_subset WHERE experiment_id = "
        f"'{experiment_id}' AND engine = 'google' AND subset = '{subset}' AND install_age_days >= 4 "
        "AND identified = 1"
    )


def test_boundaries_given_at_registration_make_named_subsets(service: Service) -> None:
    cuts = [50, 56, 62, 68]
    experiment_id = register(service, "fq-planned", quintiles={"n_candidates": {"kept": cuts}})
    wait_for(lambda: stored(service, experiment_id), READY_S, "the planned quintiles stored")
    post_study(service, TrafficConfig(experiment_id=experiment_id, seed=31, installs=150), 4000)
    wait_for(lambda: quintiles_agree(service, experiment_id, "n_candidates", cuts, 1), 60, "recounts")
    # the report read the study-wide rows the worker keeps per quintile
    doc = report_json(service, experiment_id, "--subset", "n_candidates_q3", "--ranks", "1")
    assert (
        sum(a["units"] for a in doc["arms"])
        == study_wide_units(service, experiment_id, "n_candidates_q3")
        > 0
    )
    # the other family moves with the selection, as before
    plain = report_json(service, experiment_id, "--subset", "no_ads_no_box_n_candidates_q3", "--ranks", "1")
    assert plain["subset_bounds"]["frozen"] is False
    assert study_wide_units(service, experiment_id, "no_ads_no_box_n_candidates_q3") == 0


def cli(service: Service, *args: str) -> Any:
    return runner.invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])


def post_events(service: Service, events: list[dict[str, Any]]) -> None:
    for start in range(0, len(events), 250):
        resp = http(
            "POST", service.url + "/v1/events", orjson.dumps(events[start : start + 250]), admin(service)
        )
        assert resp.status == 202 and not resp.body["rejected"], resp.body


def test_freeze_quintiles_from_a_pilot(service: Service) -> None:
    experiment_id = register(service, "fq-pilot")
    config = TrafficConfig(experiment_id=experiment_id, seed=32, installs=150)
    post_study(service, config, 4000)
    moving = [
        report_json(service, experiment_id, "--subset", f"n_candidates_q{k}")["subset_bounds"]
        for k in (1, 2, 3, 4)
    ]
    assert not moving[0]["frozen"]
    today = datetime.now(UTC).date().isoformat()

    shown = cli(service, "plan", "freeze-quintiles", experiment_id, "--until", today, "--dry-run")
    assert shown.exit_code == 0 and "dry run" in shown.stdout, shown.output
    assert http("GET", plan_url(service, experiment_id), None, admin(service)).body["version"] == 1

    done = cli(service, "plan", "freeze-quintiles", experiment_id, "--until", today, "--reason", "first week")
    assert done.exit_code == 0 and "freeze_quintiles" in done.stdout, done.output
    answer = http("GET", plan_url(service, experiment_id), None, admin(service)).body
    latest = answer["history"][-1]
    assert answer["version"] == 2 and latest["kind"] == "freeze_quintiles"
    assert f"..{today}" in latest["reason"] and latest["reason"].endswith(": first week")
    assert f"by {latest['registered_by']}" in latest["reason"] and service.api_key not in latest["reason"]
    assert (
        answer["sha256"]
        == AnalysisPlan.model_validate(answer["plan"]).sha256()
        != answer["history"][0]["sha256"]
    )
    frozen = {family: answer["plan"]["quintiles"][family]["kept"] for family in FAMILIES.values()}
    # the pilot is every day so far: its cut points are the moving boundaries of the whole study
    assert frozen["n_candidates"] == [b["at_most"] for b in moving]
    again = cli(service, "plan", "freeze-quintiles", experiment_id, "--until", today)
    assert again.exit_code == 1 and "amend" in again.output

    wait_for(lambda: stored(service, experiment_id), READY_S, "the frozen quintiles stored")
    for family, cuts in frozen.items():
        assert quintiles_agree(service, experiment_id, family, cuts, 2), family

    # live events after the freeze land in their quintile; a replay of them is stored once
    traffic = ExtensionTraffic(TrafficConfig(experiment_id=experiment_id, seed=33, installs=150))
    live = list(itertools.islice(traffic.events(), 1500))
    post_events(service, live)
    post_events(service, live)
    for family, cuts in frozen.items():
        wait_for(
            lambda f=family, c=cuts: quintiles_agree(service, experiment_id, f, c, 2), 120, f"live {family}"
        )

    # an erased install leaves every quintile (its rows and its units)
    install = service.sql(
        f"SELECT install_id FROM arrangement_install_subset WHERE experiment_id = '{experiment_id}' "
        "AND subset = 'n_candidates_q2' AND units > 0 ORDER BY install_id LIMIT 1"
    )[0]["install_id"]
    erased = cli(service, "participants", "erase", install)
    assert erased.exit_code == 0, erased.output
    left = f"SELECT count() FROM arrangement_install_subset WHERE install_id = '{install}'"
    wait_for(lambda: service.scalar(left) == 0, 120, "the erased install's rows gone")
    for family, cuts in frozen.items():
        assert quintiles_agree(service, experiment_id, family, cuts, 2), family


@pytest.mark.parametrize(
    ("experiment_id", "body", "status", "code"),
    [
        ("fq-absent", {"until": "2026-01-07"}, 404, "not_found"),
        ("fq-bad", {"until": "2026-01-07"}, 404, "no_plan"),
        ("fq-bad-plan", {"until": "2026-02-30"}, 400, "bad_request"),
        ("fq-bad-plan", {"until": "2026-01-07", "since": "2026-01-08"}, 400, "bad_request"),
        ("fq-bad-plan", {"until": "2026-01-07", "surprise": 1}, 400, "bad_request"),
        ("fq-bad-plan", {"since": "2026-01-07"}, 400, "bad_request"),
        ("fq-bad-plan", {"until": 20260107}, 400, "bad_request"),
        ("fq-bad-plan", {"until": "2000-01-07"}, 409, "no_pilot_data"),
        ("fq-bad-frozen", {"until": "2026-01-07"}, 409, "quintiles_frozen"),
    ],
)
def test_bad_freezes_are_clear_4xx(
    service: Service, experiment_id: str, body: dict[str, Any], status: int, code: str
) -> None:
    exists = http("GET", f"{service.url}/v1/experiments/{experiment_id}", None, admin(service)).status == 200
    if experiment_id == "fq-bad" and not exists:
        experiment = {"experiment_id": "fq-bad", "engines": ["google"], "arms": {"control": 1, "swap_1_2": 1},
                      "salt": "salt-0123456", "start": "2026-01-01"}  # fmt: skip
        assert (
            http("POST", service.url + "/v1/experiments", orjson.dumps(experiment), admin(service)).status
            == 201
        )
    elif experiment_id == "fq-bad-plan" and not exists:
        register(service, experiment_id)
    elif experiment_id == "fq-bad-frozen" and not exists:
        register(service, experiment_id, quintiles={"n_candidates": {"kept": [50, 55, 60, 65]}})
    resp = http(
        "POST", f"{plan_url(service, experiment_id)}/freeze-quintiles", orjson.dumps(body), admin(service)
    )
    assert (resp.status, resp.body["error"]) == (status, code), resp.body
    assert resp.body["message"]


def test_other_bad_input(service: Service) -> None:
    url = f"{plan_url(service, 'fq-bad-input')}/freeze-quintiles"
    register(service, "fq-bad-input")
    assert http("POST", url, b"not json", admin(service)).status == 400
    unknown = {**admin(service), "Authorization": "Bearer not-a-key"}
    assert http("POST", url, orjson.dumps({"until": "2026-01-07"}), unknown).status == 401
    # frozen quintiles are page conditions: a different every is refused
    every = {"n_candidates": {"kept": [50, 55, 60, 65], "every": [49, 55, 60, 65]}}
    primary = [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}]
    body = {"reason": "r", "plan": {"experiment_id": "fq-bad-input", "quintiles": every, "primary": primary}}
    resp = http("POST", plan_url(service, "fq-bad-input") + "/amendments", orjson.dumps(body), admin(service))
    assert resp.status == 400 and "every" in resp.body["message"]
    assert (
        cli(
            service,
            "plan",
            "freeze-quintiles",
            "fq-bad-input",
            "--until",
            "2026-01-07",
            "--since",
            "2026-02-01",
        ).exit_code
        == 2
    )
