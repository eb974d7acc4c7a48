"""One service per data directory (issue 34, Done-means 4): a second ``up``, ``ingest``,
``worker`` or ``db migrate`` on a directory that a running ``up`` holds exits with a clear
error before it touches anything, and the running service goes on untouched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ingest.api_keys import KeyFile, hash_key
from tests.helpers import Service, free_port, http

pytestmark = pytest.mark.integration

SECOND_KEY = "second-up-key-0123456789-padded-to-35"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auditstream", *args], capture_output=True, text=True, timeout=120
    )


def run_files(data_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((data_dir / "run").iterdir()) if p.is_file()}


def test_a_second_up_on_a_held_data_directory_refuses_and_changes_nothing(service: Service) -> None:
    data_dir = service.data_dir
    keys_before = (data_dir / "keys.json").read_bytes()
    # broker.rss_mb and ingest-state-<pid>.json are rewritten every second by the running service
    live = ("broker.rss_mb", "ingest-state-")
    runs_before = {k: v for k, v in run_files(data_dir).items() if not k.startswith(live)}
    port = free_port()

    second = run_cli("up", "--port", str(port), "--data-dir", str(data_dir), "--api-key", SECOND_KEY)
    assert second.returncode == 2, second.stdout + second.stderr
    assert "data directory" in second.stderr and "stop it first" in second.stderr, second.stderr
    assert "stopped cleanly" not in second.stdout + second.stderr

    for command in (
        ["ingest", "--port", str(port), "--kafka-bootstrap", "127.0.0.1:9"],
        ["worker", "--kafka-bootstrap", "127.0.0.1:9"],
        ["db", "migrate"],
    ):
        other = run_cli(*command, "--data-dir", str(data_dir))
        assert other.returncode == 2, (command, other.stdout + other.stderr)
        assert "a running `auditstream up` holds the data directory" in other.stderr, other.stderr

    # the key was not registered, and no run file was removed or rewritten
    assert (data_dir / "keys.json").read_bytes() == keys_before
    assert KeyFile(data_dir / "keys.json").lookup(SECOND_KEY) is None
    assert hash_key(SECOND_KEY) not in keys_before.decode()
    runs_after = run_files(data_dir)
    assert {k: runs_after.get(k) for k in runs_before} == runs_before
    assert http("GET", service.url + "/readyz").status == 200


def test_up_refuses_a_key_shorter_than_the_keys_it_makes(tmp_path: Path) -> None:
    short = run_cli("up", "--port", str(free_port()), "--data-dir", str(tmp_path / "d"), "--api-key", "MYKEY")
    assert short.returncode == 2
    assert "at least 35 characters" in short.stderr
    assert not (tmp_path / "d" / "keys.json").exists()
