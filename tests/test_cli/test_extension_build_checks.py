"""``extension build`` makes a build a study can ship (issue 35, Done-means 4): https for a
study served from elsewhere, the experiment known to the service (or --no-check), and the
study's own name, version and Firefox id in the manifest. The refusal of an experiment the
running service does not know is in tests/integration/test_extension_erasure.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from ingest.api_keys import KeyFile


def build(tmp_path: Path, *args: str, study_url: str = "https://study.example.org") -> tuple[int, str]:
    _, key = KeyFile(tmp_path / "keys.json").create("extension", ("ingest",))
    base = ["extension", "build", "--study-url", study_url, "--key", key, "--experiment", "pm-2026"]
    base += ["--out", str(tmp_path / "ext"), "--data-dir", str(tmp_path)]
    result = CliRunner().invoke(app, [*base, *args])
    return result.exit_code, result.output


@pytest.mark.parametrize("url", ["http://study.example.org", "http://10.0.0.5:8080", "http://study.local"])
def test_plain_http_is_refused_for_a_study_served_from_elsewhere(tmp_path: Path, url: str) -> None:
    code, output = build(tmp_path, "--no-check", study_url=url)
    assert code == 2 and "must be https" in output, output
    assert not (tmp_path / "ext").exists()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8080", "http://localhost:8080", "https://study.example.org"]
)
def test_https_or_this_machine_is_taken(tmp_path: Path, url: str) -> None:
    code, output = build(tmp_path, "--no-check", study_url=url)
    assert code == 0, output


def test_without_a_service_to_ask_the_build_is_refused_unless_no_check(tmp_path: Path) -> None:
    code, output = build(tmp_path, study_url="http://127.0.0.1:9")
    assert code == 2 and "is registered" in output and "--no-check" in output, output
    assert not (tmp_path / "ext").exists()


def test_the_study_name_version_and_firefox_id_are_stamped(tmp_path: Path) -> None:
    code, output = build(tmp_path, "--no-check", "--study-name", "Powermeter CH", "--version", "1.4.2")
    assert code == 0, output
    manifest = json.loads((tmp_path / "ext" / "manifest.json").read_text())
    assert (manifest["name"], manifest["version"]) == ("Powermeter CH", "1.4.2")
    assert manifest["action"]["default_title"] == "Powermeter CH"
    assert manifest["browser_specific_settings"]["gecko"]["id"] == "auditstream-pm-2026@study.example.org"
    config = json.loads((tmp_path / "ext" / "config.json").read_text())
    assert config["study_name"] == "Powermeter CH"


def test_each_study_gets_its_own_firefox_id(tmp_path: Path) -> None:
    code, output = build(tmp_path, "--no-check", "--firefox-id", "powermeter@uni.example.ch")
    assert code == 0, output
    manifest = json.loads((tmp_path / "ext" / "manifest.json").read_text())
    assert manifest["browser_specific_settings"]["gecko"]["id"] == "powermeter@uni.example.ch"


MALFORMED = [
    ("--version", "1.0.0.0.1"),
    ("--version", "1.x"),
    ("--version", "70000"),
    ("--firefox-id", "no-at"),
]


@pytest.mark.parametrize(("option", "value"), MALFORMED)
def test_a_malformed_version_or_id_is_refused(tmp_path: Path, option: str, value: str) -> None:
    code, output = build(tmp_path, "--no-check", option, value)
    assert code == 2 and option in output, output
