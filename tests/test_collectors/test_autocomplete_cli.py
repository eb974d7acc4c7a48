"""``auditstream parse suggestions`` and ``auditstream crawl`` through the CLI runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocomplete"
runner = CliRunner()


def test_parse_suggestions_prints_json() -> None:
    result = runner.invoke(
        app, ["parse", "suggestions", "--engine", "google", str(FIXTURES / "google_psyab_charlie_baker.json")]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["query"] == "charlie baker" and doc["status"] == "ok"
    assert doc["suggestions"][0] == {
        "rank": 1,
        "text": "charlie baker email",
        "self_loop": False,
        "type": "0:22,30",
    }
    assert doc["suggestions"][1]["self_loop"] is True


def test_parse_suggestions_bing_as_from_stdin_with_the_submitted_query() -> None:
    body = (FIXTURES / "bing_as_charlie_baker.html").read_bytes()
    result = runner.invoke(
        app, ["parse", "suggestions", "--engine", "bing", "--query", "charlie baker", "-"], input=body
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["query"] == "charlie baker" and doc["suggestions"][0]["self_loop"] is True


def test_parse_suggestions_reports_blocks() -> None:
    result = runner.invoke(
        app,
        [
            "parse",
            "suggestions",
            "--format",
            "psy-ab",
            "--http-status",
            "429",
            str(FIXTURES / "google_sorry.html"),
        ],
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "query": None,
        "suggestions": [],
        "status": "blocked",
        "detail": "http 429",
    }


@pytest.mark.parametrize(
    "args",
    [["--engine", "yahoo"], ["--engine", "google", "--format", "as"], ["--engine", "bing", "--format", "x"]],
)
def test_parse_suggestions_refuses_unknown_engine_or_format(args: list[str]) -> None:
    result = runner.invoke(app, ["parse", "suggestions", *args, str(FIXTURES / "google_psyab_empty.json")])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    "command",
    [
        ["crawl"],
        ["crawl", "autocomplete"],
        ["crawl", "reparse"],
        ["crawl", "list"],
        ["parse"],
        ["parse", "suggestions"],
    ],
)
def test_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_crawl_autocomplete_help_lists_the_options() -> None:
    result = runner.invoke(app, ["crawl", "autocomplete", "--help"], terminal_width=200)
    for option in (
        "--roots",
        "--engine",
        "--format",
        "--max-depth",
        "--schedule",
        "--endpoint",
        "--out",
        "--resume",
    ):
        assert option in result.output


def test_crawl_refuses_bad_invocations(tmp_path: Path) -> None:
    roots = tmp_path / "roots.txt"
    roots.write_text("charlie baker\n")
    common = ["--state-dir", str(tmp_path / "s"), "--archive-dir", str(tmp_path / "a")]
    cases = [
        [*common, "--out", str(tmp_path / "e.jsonl")],  # no roots
        [*common, "--roots", str(roots)],  # neither --out nor an api key
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--schedule", "9am"],
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--engine", "yahoo"],
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--max-depth", "17"],
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--schedule", "09:00", "--crawl-id", "x"],
        [*common, "--resume", "ac-nope", "--out", "x.jsonl"],
        [*common, "--roots", str(tmp_path / "missing.txt"), "--out", "x.jsonl"],
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--endpoint", "google=no-scheme"],
        [*common, "--roots", str(roots), "--out", "x.jsonl", "--format", "google:as"],
    ]
    for args in cases:
        result = runner.invoke(app, ["crawl", "autocomplete", *args], env={"AUDITSTREAM_API_KEY": ""})
        assert result.exit_code == 2, (args, result.output)
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").iterdir())


def test_crawl_list_on_an_empty_state_dir(tmp_path: Path) -> None:
    result = runner.invoke(app, ["crawl", "list", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
