"""Issue 17: the example query set in the paper's shape (``collectors/serp/examples/query-set.toml``,
12 categories as in Hannak et al.'s Table 1) through the whole pipeline, and the report's
``by_category`` section on its categories.

A short crawl against the fake engine: the example's queries, three of each category
(36 rounds), a control, its twin, a logged-in profile (the engine personalizes 30% of
its ranks) and a location profile (not personalized). ``report personalization``
must list every category of the example for both treatments, and its figures must
equal a recount from the stored pages, per category, written here without the
service's code.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.journal import read_journal
from collectors.serp.study import load_study
from tests.fakes.serp_engine import FakeEngineScript, FakeSerpEngine
from tests.fakes.serp_study import PROFILES_4, study_file
from tests.helpers import Service, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.timing]  # lock-step rounds with deadlines: run alone
EXAMPLE = Path(__file__).resolve().parents[2] / "collectors" / "serp" / "examples" / "query-set.toml"
STUDY, PER_CATEGORY, RANKS = "query-set", 3, 10


def organic(results: list[dict]) -> tuple[str, ...]:
    return tuple(r["url"] for r in sorted(results, key=lambda r: r["rank"]) if r["type"] == "organic")


def changed(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    return statistics.mean(
        int((a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)) for i in range(RANKS)
    )


def test_the_example_query_sets_categories_are_reported(tmp_path: Path, service: Service) -> None:
    example = load_study(EXAMPLE)
    by_category: dict[str, list[str]] = defaultdict(list)
    for q in example.queries:
        by_category[q.category].append(q.text)
    queries = [(text, cat) for cat, texts in by_category.items() for text in texts[:PER_CATEGORY]]
    path, start = study_file(
        tmp_path, study_id=STUDY, rounds=len(queries), spacing='"150ms"', profiles=PROFILES_4, queries=queries
    )
    study = load_study(path)
    script = FakeEngineScript(
        treatments={p.id: p.treatment for p in study.profiles},
        grid=(start, study.study.spacing),
        noise=0.10,
        personalization=0.3,
        seed=3,
    )
    with FakeSerpEngine(script) as engine:
        args = ["crawl", "serp", "--study", str(path), "--url", service.url, "--api-key", service.api_key]
        args += ["--endpoint", f"google={engine.base_url}", "--data-dir", str(tmp_path / "data")]
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output

    # a loaded machine may miss a 150 ms slot; the counts below are over what was recorded
    journal = next((tmp_path / "data").rglob(f"{STUDY}/journal.jsonl"))
    recorded = [r for r in read_journal(journal) if r["kind"] == "round"]
    assert len(recorded) >= 0.9 * len(queries)
    assert {r["category"] for r in recorded} == set(by_category)

    def compared() -> list[dict]:
        rows = service.sql(f"SELECT state FROM personalization_rounds WHERE study_id = '{STUDY}'")
        return rows if len(rows) == len(recorded) and all(r["state"] == "complete" for r in rows) else []

    wait_for(compared, 120, "every recorded round compared")
    args = ["report", "personalization", "--study", STUDY, "--links", "organic", "--format", "json"]
    report = CliRunner().invoke(app, [*args, "--url", service.url, "--api-key", service.api_key])
    assert report.exit_code == 0, report.output
    rows = json.loads(report.output)["by_category"]
    figures = {(row["query_category"], row["treatment"]): row for row in rows}
    assert set(figures) == {(c, t) for c in by_category for t in ("logged_in", "location=Boston")}

    # the recount, per category, from the pages ClickHouse stored
    stored = service.sql(
        "SELECT round_id, profile_id, query_category, results FROM serp_snapshots "
        f"WHERE study_id = '{STUDY}' AND status = 'ok'"
    )
    pages = {(row["round_id"], row["profile_id"]): organic(row["results"]) for row in stored}
    category = {row["round_id"]: row["query_category"] for row in stored}
    pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (round_id, profile), urls in pages.items():
        control = pages.get((round_id, "control"))
        if control is None or profile == "control":
            continue
        kind = {"twin": "noise", "login": "logged_in", "boston": "location=Boston"}[profile]
        pairs[category[round_id], kind].append(changed(control, urls))
    for (cat, treatment), row in figures.items():
        assert row["pairs"] == len(pairs[cat, treatment])
        assert row["changed"] == pytest.approx(statistics.mean(pairs[cat, treatment]), abs=1e-4)
        assert row["changed_noise"] == pytest.approx(statistics.mean(pairs[cat, "noise"]), abs=1e-4)
    # over the 12 categories, the planted personalization shows for logged_in only
    login = statistics.mean(figures[c, "logged_in"]["personalization"] for c in by_category)
    boston = statistics.mean(figures[c, "location=Boston"]["personalization"] for c in by_category)
    assert login == pytest.approx(script.expected_personalization("logged_in"), abs=0.08)
    assert boston == pytest.approx(0.0, abs=0.08)
