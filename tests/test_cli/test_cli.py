from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app

runner = CliRunner()
COMMANDS = [
    [],
    ["up"],
    ["ingest"],
    ["worker"],
    ["store"],
    ["sql"],
    ["report"],
    ["keys"],
    ["experiment"],
    ["experiment", "create"],
    ["experiment", "list"],
    ["experiment", "show"],
    ["experiment", "stop"],
    ["keys", "create"],
    ["keys", "list"],
    ["keys", "revoke"],
    ["db", "migrate"],
    ["schema", "export"],
    ["simulate", "extension"],
    ["figures"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "root")
def test_every_command_has_help(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_keys_lifecycle(tmp_path: Path) -> None:
    created = runner.invoke(
        app, ["keys", "create", "--name", "lab", "--scope", "read", "--data-dir", str(tmp_path)]
    )
    assert created.exit_code == 0, created.output
    secret = created.stdout.strip().splitlines()[-1]
    assert secret.startswith("as_")
    keys = json.loads((tmp_path / "keys.json").read_text())["keys"]
    assert secret not in (tmp_path / "keys.json").read_text() and keys[0]["scopes"] == ["read"]
    listed = runner.invoke(app, ["keys", "list", "--data-dir", str(tmp_path)])
    assert keys[0]["id"] in listed.stdout
    revoked = runner.invoke(app, ["keys", "revoke", keys[0]["id"], "--data-dir", str(tmp_path)])
    assert revoked.exit_code == 0
    bad = runner.invoke(app, ["keys", "revoke", "k_nope", "--data-dir", str(tmp_path)])
    assert bad.exit_code == 2


def test_schema_export_writes_valid_json_schemas(tmp_path: Path) -> None:
    result = runner.invoke(app, ["schema", "export", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in tmp_path.iterdir())
    assert (
        "click.schema.json" in names
        and "event.schema.json" in names
        and "install_profile.schema.json" in names
    )
    assert len(names) == 8  # one per event type, and the union
    click = json.loads((tmp_path / "click.schema.json").read_text())
    assert click["additionalProperties"] is False
    assert "query" not in click["properties"] and "url" not in click["properties"]


def test_bad_setting_is_reported_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUDITSTREAM_PARTITIONS", "0")
    result = runner.invoke(app, ["keys", "list", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "partitions" in result.output


def test_db_migrate_on_embedded_chdb_is_idempotent(tmp_path: Path) -> None:
    first = runner.invoke(app, ["db", "migrate", "--data-dir", str(tmp_path)])
    assert first.exit_code == 0, first.output
    assert "0001_raw_events.sql" in first.output
    second = runner.invoke(app, ["db", "migrate", "--data-dir", str(tmp_path)])
    assert second.exit_code == 0 and "up to date" in second.output


def test_composition() -> None:
    args = ["report", "composition", "--search-share", "0.8", "--topk-share", "0.7", "--beta", "0.44"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "composition 0.2464 (search share 0.8 x top-k share 0.7 x beta 0.44)"
    as_json = runner.invoke(app, [*args, "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc["composition"] == pytest.approx(0.2464) and doc["beta"] == 0.44 and len(doc) == 4
    bad = runner.invoke(
        app, ["report", "composition", "--search-share", "1.8", "--topk-share", "0.7", "--beta", "0.44"]
    )
    assert bad.exit_code == 2


def test_a_quintile_range_is_printed_as_the_about_n_results_it_covers() -> None:
    from auditstream.cli.report import _bucket_range

    # bucket b holds floor(10 log10 N) = b: (59, 69] is N from 10^6 up to (not with) 10^7
    middle = _bucket_range({"column": "n_candidates_bucket", "above": 59, "at_most": 69})
    assert middle == "59 < n_candidates_bucket <= 69 (About N results: from 1,000,000 to under 10,000,000)"
    first = _bucket_range({"column": "n_candidates_bucket", "above": None, "at_most": 9})
    assert first == "0 <= n_candidates_bucket <= 9 (About N results: from 1 to under 10)"
    last = _bucket_range({"column": "n_candidates_bucket", "above": 79, "at_most": None})
    assert last == "79 < n_candidates_bucket (About N results: from 100,000,000 and more)"


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "ftp://host/", "http://", "http://h:99999"])
def test_a_url_that_is_not_http_is_a_usage_error_not_a_traceback(url: str) -> None:
    commands = (["sql", "SELECT 1"], ["experiment", "show", "x"], ["import", "-"], ["simulate", "extension"])
    for args in commands:
        result = runner.invoke(app, [*args, "--url", url, "--api-key", "k"])
        assert result.exit_code == 2, (args, result.output)
        assert "is not an http(s) URL" in result.output and "Traceback" not in result.output


def test_a_path_a_command_cannot_use_is_a_one_line_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for args in (
        ["schema", "export", "--out", str(a_file)],
        ["keys", "create", "--name", "x", "--data-dir", str(a_file)],
    ):
        out = subprocess.run([sys.executable, "-m", "auditstream", *args], capture_output=True, text=True)
        assert out.returncode == 1, out
        assert "error:" in out.stderr and "Traceback" not in out.stderr + out.stdout, out.stderr
