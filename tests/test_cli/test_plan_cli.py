"""``auditstream plan`` without a service: the local checks of a plan file and ``plan size``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from typer.testing import CliRunner

from analytics.stats.planner import half_width, installs_needed, paper_world
from auditstream.cli import app

runner = CliRunner()


def test_size_from_the_papers_numbers_prints_the_planners_half_widths() -> None:
    result = runner.invoke(app, ["plan", "size", "--half-width", "0.05"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    world = paper_world()
    assert f"{half_width(world, 'delta'):.4f}" in result.output
    assert f"{half_width(world, 'beta', adjusted=True):.4f}" in result.output
    assert str(installs_needed(world, 0.05, "delta")) in result.output
    assert "variance-reduced" in result.output and "85 installs x 150 days" in result.output


def test_size_from_assumptions_given_on_the_command_line() -> None:
    args = ["plan", "size", "--installs", "400", "--days", "30", "--clicks-per-day", "2", "--ctr", "0.5"]
    result = runner.invoke(app, [*args, "--ctr-sd", "0.1", "--mde", "0.03"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "400 installs x 30 days" in result.output and "control CTR 0.5" in result.output


def test_size_refuses_impossible_assumptions() -> None:
    for args in (
        ["--ctr", "1.5"],
        ["--installs", "0"],
        ["--half-width", "0.1", "--mde", "0.1"],
        ["--activity-cv", "-1"],
    ):
        result = runner.invoke(app, ["plan", "size", *args])
        assert result.exit_code == 2, (args, result.output)


def test_size_takes_the_activity_spread() -> None:
    result = runner.invoke(app, ["plan", "size", "--activity-cv", "0.5"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert f"{half_width(replace(paper_world(), activity_cv=0.5), 'delta'):.4f}" in result.output
    assert "activity cv 0.5" in result.output


def test_a_pilots_selection_needs_a_pilot_and_a_service() -> None:
    result = runner.invoke(app, ["plan", "size", "--since", "2026-09-01", "--rank", "2"])
    assert result.exit_code == 2 and "--since, --rank: only with --pilot" in result.output
    unreachable = ["--pilot", "demo", "--url", "http://127.0.0.1:9", "--api-key", "k"]
    result = runner.invoke(app, ["plan", "size", *unreachable])
    assert result.exit_code == 1 and "cannot reach" in result.output


def test_register_refuses_a_bad_file_before_any_request(tmp_path: Path) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(
        'experiment_id = "e"\nprimary = [{ quantity = "delta", arm = "a", rank = 1, subset = "x" }]\n'
    )
    result = runner.invoke(
        app, ["plan", "register", str(path), "--api-key", "k", "--url", "http://127.0.0.1:9"]
    )
    assert result.exit_code == 2 and "unknown subsets" in result.output
    result = runner.invoke(app, ["plan", "register", str(tmp_path / "none.toml"), "--api-key", "k"])
    assert result.exit_code == 2 and "cannot read" in result.output
