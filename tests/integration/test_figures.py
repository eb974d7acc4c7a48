"""``auditstream figures`` on a simulated seven-arm Google+Bing study (docs/reproducing.md's
registration) and small personalization and autocomplete studies: every listed figure is
written, and each CSV holds the numbers the report commands give, fetched on their own."""

from __future__ import annotations

import csv
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.simulate.autocomplete_traffic import CrawlConfig
from collectors.simulate.extension_traffic import TrafficConfig
from tests.helpers import Service, http, post_study, report_json, wait_for

pytestmark = pytest.mark.integration
EXP, PERS, CRAWLS = "figures-pm", "figures-pers", "figures-rai"
ARMS = {"control": 4.0, "swap_1_2": 1.0, "swap_1_3": 1.0, "swap_2_3": 1.0, "hide_box": 1.0}
ARMS |= {"hide_ads_box": 1.0, "hide_ads_box_swap_1_2": 1.0}
POWERMETER = ("figure3_google", "figure3_bing", "figure4", "figure5", "figure6", "figure8", "figure9")
PERSONALIZATION = {
    "figure5_by_rank": "by_rank",
    "figures6_11_by_treatment": "by_treatment",
    "figure12_consistency_days": "consistency_days",
    "figure13_consistency_categories": "consistency_category_days",
    "figure14_category_cdf": "category_cdf",
    "figure15_grouped": "by_rank_grouped",
    "figure16_rank1": "rank1",
}
AUTOCOMPLETE = {
    "figure2_depth": "depth",
    "figure3_degrees": "degrees",
    "figure4_lengths": "lengths",
    "figure5_churn": "churn",
    "figure6_survival": "survival",
    "figure7_nmi": "nmi",
}
PERS_ROUNDS, AC_ROUNDS = 40, 6


def _cli(service: Service, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])
    assert result.exit_code == 0, result.output
    return result.output


