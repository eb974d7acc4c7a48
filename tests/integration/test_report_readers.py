"""Issue 37, what a reader of ``report experiment`` sees: intervals within their range and
none for thin arms, the report's own warnings (SRM of the selection, a reweighting that
raked nobody, thin arms), the planted values of a simulated study beside the estimates,
the long CSV with every table, and the decision line in the table."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from collectors.simulate.extension_traffic import DEFAULT_ARMS, TrafficConfig
from studies.arrangement.answers import ExperimentReport
from tests.helpers import Service, http, post_study, run_own_process

pytestmark = pytest.mark.integration

EXP = "readers-srm"


def in_range(doc: dict[str, Any]) -> None:
    """Every interval of Figure 3 and of the shares within its statistic's range."""
    for arm in doc["arms"]:
        for key in [k for k in arm if k.endswith("_ci_low") and arm[k] is not None]:
            low, high = arm[key], arm[key.replace("_low", "_high")]
            if key.startswith("ctr"):
                assert 0 <= low <= high <= 1, (arm["arm"], key, low, high)
            elif key.startswith("delta"):
                assert -1 <= low <= high <= 1, (arm["arm"], key, low, high)
            else:
                assert low <= high <= 1, (arm["arm"], key, low, high)
    for share in doc["element_shares"]:
        for key in [k for k in share if k.endswith("_ci_low") and share[k] is not None]:
            assert 0 <= share[key] <= share[key.replace("_low", "_high")] <= 1


def test_planted_values_warnings_and_ranges_on_a_chdb_store() -> None:
    """On a fresh chDB (tests/integration/helpers/report_readers_chdb.py): the planted values
    of the report's subset and baseline, the later recording of each; SRM against the
    registered allocation and a reweighting without profiles are warned about; intervals
    stay in range; the first ten minutes leave every arm too thin for an interval."""
    out = run_own_process("tests.integration.helpers.report_readers_chdb")
    whole, thin = out["whole"]["doc"], out["thin"]["doc"]
    for doc in (whole, thin):
        ExperimentReport.model_validate(doc)
    assert whole["planted"] == [
        {"arm": "control", "quantity": "ctr", "rank": 1, "value": 0.43},
        {"arm": "swap_1_2", "quantity": "beta", "rank": 1, "value": 0.44},
        {"arm": "swap_1_2", "quantity": "delta", "rank": 1, "value": -0.19},
    ]
    codes = [w["code"] for w in whole["warnings"]]
    assert codes[:2] == ["srm_mismatch", "unweighted"], whole["warnings"]
    assert "0 of 0 profiled installs" in whole["warnings"][1]["message"]
    in_range(whole)
    assert all(a["ctr_c1_ci_low"] is not None for a in whole["arms"])  # enough units: intervals

    planted = {(r["arm"], r["quantity"], r["rank"]): r for r in out["whole"]["csv"] if r["table"] == "arms"}
    assert planted[("swap_1_2", "delta", 1)]["planted"] == -0.19
    assert planted[("swap_1_2", "beta", 1)]["value"] == next(
        a["beta_c1"] for a in whole["arms"] if a["arm"] == "swap_1_2"
    )

    assert thin["planted"] == whole["planted"]  # the same selection's subset and baseline
    thin_arms = {w["message"].split(":")[0] for w in thin["warnings"] if w["code"] == "too_few_units"}
    assert thin_arms >= {f"Figure 3, arm {a['arm']}" for a in thin["arms"]}
    for arm in thin["arms"]:
        assert arm["ctr_c1_ci_low"] is None and arm["ctr_c1_ci_high"] is None
        if arm["units"] == 0:
            assert arm["ctr_c1"] is None  # no units: no estimate, not 0.000 [0.000, 0.000]


def cli(service: Service, *args: str) -> str:
    from typer.testing import CliRunner

    from auditstream.cli import app

    base = ["report", "experiment", EXP, "--url", service.url, "--api-key", service.api_key]
    result = CliRunner().invoke(app, [*base, *args], terminal_width=300)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def skewed(service: Service) -> Service:
    """A study registered with equal weights, simulated 40/15/15/10/10/10: its kept clicks
    fail the SRM test."""
    body = {
        "experiment_id": EXP,
        "engines": ["google", "bing"],
        "arms": {arm: 1 for arm, _ in DEFAULT_ARMS},
        "salt": "salt-readers",
        "start": "2026-01-01",
    }
    headers = {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}
    created = http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers)
    assert created.status in (200, 201), created.body
    post_study(service, TrafficConfig(experiment_id=EXP, seed=17, installs=200), 8_000)
    return service


def test_csv_holds_every_table_and_the_table_its_warnings(skewed: Service, tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(cli(skewed, "--format", "csv", "--ranks", "3"))))
    kinds = {(r["table"], r["quantity"]) for r in rows}
    for quantity in ("ctr", "delta", "beta", "units", "installs"):
        assert ("arms", quantity) in kinds and ("box_subset", quantity) in kinds, quantity
    assert {("element_shares", "organic"), ("preprocessing", "kept_clicks")} <= kinds
    assert ("warnings", "srm_mismatch") in kinds
    doc = orjson.loads(cli(skewed, "--format", "json", "--ranks", "3"))
    swap = next(a for a in doc["arms"] if a["arm"] == "swap_1_2")
    beta = next(
        r
        for r in rows
        if (r["table"], r["arm"], r["quantity"], r["rank"]) == ("arms", "swap_1_2", "beta", "2")
    )
    assert float(beta["value"]) == swap["beta_c2"] and float(beta["ci_high"]) == swap["beta_c2_ci_high"]
    assert doc["warnings"][0]["code"] == "srm_mismatch" and doc["planted"] is None
    in_range(doc)

    table = cli(skewed, "--ranks", "3", "--intervals", "sequential")
    assert "CTR with 95% confidence sequence" in table
    assert "decision, swap_1_2: delta c1 excluded zero" in table  # a day, or "not yet"
    assert "warning (srm_mismatch): sample ratio mismatch" in table

    targets = tmp_path / "targets.csv"
    targets.write_text("dimension,bin,share\nage_band,18-24,0.5\nage_band,55-64,0.5\n")
    weighted = orjson.loads(cli(skewed, "--format", "json", "--reweight", str(targets)))
    assert [w["code"] for w in weighted["warnings"]][:2] == ["srm_mismatch", "unweighted"]
