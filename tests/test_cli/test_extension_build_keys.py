"""``extension build`` ships only a key whose sole scope is ingest: the key is public once the
extension is installed, so an admin, read or crawler key in it would be handed to anyone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from ingest.api_keys import KeyFile


def build(tmp_path: Path, key: str, *extra: str, study_url: str = "http://127.0.0.1:9") -> tuple[int, str]:
    args = ["extension", "build", "--study-url", study_url, "--key", key, "--experiment", "exp1", *extra]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "ext"), "--data-dir", str(tmp_path)])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "scopes",
    [("ingest", "read"), ("admin",), ("read", "admin", "ingest"), ("crawler",), ("ingest", "crawler")],
)
def test_a_key_with_any_scope_beyond_ingest_is_refused_and_nothing_is_written(
    tmp_path: Path, scopes: tuple[str, ...]
) -> None:
    _, key = KeyFile(tmp_path / "keys.json").create("lab", scopes)
    code, output = build(tmp_path, key)
    assert code == 2, output
    assert "ingest scope only" in output
    assert key not in output  # the secret is never echoed
    assert not (tmp_path / "ext").exists()


def test_an_ingest_only_key_is_shipped(tmp_path: Path) -> None:
    _, key = KeyFile(tmp_path / "keys.json").create("extension", ("ingest",))
    code, output = build(tmp_path, key, "--no-check")  # no service to ask about the experiment
    assert code == 0, output
    assert json.loads((tmp_path / "ext" / "config.json").read_text())["ingest_key"] == key


def test_a_key_neither_the_key_file_nor_the_service_knows_is_refused(tmp_path: Path) -> None:
    code, output = build(tmp_path, "as_not-a-key-anyone-knows-0123")
    assert code == 2, output
    assert "cannot check the key's scopes" in output
    assert not (tmp_path / "ext").exists()
