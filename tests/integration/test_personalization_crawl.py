"""Done-means 3 of the personalization issue: the lock-step crawler against the fake engine,
through ingest, Kafka, the worker and ClickHouse, measures the planted personalization
rate and the noise floor within 2 percentage points.

The fake engine's pages are seeded by (profile, query, round), so the run is
reproducible. With 300 rounds, 10 ranks and two personalized profiles, the measured
rates scatter around the planted ones with a standard deviation of 0.7 points (noise
floor) and 0.8 points (personalization) over seeds, so 2 points is about 2.5 standard
deviations (40 seeds simulated offline: none outside). The test also checks that
ClickHouse holds exactly what the engine served, page by page.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.serp.study import load_study
from streams.stats.similarity import changed_at_rank
from tests.fakes.serp_engine import FakeEngineScript, FakeSerpEngine
from tests.helpers import Service, wait_for
from tests.test_collectors.test_serp_crawl import study_file

pytestmark = pytest.mark.integration
STUDY, ROUNDS = "pers-crawl", 300
PROFILES = (
    ("control", "control", ""),
    ("twin", "control_twin", ""),
    ("login-a", "treatment", "logged_in"),
    ("login-b", "treatment", "logged_in"),
    ("boston", "treatment", "location=Boston"),
)


def test_crawler_measures_planted_personalization(tmp_path: Path, service: Service) -> None:
    path, start = study_file(tmp_path, study_id=STUDY, rounds=ROUNDS, spacing='"120ms"', profiles=PROFILES)
    study = load_study(path)
    script = FakeEngineScript(
        treatments={p.id: p.treatment for p in study.profiles},
        grid=(start, study.study.spacing),
        noise=0.10,
        personalization=0.15,
        personalized_treatment="logged_in",
        seed=11,
    )
    with FakeSerpEngine() as engine:
        engine.script = script
        args = ["crawl", "serp", "--study", str(path), "--url", service.url, "--api-key", service.api_key]
        args += ["--endpoint", f"google={engine.base_url}", "--data-dir", str(tmp_path / "data")]
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        served = engine.served

    def settled() -> list[dict]:
        rows = service.sql(f"SELECT state, skew_ms FROM personalization_rounds WHERE study_id = '{STUDY}'")
        return rows if len(rows) == ROUNDS and all(r["state"] == "complete" for r in rows) else []

    rounds = wait_for(settled, 120, "every round compared")
    assert max(r["skew_ms"] for r in rounds) < 100  # lock-step, measured from the events

    # Exactly what the engine served: recount changed-at-rank from the served pages.
    pages: dict[tuple[int, str], tuple[str, ...]] = {(s.round, s.profile): s.organic for s in served}
    recount: dict[str, list[int]] = defaultdict(list)
    for r in range(ROUNDS):
        control = pages[(r, "control")]
        recount["noise"] += changed_at_rank(control, pages[(r, "twin")])
        for profile in ("login-a", "login-b"):
            recount["logged_in"] += changed_at_rank(control, pages[(r, profile)])
    by_treatment = {
        row["treatment"]: row
        for row in service.sql(f"SELECT * FROM personalization_by_treatment WHERE study_id = '{STUDY}'")
    }
    login = by_treatment["logged_in"]
    noise_share = sum(recount["noise"]) / len(recount["noise"])
    login_share = sum(recount["logged_in"]) / len(recount["logged_in"])
    assert login["changed_noise"] == pytest.approx(noise_share, abs=1e-9)
    assert login["changed"] == pytest.approx(login_share, abs=1e-9)

    # And what was planted, within 2 percentage points.
    assert login["changed_noise"] == pytest.approx(script.expected_changed_fraction("", ""), abs=0.02)
    assert login["personalization"] == pytest.approx(script.expected_personalization("logged_in"), abs=0.02)
    assert by_treatment["location=Boston"]["personalization"] == pytest.approx(0.0, abs=0.02)
