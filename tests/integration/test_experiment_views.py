"""The analyst views give the same Figure-3 numbers, CIs included, as `report experiment`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analytics.stats.arrangement_table import MIN_INSTALLS, MIN_UNITS
from auditstream.cli import app
from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, post_study, report_json, wait_for

pytestmark = pytest.mark.integration
EXP = "views"


@pytest.fixture(scope="module")
def study(service: Service) -> Service:
    post_study(service, TrafficConfig(experiment_id=EXP, seed=77, installs=200), 10_000, batch=200)
    return service


def test_views_equal_the_report(study: Service) -> None:
    service = study
    report = {a["arm"]: a for a in report_json(service, EXP, "--ranks", "3")["arms"]}

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


def test_view_subsets_and_baseline_follow_the_report(study: Service) -> None:
    service = study
    today = datetime.now(UTC).date().isoformat()
    doc = report_json(service, EXP, "--subset", "ads_or_box", "--baseline", "hide_ads_box", "--ranks", "1")
    report = {a["arm"]: a for a in doc["arms"]}
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


def test_time_windows_use_the_ten_second_slices(study: Service) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    yesterday = (now - timedelta(days=1)).date().isoformat()  # robust to a run across midnight
    whole_day = report_json(study, EXP, "--since", yesterday, "--until", now.date().isoformat())
    hour = report_json(
        study,
        EXP,
        "--since",
        (now - timedelta(hours=1)).isoformat(timespec="minutes").split("+")[0],
        "--until",
        (now + timedelta(minutes=5)).isoformat(timespec="minutes").split("+")[0],
    )
    assert hour["arms"] == whole_day["arms"]  # everything was posted within the last hour
    before = CliRunner().invoke(
        app,
        [
            "report",
            "experiment",
            EXP,
            "--url",
            study.url,
            "--api-key",
            study.api_key,
            "--since",
            "2020-01-01T00:00",
            "--until",
            "2020-01-01T01:00",
        ],
    )
    assert before.exit_code == 1 and "no units" in before.output


def timeline_json(service: Service, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        app,
        [
            "report",
            "timeline",
            EXP,
            "--url",
            service.url,
            "--api-key",
            service.api_key,
            "--format",
            "json",
            *args,
        ],
    )
    assert result.exit_code == 0, result.output
    return dict(orjson.loads(result.stdout))


@pytest.mark.parametrize("window", ["1m", "1h", "1d"])
def test_windows_partition_the_study_and_match_the_view(study: Service, window: str) -> None:
    service = study
    whole = {a["arm"]: a["units"] for a in report_json(service, EXP, "--ranks", "1")["arms"]}
    doc = timeline_json(service, "--window", window)
    assert doc["window_seconds"] == {"1m": 60, "1h": 3600, "1d": 86400}[window]
    summed: dict[str, int] = {}
    for w in doc["windows"]:
        for arm in w["arms"]:
            summed[arm["arm"]] = summed.get(arm["arm"], 0) + arm["units"]
            if arm["units"] < MIN_UNITS or arm["installs"] < MIN_INSTALLS:  # a thin window: no interval
                assert arm["ctr_c1_ci_low"] is None and arm["ctr_c1_ci_high"] is None
            else:
                assert arm["ctr_c1_ci_low"] <= arm["ctr_c1"] <= arm["ctr_c1_ci_high"]
    assert summed == whole  # every unit in exactly one window

    view = service.sql(
        f"SELECT toString(window_start) AS ws, arm, units, ctr, ci_low, ci_high FROM experiment_ctr_windows("
        f"experiment = '{EXP}', engine = 'google', subset = 'all', window_seconds = {doc['window_seconds']}, "
        "since = '2000-01-01 00:00:00', until = '2100-01-01 00:00:00', burn_in_days = 4, seed = 0) "
        "WHERE position = 1"
    )
    mine = {
        (datetime.fromisoformat(w["window_start"]).strftime("%Y-%m-%d %H:%M:%S"), a["arm"]): a
        for w in doc["windows"]
        for a in w["arms"]
    }
    assert {(r["ws"], r["arm"]) for r in view} == set(mine)
    for row in view:
        got = mine[(row["ws"], row["arm"])]
        assert row["units"] == got["units"]
        if got["ctr_c1_ci_low"] is None:  # thin: no interval in the report, the bootstrap's in the view
            assert row["ctr"] == pytest.approx(got["ctr_c1"], abs=1e-6)
            continue
        assert (row["ctr"], row["ci_low"], row["ci_high"]) == pytest.approx(
            (got["ctr_c1"], got["ctr_c1_ci_low"], got["ctr_c1_ci_high"]), abs=1e-6
        )


def test_timeline_refuses_a_bad_window(study: Service) -> None:
    result = CliRunner().invoke(
        app, ["report", "timeline", EXP, "--url", study.url, "--api-key", study.api_key, "--window", "15s"]
    )
    assert result.exit_code == 2 and "multiple of 10 seconds" in result.output


def test_page_composition_figure8(service: Service) -> None:
    """Hand-made pages with known composition: the view's shares are the hand counts."""

    def page(n: int, kind: str, ads: int, box: str, ssr: list[int], page_index: int = 0) -> dict:
        event = {
            "type": kind, "event_id": f"00000000-0000-4000-8000-{n:012d}", "schema_version": 1,
            "sent_at": datetime.now(UTC).isoformat(), "experiment_id": "composition", "arm": "control",
            "engine": "bing", "install_id": "composition-1", "install_day": "2026-01-01",
            "extension_version": "1.5.0", "page_index": page_index, "n_organic": 10, "ads_top_count": ads,
            "box": box, "ssr_positions": ssr, "n_candidates": 1000, "identified": True, "ui_lang": "de",
        }  # fmt: skip
        if kind == "click":
            event.update(element_type="other")
        return event

    views = [page(1, "serp_view", 2, "none", []), page(2, "serp_view", 0, "top", [2]),
             page(3, "serp_view", 1, "side", [5]), page(4, "serp_view", 0, "none", []),
             page(5, "serp_view", 3, "top", [], page_index=1)]  # fmt: skip  # page 2: left out
    clicks = [page(6, "click", 1, "none", [2]), page(7, "click", 0, "none", [])]
    assert service.post(views + clicks).status == 202
    wait_for(
        lambda: len(service.sql("SELECT * FROM page_composition WHERE experiment_id = 'composition'")) == 2,
        60,
        "composition rows",
    )
    found = service.sql("SELECT * FROM page_composition WHERE experiment_id = 'composition'")
    rows = {r["pages_of"]: r for r in found}
    shown = rows["serp_view"]
    assert shown["pages"] == 4 and shown["engine"] == "bing"
    shares = ("share_with_ads", "share_with_box", "share_with_ssr", "share_with_ssr_at_2")
    assert tuple(shown[k] for k in shares) == (0.5, 0.5, 0.5, 0.25)
    clicked = rows["click"]
    assert (clicked["pages"], clicked["share_with_ads"], clicked["share_with_ssr_at_2"]) == (2, 0.5, 0.5)

    from typer.testing import CliRunner

    from auditstream.cli import app

    args = ["report", "pages", "composition", "--url", service.url, "--api-key", service.api_key]
    result = CliRunner().invoke(app, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    printed = {r["pages_of"]: r for r in orjson.loads(result.stdout)}
    assert printed["serp_view"]["pages"] == 4 and printed["serp_view"]["share_with_ssr_at_2"] == 0.25
    assert printed["click"]["share_with_ads"] == 0.5
    missing = CliRunner().invoke(
        app, ["report", "pages", "nope", "--url", service.url, "--api-key", service.api_key]
    )
    assert missing.exit_code == 1 and "no result pages" in missing.output
