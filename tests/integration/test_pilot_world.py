"""``plan size --pilot`` (issue 38): an experiment's data so far, read by
``POST /v1/experiments/{id}/pilot-world`` as the planner's world.

The first test runs on a fresh chDB in a process of its own
(tests/integration/helpers/pilot_world_chdb.py, seconds): the route gives exactly
``world_from_pilot`` of the study's counts, and those recover the simulated world's
parameters; what it refuses is a clear 4xx. The second asks the embedded service through
the command line.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.planner import World, half_width
from auditstream.cli import app
from collectors.simulate.extension_traffic import DEFAULT_ARMS, TrafficConfig
from tests.helpers import Service, http, post_study, run_own_process
from tests.integration.test_experiments import admin, config

pytestmark = pytest.mark.integration
runner = CliRunner()

GAMMA_CV = 1 / math.sqrt(1.5)
"""The simulator's installs' activity is Gamma(1.5): coefficient of variation 0.816."""


def close(answer: dict[str, Any], counted: dict[str, Any]) -> None:
    """The route's world is ``world_from_pilot`` of the events counted in-process."""
    assert answer["installs"] == counted["installs"] and answer["units"] == counted["units"]
    for name, value in counted["world"].items():
        if name == "arm_factor":
            continue
        expected = pytest.approx(value, rel=1e-9) if isinstance(value, float) else value
        assert answer["world"][name] == expected, name


def test_the_pilot_route_recovers_a_simulated_world() -> None:
    out = run_own_process("tests.integration.helpers.pilot_world_chdb")
    answers = out["answers"]
    whole, two = answers["whole"], answers["first_two_days"]
    assert whole["status"] == 200 and two["status"] == 200, (whole, two)
    doc = whole["body"]
    # the plan's preprocessing and primary quantity; the study's seven calendar days
    assert (doc["preprocessing_from"], doc["burn_in_days"], doc["arm"], doc["rank"]) == (
        "plan",
        4,
        "swap_1_2",
        1,
    )
    assert (doc["first_day"], doc["last_day"], doc["days"]) == ("2026-09-01", "2026-09-07", 7)
    assert doc["arm_weights"] == dict(DEFAULT_ARMS)
    close(doc, out["whole"])
    assert (two["body"]["last_day"], two["body"]["days"]) == ("2026-09-02", 2)
    close(two["body"], out["first_two_days"])
    # the simulated world: the paper's c1 and gap planted, a Gamma(1.5) activity, a small
    # spread of installs' CTR (the simulator's is about 0.03, far from paper_world's 0.2)
    world = doc["world"]
    assert world["ctr"] == pytest.approx(0.43, abs=0.03)
    assert world["delta"] == pytest.approx(-0.19, abs=0.04)
    assert world["activity_cv"] == pytest.approx(GAMMA_CV, abs=0.12)
    assert 0 <= world["ctr_sd"] < 0.08
    assert world["clicks_per_day"] == pytest.approx(doc["units"] / doc["installs"] / 7)
    assert (world["arm_weight"], world["baseline_weight"], world["total_weight"]) == (0.15, 0.4, 1.0)
    refused = {name: (a["status"], a["body"]["error"]) for name, a in answers.items() if a["status"] != 200}
    assert refused == {
        "unknown": (404, "not_found"),
        "no_days": (404, "no_units"),
        "no_bing_units": (404, "no_units"),
        "reversed": (400, "bad_request"),
        "not_a_day": (400, "bad_request"),
        "no_arm": (400, "bad_request"),
        "baseline_arm": (400, "bad_request"),
        "other_engine": (400, "bad_request"),
    }


def size(service: Service, *args: str) -> Any:
    return runner.invoke(
        app,
        ["plan", "size", *args, "--url", service.url, "--api-key", service.api_key],
        env={"COLUMNS": "200"},
    )


def test_plan_size_from_a_pilot_of_the_service(service: Service) -> None:
    experiment = "pilot-cli"
    registry = config(experiment, arms=dict(DEFAULT_ARMS), salt=TrafficConfig().salt)
    resp = http("POST", service.url + "/v1/experiments", orjson.dumps(registry), admin(service))
    assert resp.status == 201, resp.body
    traffic = TrafficConfig(experiment_id=experiment, seed=12, installs=120, engines=(("google", 1.0),))
    post_study(service, traffic, 6000, batch=500)

    asked = http("POST", service.url + f"/v1/experiments/{experiment}/pilot-world", b"{}", admin(service))
    assert asked.status == 200, asked.body
    assert asked.body["preprocessing_from"] == "registration" and asked.body["arm"] == "swap_1_2"
    world = World(**asked.body["world"])
    planned = replace(world, installs=300, days=30)

    result = size(service, "--pilot", experiment, "--installs", "300", "--days", "30", "--half-width", "0.03")
    assert result.exit_code == 0, result.output
    assert f"pilot {experiment} on google: swap_1_2 against control at c1" in result.output
    assert f"estimated: {world.installs} installs x {world.days:g} days" in result.output
    assert "300 installs x 30 days" in result.output and "from the registration" in result.output
    assert f"{half_width(planned, 'delta'):.4f}" in result.output
    assert f"{half_width(planned, 'beta', adjusted=True):.4f}" in result.output

    missing = size(service, "--pilot", "no-such-experiment")
    assert missing.exit_code == 1 and "404" in missing.output and "no such experiment" in missing.output
    bad_day = size(service, "--pilot", experiment, "--since", "2026-02-30")
    assert bad_day.exit_code == 1 and "400" in bad_day.output and "YYYY-MM-DD" in bad_day.output
    other_rank = size(service, "--pilot", experiment, "--arm", "swap_2_3", "--rank", "2")
    assert other_rank.exit_code == 0 and "delta_2" in other_rank.output, other_rank.output
