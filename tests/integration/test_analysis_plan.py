"""The analysis plan through HTTP (issue 38): registered once, amended with a reason, read
with its hash and history; bad bodies are 4xx."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from schemas.analysis_plan import AnalysisPlan
from tests.helpers import Service, http
from tests.integration.test_experiments import admin, cli, config

pytestmark = pytest.mark.integration
runner = CliRunner()


def plan(experiment_id: str, **changes: object) -> dict[str, object]:
    body = {
        "experiment_id": experiment_id,
        "primary": [{"quantity": "delta", "arm": "swap_1_2", "rank": 1}],
        "burn_in_days": 2,
    }
    return {**body, **changes}


def register(service: Service, experiment_id: str) -> None:
    resp = http("POST", service.url + "/v1/experiments", orjson.dumps(config(experiment_id)), admin(service))
    assert resp.status == 201, resp.body


def test_register_amend_read(service: Service) -> None:
    register(service, "plan-1")
    url = service.url + "/v1/experiments/plan-1/plan"
    headers = admin(service)
    assert http("GET", url, None, headers).status == 404
    resp = http("PUT", url, orjson.dumps(plan("plan-1")), headers)
    assert resp.status == 200, resp.body
    first = resp.body
    assert first["version"] == 1 and first["sha256"] == AnalysisPlan.model_validate(plan("plan-1")).sha256()
    assert first["history"][0]["kind"] == "registration" and first["history"][0]["registered_by"]
    assert service.api_key not in orjson.dumps(first).decode()
    again = http("PUT", url, orjson.dumps(plan("plan-1")), headers)
    assert again.status == 409 and "amend" in again.body["message"]
    amended = {"reason": "burn-in as in the paper", "plan": plan("plan-1", burn_in_days=4)}
    resp = http("POST", url + "/amendments", orjson.dumps(amended), headers)
    assert resp.status == 200, resp.body
    assert resp.body["version"] == 2 and resp.body["sha256"] != first["sha256"]
    assert [v["kind"] for v in resp.body["history"]] == ["registration", "amendment"]
    assert resp.body["history"][1]["reason"] == "burn-in as in the paper"
    assert http("POST", url + "/amendments", orjson.dumps(amended), headers).status == 409
    shown = http("GET", url, None, headers)
    assert shown.status == 200 and shown.body["plan"]["burn_in_days"] == 4
    deviations = http("GET", url + "/deviations", None, headers)
    assert deviations.status == 200 and deviations.body["deviations"] == []


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        orjson.dumps(plan("other-experiment")),
        orjson.dumps(plan("plan-2", primary=[{"quantity": "delta", "arm": "no_such_arm", "rank": 1}])),
        orjson.dumps(plan("plan-2", surprise=1)),
        orjson.dumps(plan("plan-2", subsets=["no-such-subset"])),
        orjson.dumps(plan("plan-2", primary=[])),
    ],
)
def test_bad_plans_are_4xx(service: Service, body: bytes) -> None:
    if http("GET", service.url + "/v1/experiments/plan-2", None, admin(service)).status == 404:
        register(service, "plan-2")
    resp = http("PUT", service.url + "/v1/experiments/plan-2/plan", body, admin(service))
    assert 400 <= resp.status < 500 and isinstance(resp.body, dict), resp.body
    amend = http("POST", service.url + "/v1/experiments/plan-2/plan/amendments", body, admin(service))
    assert 400 <= amend.status < 500
    assert (
        http(
            "PUT", service.url + "/v1/experiments/nope/plan", orjson.dumps(plan("nope")), admin(service)
        ).status
        == 404
    )


def test_cli_registers_shows_amends_and_lists_deviations(service: Service, tmp_path: Path) -> None:
    register(service, "plan-cli")
    path = tmp_path / "plan.toml"
    path.write_text(
        'experiment_id = "plan-cli"\nprimary = [{ quantity = "beta", arm = "swap_1_2", rank = 1 }]\n'
    )
    out = cli(service, "plan", "register", str(path))
    assert "plan version 1" in out and "swap_1_2" in out
    path.write_text(path.read_text() + "burn_in_days = 3\n")
    out = cli(service, "plan", "amend", "plan-cli", str(path), "--reason", "a shorter pilot")
    assert "plan version 2" in out and "a shorter pilot" in out
    assert "burn-in 3 days" in cli(service, "plan", "show", "plan-cli")
    assert "no departures" in cli(service, "plan", "deviations", "plan-cli")
    path.write_text("experiment_id = ")
    bad = runner.invoke(
        app, ["plan", "register", str(path), "--url", service.url, "--api-key", service.api_key]
    )
    assert bad.exit_code == 2 and "not TOML" in bad.output


def test_a_report_follows_the_plan_and_logs_each_departure(service: Service) -> None:
    """Unset options are the plan's; an option asked against the plan is computed as asked,
    marked in the answer and under the table, and logged with who and when; a report that
    follows the plan (also one that names the plan's own values) logs nothing."""
    from collectors.simulate.extension_traffic import DEFAULT_ARMS, TrafficConfig
    from tests.helpers import post_study, report_json

    experiment = "plan-follow"
    body = config(experiment, arms=dict(DEFAULT_ARMS), start="2026-01-01", engines=["google", "bing"])
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), admin(service)).status == 201
    post_study(service, TrafficConfig(experiment_id=experiment, seed=5, installs=60), 3_000)
    planned = plan(experiment, subsets=["all", "box"], intervals={"level": 0.9})
    url = service.url + f"/v1/experiments/{experiment}/plan"
    assert http("PUT", url, orjson.dumps(planned), admin(service)).status == 200
    sha = AnalysisPlan.model_validate(planned).sha256()

    followed = report_json(service, experiment)
    assert (followed["burn_in_days"], followed["level"], followed["subset"]) == (2, 0.9, "all")
    assert followed["plan"] == {
        "version": 1, "sha256": sha, "followed": True, "departures": {}, "logged_at": None
    }  # fmt: skip
    assert followed["interval_guarantee"].startswith("90% ")
    named = report_json(service, experiment, "--burn-in-days", "2", "--level", "0.9", "--subset", "box")
    assert named["plan"]["followed"] and named["subset"] == "box"
    explicit = report_json(service, experiment, "--burn-in-days", "2", "--level", "0.9")
    assert explicit["arms"] == followed["arms"]
    assert http("GET", url + "/deviations", None, admin(service)).body["deviations"] == []

    departed = report_json(service, experiment, "--burn-in-days", "0", "--subset", "ads")
    departures = {
        "burn_in_days": {"asked": 0, "planned": 2},
        "subset": {"asked": "ads", "planned": ["all", "box"]},
    }
    assert departed["plan"]["followed"] is False and departed["plan"]["departures"] == departures
    assert departed["burn_in_days"] == 0 and departed["plan"]["logged_at"]
    log = http("GET", url + "/deviations", None, admin(service)).body["deviations"]
    assert [(d["plan_sha256"], d["what"]) for d in log] == [(sha, departures)]
    assert log[0]["by"] and service.api_key not in orjson.dumps(log).decode()
    table = cli(service, "report", "experiment", experiment, "--burn-in-days", "0")
    assert "DEPARTS from it: burn_in_days 0 (planned 2)" in " ".join(table.split())
    log = http("GET", url + "/deviations", None, admin(service)).body["deviations"]
    assert [d["what"] for d in log] == [departures, {"burn_in_days": {"asked": 0, "planned": 2}}]

    # the plan's family (Holm, by default) beside Figure 3, and the variance-reduced estimates
    swap = next(a for a in followed["arms"] if a["arm"] == "swap_1_2")
    corrections = followed["corrections"]
    assert (corrections["method"], corrections["family"]) == ("holm", "plan")
    [test] = corrections["tests"]  # the plan's one primary test: delta_1 of swap_1_2
    assert (test["quantity"], test["arm"], test["rank"]) == ("delta", "swap_1_2", 1)
    assert test["estimate"] == pytest.approx(swap["delta_c1"], abs=1e-12)  # the same pooled gap
    assert test["adjusted_p_value"] == pytest.approx(test["p_value"])  # a family of one
    assert test["rejected"] == (test["p_value"] <= 0.1)  # alpha = 1 - the plan's level 0.9
    reduced = report_json(service, experiment, "--variance-reduction", "--correction", "bh")
    assert reduced["plan"]["departures"] == {"correction": {"asked": "bh", "planned": "holm"}}
    assert reduced["corrections"]["method"] == "bh"
    rows = {(e["quantity"], e["arm"], e["rank"]): e for e in reduced["variance_reduction"]["estimates"]}
    one = rows[("delta", "swap_1_2", 1)]
    assert one["plain_estimate"] == pytest.approx(swap["delta_c1"], abs=1e-12)
    assert one["ci_low"] < one["estimate"] < one["ci_high"] and one["width_ratio"] > 0
    table = cli(service, "report", "experiment", experiment, "--variance-reduction")
    assert "family of 1 tests (plan)" in " ".join(table.split()) and "variance-reduced" in table

    # watched as it runs: the family's always-valid intervals beside its fixed-look ones
    watched = report_json(service, experiment, "--intervals", "sequential")
    assert watched["corrections"]["family_sequence"]["alpha_each"] == pytest.approx(0.1)  # a family of one
    [test] = watched["corrections"]["tests"]
    assert test["family_sequence_low"] <= test["family_ci_low"] < test["family_ci_high"]
    assert test["family_ci_high"] <= test["family_sequence_high"]
    table = cli(service, "report", "experiment", experiment, "--intervals", "sequential")
    assert "family sequence" in table and "valid at every moment" in " ".join(table.split())
