"""The analyst views give the same Figure-3 numbers, CIs included, as `report experiment`."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, post_study

pytestmark = pytest.mark.integration
EXP = "views"


def test_views_equal_the_report(service: Service) -> None:
    config = TrafficConfig(experiment_id=EXP, seed=77, installs=200)
    post_study(service, config, 10_000, batch=200)
    result = CliRunner().invoke(
        app,
        [
            "report",
            "experiment",
            EXP,
            "--url",
            service.url,
            "--api-key",
            service.api_key,
            "--format",
            "json",
            "--ranks",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    report = {a["arm"]: a for a in orjson.loads(result.stdout)["arms"]}

    today = datetime.now(UTC).date().isoformat()
    params = (
        f"experiment = '{EXP}', engine = 'google', subset = 'all', since = '2000-01-01', "
        f"until = '{today}', burn_in_days = 4, seed = 0"
    )
    for row in service.sql(f"SELECT * FROM experiment_ctr({params}) WHERE position <= 3"):
        mine = report[row["arm"]]
        i = row["position"]
        assert row["units"] == mine["units"]
        assert row["ctr"] == pytest.approx(mine[f"ctr_c{i}"], abs=1e-6)
        assert row["ci_low"] == pytest.approx(mine[f"ctr_c{i}_ci_low"], abs=1e-6)
        assert row["ci_high"] == pytest.approx(mine[f"ctr_c{i}_ci_high"], abs=1e-6)
    gaps = service.sql(f"SELECT * FROM experiment_gap({params}, baseline = 'control') WHERE position <= 3")
    assert {g["arm"] for g in gaps} == set(report) - {"control"}
    for row in gaps:
        mine = report[row["arm"]]
        i = row["position"]
        assert row["delta"] == pytest.approx(mine[f"delta_c{i}"], abs=1e-6)
        assert row["delta_ci_low"] == pytest.approx(mine[f"delta_c{i}_ci_low"], abs=1e-6)
        assert row["delta_ci_high"] == pytest.approx(mine[f"delta_c{i}_ci_high"], abs=1e-6)
        assert row["beta"] == pytest.approx(mine[f"beta_c{i}"], abs=1e-6)


def test_view_subsets_and_baseline_follow_the_report(service: Service) -> None:
    today = datetime.now(UTC).date().isoformat()
    result = CliRunner().invoke(
        app,
        [
            "report",
            "experiment",
            EXP,
            "--url",
            service.url,
            "--api-key",
            service.api_key,
            "--format",
            "json",
            "--subset",
            "ads_or_box",
            "--baseline",
            "hide_ads_box",
            "--ranks",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    report = {a["arm"]: a for a in orjson.loads(result.stdout)["arms"]}
    params = (
        f"experiment = '{EXP}', engine = 'google', subset = 'ads_or_box', since = '2000-01-01', "
        f"until = '{today}', burn_in_days = 4, seed = 0, baseline = 'hide_ads_box'"
    )
    gaps = service.sql(f"SELECT * FROM experiment_gap({params}) WHERE position = 1")
    assert {g["arm"] for g in gaps} == set(report) - {"hide_ads_box"}
    for row in gaps:
        assert row["delta"] == pytest.approx(report[row["arm"]]["delta_c1"], abs=1e-6)
        assert row["delta_ci_low"] == pytest.approx(report[row["arm"]]["delta_c1_ci_low"], abs=1e-6)
    nothing = params.replace("ads_or_box", "no-such-subset").replace(", baseline = 'hide_ads_box'", "")
    assert service.sql(f"SELECT * FROM experiment_ctr({nothing})") == []
