"""A run file that cannot be written leaves no stale file behind and stops nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from supervisor.run_files import write_run_file


def test_a_run_file_is_written(tmp_path: Path) -> None:
    assert write_run_file(tmp_path / "ingest.pid", "123")
    assert (tmp_path / "ingest.pid").read_text() == "123"


def test_a_refused_write_removes_the_stale_file_and_warns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    stale = tmp_path / "broker.pid"
    stale.write_text("41")

    def full(self: Path, text: str) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    with caplog.at_level(logging.WARNING):
        assert not write_run_file(stale, "42")
    assert not stale.exists()
    assert "No space left on device" in caplog.text and "broker.pid" in caplog.text
