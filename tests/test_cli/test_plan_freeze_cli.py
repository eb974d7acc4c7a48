"""``auditstream plan freeze-quintiles`` without a service: its days are checked before any
request (exit 2), and an answer is shown with each quintile's bucket range."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from auditstream.cli.plan_freeze import _print_frozen, _ranges

runner = CliRunner()
NOWHERE = ["--api-key", "k", "--url", "http://127.0.0.1:9"]


@pytest.mark.parametrize(
    "args",
    [
        ["--until", "2026-02-30"],
        ["--until", "yesterday"],
        ["--until", "2026-01-07", "--since", "2026-13-01"],
        ["--until", "2026-01-07", "--since", "2026-01-08"],
    ],
)
def test_bad_days_exit_2_before_any_request(args: list[str]) -> None:
    result = runner.invoke(app, ["plan", "freeze-quintiles", "e", *args, *NOWHERE])
    assert result.exit_code == 2, result.output
    assert "YYYY-MM-DD" in result.output or "after --until" in result.output


def test_the_quintiles_ranges_are_the_frozen_conditions() -> None:
    assert (
        _ranges([50, 55, 60, 65]) == "q1: (-1, 50]  q2: (50, 55]  q3: (55, 60]  q4: (60, 65]  q5: (65, inf]"
    )


def test_an_answer_is_shown_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    pilot = {
        "since": None, "until": "2026-01-07", "engine": "google", "burn_in_days": 4,
        "quintiles": {"n_candidates": {"kept": [50, 55, 60, 65], "units": 1234}},
    }  # fmt: skip
    version = {"kind": "freeze_quintiles", "reason": "frozen from the pilot start..2026-01-07 by ops"}
    plan = {"version": 2, "sha256": "f" * 64, "history": [{"kind": "registration"}, version]}
    _print_frozen({"experiment_id": "e", "dry_run": False, "pilot": pilot, "plan": plan})
    _print_frozen({"experiment_id": "e", "dry_run": True, "pilot": pilot, "plan": None})
    out = capsys.readouterr().out
    assert "pilot start..2026-01-07" in out and "1234" in out and "(60, 65]" in out
    assert "plan version 2 (freeze_quintiles)" in out and "by ops" in out and "dry run" in out
