"""``auditstream parse serp`` and the help and checks of ``auditstream crawl serp``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import collectors.serp
from auditstream.cli import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "serp"
EXAMPLE = Path(collectors.serp.__file__).parent / "examples" / "study.toml"
runner = CliRunner()


def flat(text: str) -> str:
    return " ".join(text.split())


def test_parse_serp_prints_the_page_as_json() -> None:
    result = runner.invoke(app, ["parse", "serp", "--engine", "google", str(FIXTURES / "google_coffee.html")])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"status", "result_estimate", "language", "coverage", "components"}
    assert (doc["status"], doc["result_estimate"], doc["language"]) == ("ok", 2_140_000_000, "en")
    assert doc["coverage"] == round(14 / 15, 4)  # 15 blocks (two top ads are one); "Things to know" unclaimed
    assert doc["components"][3] == {
        "rank": 4,
        "section": "main",
        "type": "organic",
        "url": "https://en.wikipedia.org/wiki/Coffee",
        "title": "Coffee - Wikipedia",
    }
    assert len(doc["components"]) == 16


def test_parse_serp_reads_stdin_and_reports_a_captcha() -> None:
    body = (FIXTURES / "bing_captcha.html").read_bytes()
    result = runner.invoke(app, ["parse", "serp", "--engine", "bing", "-"], input=body)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["status"], doc["components"]) == ("captcha", [])
    assert doc["detail"] == "CAPTCHA / unusual traffic page"


def test_parse_serp_rejects_an_unknown_engine_and_a_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(app, ["parse", "serp", "--engine", "yahoo", str(FIXTURES / "google_coffee.html")])
    assert result.exit_code == 2 and "unknown engine 'yahoo'" in flat(result.output)
    missing = runner.invoke(app, ["parse", "serp", str(tmp_path / "nope.html")])
    assert missing.exit_code == 2 and "cannot read" in flat(missing.output)


def test_crawl_serp_help_explains_the_study_and_lock_step() -> None:
    result = runner.invoke(app, ["crawl", "serp", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = flat(result.output)
    options = ("--study", "--out", "--url", "--api-key", "--endpoint", "--check")
    for words in (*options, "control_twin", "sent_at"):
        assert words in text
    assert "collectors/serp/examples/study.toml" in text
    reparse = flat(runner.invoke(app, ["crawl", "reparse", "--help"], terminal_width=200).output)
    assert "--study" in reparse and "--crawl-id" in reparse


def test_crawl_serp_check_shows_the_schedule_without_fetching() -> None:
    result = runner.invoke(app, ["crawl", "serp", "--study", str(EXAMPLE), "--check"], terminal_width=200)
    assert result.exit_code == 1, result.output  # its placeholders (test_serp_readiness.py)
    text = flat(result.output)
    assert "study hannak-login-location on google: 5 queries" in text
    assert "35 rounds, spacing 660s" in text and "hannak-login-location-r0000 at" in text


def test_crawl_serp_refuses_a_bad_study_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(EXAMPLE.read_text().replace('role = "control_twin"', 'role = "control"'))
    result = runner.invoke(app, ["crawl", "serp", "--study", str(bad), "--check"], terminal_width=200)
    assert result.exit_code == 2
    assert "exactly one profile with role control and one with control_twin" in flat(result.output)
    wrong = runner.invoke(
        app, ["crawl", "serp", "--study", str(EXAMPLE), "--endpoint", "bing=http://127.0.0.1:1", "--check"]
    )
    assert wrong.exit_code == 2 and "the study runs google" in flat(wrong.output)


def test_crawl_reparse_needs_exactly_one_of_crawl_id_and_study(tmp_path: Path) -> None:
    result = runner.invoke(app, ["crawl", "reparse", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2 and "exactly one of --crawl-id" in flat(result.output)
    missing = runner.invoke(app, ["crawl", "reparse", "--study", "nope", "--data-dir", str(tmp_path)])
    assert missing.exit_code == 2 and "no saved study 'nope'" in flat(missing.output)
