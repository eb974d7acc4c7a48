"""The first screen of `auditstream up` (issue 40): the board's address without a bogus
key fragment, and the three next things a newcomer does."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from auditstream.cli import app
from auditstream.cli import up as up_cli
from ingest.api_keys import KeyFile
from supervisor import service
from supervisor.banner import BannerKey, key_line, next_steps
from supervisor.service import Supervisor

URL = "http://127.0.0.1:8080"


def test_a_key_made_by_this_start_goes_into_the_board_s_address() -> None:
    lines = next_steps(URL, BannerKey("as_secret"))
    assert lines[1] == "  1. open the board: http://127.0.0.1:8080/board#key=as_secret"
    assert lines[-1] == f"try: auditstream experiment list --url {URL} --api-key as_secret"
    assert key_line(BannerKey("as_secret")).startswith("as_secret  (scopes: ingest")


def test_without_a_key_to_show_the_board_s_address_has_no_fragment_and_a_hint_follows() -> None:
    key = BannerKey(None, "the key given with --api-key (not shown)")
    lines = next_steps(URL, key, " --data-dir /srv/as")
    assert lines[1] == "  1. open the board: http://127.0.0.1:8080/board"
    assert lines[2] == "     it asks for a key with the read scope (step 2 makes one)"
    text = "\n".join(lines)
    assert "#key" not in text and "(existing keys" not in text
    assert "2. make a key: auditstream keys create --name NAME --scope read --data-dir /srv/as" in text
    assert '3. read the docs: README.md ("Using it") and `auditstream --help`' in text
    assert lines[-1] == f"try: auditstream experiment list --url {URL} --api-key KEY"
    assert key_line(key) == "the key given with --api-key (not shown)"


def test_up_with_existing_keys_prints_the_next_steps_and_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restart banner printed `board .../board#key=(existing keys; ...)`."""
    KeyFile(tmp_path / "keys.json").create("lab", ("read",))
    started: list[Supervisor] = []

    async def banner_only(sup: Supervisor, demo: bool) -> None:
        started.append(sup)
        sup.banner()

    monkeypatch.setattr(up_cli, "run", banner_only)
    monkeypatch.setattr(service, "console", Console(stderr=True, width=200))
    result = CliRunner().invoke(app, ["up", "--data-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.output
    shown = [line.strip(" │") for line in out.splitlines()]  # the panel's lines, without its border
    assert f"1. open the board: {URL}/board" in shown
    assert "#key=" not in out and "(existing keys" not in out
    assert f"the keys in {tmp_path / 'keys.json'} (`auditstream keys list`)" in out
    assert f"auditstream keys create --name NAME --scope read --data-dir {tmp_path}" in out
    assert "3. read the docs" in out
    assert started[0].api_key == ""
