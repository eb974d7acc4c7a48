"""``auditstream figures`` refuses bad options and an unreachable service with a message and
an exit code, never a traceback (its success is tests/integration/test_figures.py)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from auditstream.cli import app
from tests.helpers import free_port

runner = CliRunner()


def test_bad_options_exit_2(tmp_path: Path) -> None:
    out = ["--out", str(tmp_path)]
    result = runner.invoke(app, ["figures", "x", *out, "--paper", "nature", "--api-key", "k"])
    assert result.exit_code == 2 and "--paper must be one of" in result.output
    result = runner.invoke(app, ["figures", "x", *out], env={"AUDITSTREAM_API_KEY": ""})
    assert result.exit_code == 2 and "--api-key" in result.output


def test_a_service_that_is_not_there_exits_1(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for paper in ("powermeter", "personalization", "autocomplete"):
        args = ["figures", "x", "--out", str(tmp_path), "--paper", paper, "--url", url, "--api-key", "k"]
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (paper, result.output)
        assert "cannot reach" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "index.html").exists()
