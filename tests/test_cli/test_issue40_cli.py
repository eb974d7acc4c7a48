"""Small things a new user met (issue 40): what `experiment list`, `parse suggestions` and
`--help` print."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditstream.cli import app, experiment

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocomplete"
runner = CliRunner()
REGISTRY = [
    {"experiment_id": "demo", "status": "running", "start": "2026-11-01", "end": None,
     "engines": ["google", "bing"], "arms": {"control": 0.4, "swap_1_2": 0.3, "hide_ads_box": 0.3},
     "unit_mode": "click"},
    {"experiment_id": "mine", "status": "stopped", "start": "2026-11-02", "end": "2026-11-20",
     "engines": ["google"], "arms": {"control": 4.0, "swap_1_2": 3.0, "hide_ads_box": 3.0},
     "unit_mode": "click"},
]  # fmt: skip


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    def call_api(url: str, api_key: str | None, method: str, path: str, body: Any = None) -> Any:
        assert (method, path) == ("GET", "/v1/experiments")
        return REGISTRY

    monkeypatch.setattr(experiment, "call_api", call_api)


def list_as(fmt: str) -> str:
    result = runner.invoke(app, ["experiment", "list", "--api-key", "k", "--format", fmt], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_experiment_list_shows_lists_comma_joined_and_weights_as_shares(registry: None) -> None:
    """The demo registers weights 0.4, 0.3, 0.3 and a person 4, 3, 3: both are the same
    allocation, listed alike; no Python repr (['google', 'bing']) in the table or the CSV."""
    rows = list(csv.reader(io.StringIO(list_as("csv"))))
    assert rows[0] == ["experiment_id", "status", "start", "end", "engines", "arms", "unit_mode"]
    assert rows[1][4] == "google, bing" and rows[2][4] == "google"
    assert rows[1][5] == rows[2][5] == "control=0.4, swap_1_2=0.3, hide_ads_box=0.3"
    table = list_as("table")
    assert "google, bing" in table and "control=0.4, swap_1_2=0.3" in table
    assert "['" not in table and "{'" not in table and "4.0" not in table
    records = json.loads(list_as("json"))
    assert records[0]["engines"] == ["google", "bing"]
    assert records[1]["arms"] == {"control": 0.4, "swap_1_2": 0.3, "hide_ads_box": 0.3}


def test_parse_suggestions_exits_1_on_a_body_it_cannot_read() -> None:
    result = runner.invoke(
        app, ["parse", "suggestions", "--format", "psy-ab", str(FIXTURES / "google_psyab_truncated.json")]
    )
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["status"] == "error"  # the parse is still printed
    said = " ".join(result.output.split())
    assert "status error: no google psy-ab suggestions could be read (not JSON" in said


def test_every_command_is_in_a_help_panel_by_what_a_user_wants_to_do() -> None:
    from auditstream import cli

    panels = (cli.RUN, cli.COLLECT, cli.ANALYSE, cli.MANAGE)
    entries = [(c.name, c.rich_help_panel) for c in cli.app.registered_commands]
    entries += [(g.name, g.rich_help_panel) for g in cli.app.registered_groups]
    assert [name for name, panel in entries if panel not in panels] == []  # a new command needs one
    result = runner.invoke(app, ["--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = result.output
    order = ["Run the service", "│ up ", "Collect data", "│ crawl ", "Analyse", "│ report ", "Manage"]
    assert [text.index(word) for word in order] == sorted(text.index(word) for word in order)
    assert "─ Commands ─" not in text