def _register(service: Service) -> None:
    body = {
        "experiment_id": EXP,
        "engines": ["google", "bing"],
        "arms": ARMS,
        "engine_arms": {"bing": ["control", "swap_1_2"]},
        "salt": "figures-pm-salt",
        "start": datetime.now(UTC).date().isoformat(),
        "burn_in_days": 4,
    }
    headers = {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201


def _simulate(service: Service) -> None:
    """The three studies, each waited on until the figures' views hold all of it."""
    _register(service)
    config = TrafficConfig(
        experiment_id=EXP, salt="figures-pm-salt", arms=tuple(ARMS.items()),
        engines=(("google", 0.7), ("bing", 0.3)), engine_arms={"bing": ("control", "swap_1_2")},
        installs=400, p_box=0.15, seed=7,
    )  # fmt: skip
    post_study(service, config, 30_000, batch=250)
    _cli(service, "simulate", "personalization", "--study", PERS, "--rounds", str(PERS_ROUNDS))
    _cli(service, "simulate", "autocomplete", "--study", CRAWLS, "--rounds", str(AC_ROUNDS))
    wait_for(
        lambda: (
            service.scalar(
                "SELECT sum(pairs) FROM personalization_by_treatment "
                f"WHERE study_id = '{PERS}' AND links = 'primary'"
            )
            == 2 * PERS_ROUNDS
        ),  # two treatments against the control, every round
        120,
        "every personalization round compared",
    )
    crawls = AC_ROUNDS * len(CrawlConfig(study=CRAWLS).roots)
    wait_for(
        lambda: (
            service.scalar(f"SELECT count() FROM autocomplete_crawls WHERE crawl_id LIKE '{CRAWLS}-%'")
            == crawls
        ),
        120,
        "every autocomplete crawl analysed",
    )


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _text(value: Any) -> str:
    """A JSON value as the CSV writes it."""
    return "" if value is None else str(value)


def _check_powermeter(service: Service, folder: Path) -> None:
    reports: dict[tuple[str, str, str], dict[str, Any]] = {}
    for name in POWERMETER[:5]:
        rows = _csv(folder / f"{name}.csv")
        assert rows, name
        for row in rows:
            selection = (row["engine"], row["subset"], row["baseline"])
            if selection not in reports:
                reports[selection] = report_json(
                    service,
                    EXP,
                    "--engine",
                    row["engine"],
                    "--subset",
                    row["subset"],
                    "--baseline",
                    row["baseline"],
                )
            doc = reports[selection]
            key = row["key"]
            table = doc["arms"] if key.startswith(("ctr_", "delta_", "beta_")) else doc["element_shares"]
            (want,) = [a for a in table if a["arm"] == row["arm"]]
            got = (row["value"], row["ci_low"], row["ci_high"])
            assert got == tuple(_text(want.get(k)) for k in (key, f"{key}_ci_low", f"{key}_ci_high")), (
                name,
                row,
            )
    pages = orjson.loads(_cli(service, "report", "pages", EXP, "--format", "json"))
    assert [list(r.values()) for r in _csv(folder / "figure8.csv")] == [
        [_text(v) for v in p.values()] for p in pages
    ]
    assert {r["arm"] for r in _csv(folder / "figure3_bing.csv")} == {"control", "swap_1_2"}


def _check_sections(folder: Path, figures: dict[str, str], doc: dict[str, list[dict[str, Any]]]) -> None:
    for name, section in figures.items():
        rows = _csv(folder / f"{name}.csv")
        want = [{c: _text(r[c]) for c in (rows[0] if rows else {})} for r in doc[section]]
        assert rows == want, name
        assert len(rows) == len(doc[section]), name


def test_figures_of_the_three_papers(service: Service, tmp_path: Path) -> None:
    _simulate(service)
    out = tmp_path / "figures"
    _cli(service, "figures", EXP, "--out", str(out), "--paper", "all", "--study", PERS, "--crawls", CRAWLS)
    for paper, names in (
        ("powermeter", POWERMETER),
        ("personalization", PERSONALIZATION),
        ("autocomplete", AUTOCOMPLETE),
    ):
        for name in names:
            for ext in ("svg", "png", "csv"):
                assert (out / paper / f"{name}.{ext}").stat().st_size > 0, (paper, name, ext)
    index = (out / "index.html").read_text()
    assert "Figure 3 (bing)" in index
    assert "Degree correlation across engines" in index and "Survival by suggestion length" in index
    assert "Personalized line: " in index
    _check_powermeter(service, out / "powermeter")
    pers = orjson.loads(_cli(service, "report", "personalization", "--study", PERS, "--format", "json"))
    _check_sections(out / "personalization", PERSONALIZATION, pers)
    ac = orjson.loads(_cli(service, "report", "autocomplete", "--study", CRAWLS, "--format", "json"))
    _check_sections(out / "autocomplete", AUTOCOMPLETE, ac)
    _check_board(service, out)


def _check_board(service: Service, out: Path) -> None:
    """The board's figure route draws the same figure from the same answers: the same bytes."""
    headers = {"Authorization": f"Bearer {service.api_key}"}
    base = service.url + "/v1/board/figures"
    for paper, name, query in (
        ("powermeter", "figure3_bing", f"experiment={EXP}"),
        ("powermeter", "figure5", f"experiment={EXP}"),
        ("personalization", "figure5_by_rank", f"study={PERS}"),
        ("personalization", "figure15_grouped", f"study={PERS}"),
        ("autocomplete", "figure5_churn", f"study={CRAWLS}"),
    ):
        with urllib.request.urlopen(
            urllib.request.Request(f"{base}/{paper}/{name}?{query}", headers=headers)
        ) as resp:
            assert resp.headers["Content-Type"].startswith("image/svg+xml")
            assert resp.read() == (out / paper / f"{name}.svg").read_bytes(), (paper, name)
    unknown = http("GET", f"{base}/powermeter/figure7?experiment={EXP}", headers=headers)
    assert unknown.status == 404 and unknown.body["error"] == "not_found"
    assert http("GET", f"{base}/nature/figure1?study=x", headers=headers).status == 404


def test_unknown_experiment_and_service_down(service: Service, tmp_path: Path) -> None:
    args = ["figures", "no-such-experiment", "--out", str(tmp_path), "--api-key", service.api_key]
    result = CliRunner().invoke(app, [*args, "--url", service.url])
    assert (
        result.exit_code == 2
        and "no units for experiment" in result.output
        and "Traceback" not in result.output
    )
    result = CliRunner().invoke(app, [*args, "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 1 and "cannot reach" in result.output
