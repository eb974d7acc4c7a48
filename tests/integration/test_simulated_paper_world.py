"""Issue 37: a 200k-event simulated study of docs/reproducing.md's seven-arm experiment,
through the running service, gives back the paper's numbers.

The simulator follows the registered experiment (Bing runs only control and swap_1_2, and
SRM holds), stores the exact expectations it plants (GET /v1/experiments/{id}/planted) and
sends one install profile per install. Then the reports of Figure 3 (all pages, Google and
Bing, ranks 1-6) and Figure 5 (box subset against hide_box and hide_ads_box, ranks 1-3) are
held to the planted values: 135 intervals, of which the 14 of the paper's own numbers
(``paper_world.PAPER_TARGETS``) must each hold their planted value, and of all 135 at most
20 may miss.

"Every one of the 135 inside" is not a criterion a 95% interval can meet: about 7 misses are
expected by chance, and intervals of one arm miss together. Measured offline with the
report's own estimator (``bench/paper_world_coverage.py``: ``figure3`` on the simulator's
per-install counts, the same bootstrap weights), at seeds 1-9 and 2037 the misses were 6, 3,
3, 9, 8, 17, 1, 6, 9 and 16 (mean 7.8, 5.8%; 5.5% of the all-page intervals, 6.2% of the box
subset's), never more than 17; all 14 of the paper's numbers were covered at 6 of the 10
seeds (2037, the seed here, chosen before the measurement, is one; the others missed 1, 1, 3
and 2 of them). A miss is chance, not bias: on 600k-1.5M events the simulator's CTRs agree
with the planted ones within 1.8 standard errors (tests/test_collectors/test_paper_world.py
checks smaller draws).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.srm import srm_test
from auditstream.cli import app
from collectors.simulate import paper_world as pw
from tests.helpers import Service, http, wait_for

pytestmark = pytest.mark.integration

EXP = "paper-world"
SEED = 2037
EVENTS = 200_000
SEVEN_ARMS = {
    "control": 4,
    "swap_1_2": 1,
    "swap_1_3": 1,
    "swap_2_3": 1,
    "hide_box": 1,
    "hide_ads_box": 1,
    "hide_ads_box_swap_1_2": 1,
}
FIGURE3 = {"google": ("control", "swap_1_2", "swap_1_3", "swap_2_3"), "bing": ("control", "swap_1_2")}
FIGURE5 = {
    "hide_box": ("hide_box", "control", "swap_1_2"),
    "hide_ads_box": ("hide_ads_box", "control", "swap_1_2", "hide_ads_box_swap_1_2"),
}
"""The bars of Figure 5: against hide box (left), against hide ads/box with a5 hatched (right)."""


def headers(service: Service) -> dict[str, str]:
    return {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}


def report(service: Service, **request: Any) -> dict[str, Any]:
    answer = http(
        "POST",
        service.url + "/v1/reports/experiment",
        orjson.dumps({"experiment_id": EXP, **request}),
        headers(service),
        timeout=300,
    )
    assert answer.status == 200, answer.body
    return answer.body


def test_a_simulated_study_gives_back_the_papers_numbers(service: Service) -> None:
    body = {
        "experiment_id": EXP,
        "engines": ["google", "bing"],
        "arms": SEVEN_ARMS,
        "engine_arms": {"bing": ["control", "swap_1_2"]},
        "salt": "paper-world-salt",
        "start": "2026-01-01",
    }
    created = http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers(service))
    assert created.status == 201, created.body

    result = CliRunner().invoke(
        app,
        ["simulate", "extension", "--url", service.url, "--api-key", service.api_key, "--experiment", EXP,
         "--events", str(EVENTS), "--rate", "0", "--batch-size", "500", "--seed", str(SEED)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "not registered" not in result.output and "planted values" in result.output

    planted = http("GET", service.url + f"/v1/experiments/{EXP}/planted", headers=headers(service)).body
    assert planted["seed"] == SEED and planted["model"] == pw.UNCALIBRATED.model
    values = {
        (v["engine"], v["subset"], v["baseline"], v["arm"], v["quantity"], v["rank"]): v["value"]
        for v in planted["values"]
    }
    for t in pw.PAPER_TARGETS:  # the paper's numbers are what was planted
        assert values[(t.engine, t.subset, t.baseline, t.arm, t.quantity, t.rank)] == pytest.approx(
            t.value, abs=0.005
        )
    assert not any(k[0] == "bing" and k[3] not in ("control", "swap_1_2") for k in values)

    def stored(table: str, only_all: str) -> bool:
        total = service.scalar(
            f"SELECT sum(units) + sum(impressions) FROM {table} WHERE experiment_id = '{EXP}'{only_all}"
        )
        return bool(total == EVENTS)

    # the study-wide rows come after the slices, the per-subset rows right after them
    wait_for(lambda: stored("arrangement_install", ""), 300, f"{EXP} in arrangement_install")
    wait_for(lambda: stored("arrangement_install_subset", " AND subset = 'all'"), 300, f"{EXP} per subset")
    profiles = service.scalar(f"SELECT count() FROM install_profiles WHERE experiment_id = '{EXP}'")
    assert profiles == 500

    checked, missed = 0, []
    for engine, arms in FIGURE3.items():
        doc = report(service, engine=engine, ranks=6)
        rows = {a["arm"]: a for a in doc["arms"]}
        weights = {a: w for a, w in SEVEN_ARMS.items() if engine == "google" or a in FIGURE3["bing"]}
        srm = srm_test({a: r["units"] for a, r in rows.items()}, weights)
        assert srm.p_value >= 0.001, (engine, srm)  # the traffic honours weights and engine arms
        assert set(rows) == set(SEVEN_ARMS if engine == "google" else FIGURE3["bing"])
        for arm in arms:
            for quantity in ("ctr", "delta", "beta"):
                if quantity != "ctr" and arm == "control":
                    continue
                for rank in range(1, 7):
                    checked += 1
                    key = (engine, "all", "control", arm, quantity, rank)
                    missed += _outside(rows[arm], values[key], key)
    for baseline, arms in FIGURE5.items():
        doc = report(service, engine="google", subset="box", baseline=baseline, ranks=3)
        rows = {a["arm"]: a for a in doc["arms"]}
        for arm in arms:
            for quantity in ("ctr", "delta", "beta"):
                if quantity != "ctr" and arm == baseline:
                    continue
                for rank in range(1, 4):
                    checked += 1
                    key = ("google", "box", baseline, arm, quantity, rank)
                    missed += _outside(rows[arm], values[key], key)
    assert checked == 135
    headline = {(t.engine, t.subset, t.baseline, t.arm, t.quantity, t.rank) for t in pw.PAPER_TARGETS}
    assert not [m for m in missed if m[0] in headline], missed
    assert len(missed) <= 20, missed


def _outside(
    row: dict[str, Any], planted: float, key: tuple[str, str, str, str, str, int]
) -> list[tuple[tuple[str, str, str, str, str, int], str]]:
    """The value's key and what was reported, when the interval does not hold it."""
    name = f"{key[4]}_c{key[5]}"
    low, high = row[f"{name}_ci_low"], row[f"{name}_ci_high"]
    if low is not None and high is not None and low <= planted <= high:
        return []
    return [(key, f"planted {planted:.4f}, estimate {row[name]}, interval [{low}, {high}]")]


def test_an_unregistered_experiment_gets_the_built_in_arms_with_a_note(service: Service) -> None:
    """Nothing registered to follow: the built-in arms, said so; the planted values are
    printed but there is no experiment to store them with."""
    result = CliRunner().invoke(
        app,
        ["simulate", "extension", "--url", service.url, "--api-key", service.api_key, "--experiment",
         "paper-world-unregistered", "--events", "300", "--rate", "0", "--installs", "20", "--no-profiles"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "is not registered" in result.output and "planted values" in result.output
    assert "accepted 300" in result.output
    stored = http(
        "GET", service.url + "/v1/experiments/paper-world-unregistered/planted", headers=headers(service)
    )
    assert stored.status == 404
