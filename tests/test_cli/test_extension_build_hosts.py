"""``extension build`` ships the source manifest's search hosts, every Google country domain
of ``extension/google_domains.txt`` and Bing, with host access to the study's origin instead
of the development one (issue 35)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from auditstream.cli import app
from ingest.api_keys import KeyFile

SOURCE = Path(__file__).resolve().parents[2] / "extension"


def test_the_built_manifest_names_every_search_host_and_the_study(tmp_path: Path) -> None:
    _, key = KeyFile(tmp_path / "keys.json").create("extension", ("ingest",))
    args = ["extension", "build", "--study-url", "https://study.example.org", "--key", key]
    args += [
        "--experiment",
        "exp1",
        "--out",
        str(tmp_path / "ext"),
        "--data-dir",
        str(tmp_path),
        "--no-check",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    built = json.loads((tmp_path / "ext" / "manifest.json").read_text())
    lines = (SOURCE / "google_domains.txt").read_text(encoding="utf-8").splitlines()
    hosts = [f"www{line}" for line in lines if line.startswith(".google.")] + ["www.bing.com"]
    assert len(hosts) > 150 and {"www.google.de", "www.google.co.uk", "www.google.ch"} <= set(hosts)
    origins = [f"https://{h}/*" for h in hosts]
    assert built["host_permissions"] == [*origins, "https://study.example.org/*"]
    assert built["content_scripts"][0]["matches"] == [f"https://{h}/search*" for h in hosts]
    assert built["web_accessible_resources"][0]["matches"] == origins
    assert not (tmp_path / "ext" / "google_domains.txt").exists()  # the list is a source, not shipped
