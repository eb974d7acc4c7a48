"""The bench-only received_at offset (ingest/clock.py): read in the background, never per request."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ingest.clock import Clock, read_offset


@pytest.mark.parametrize(
    ("text", "expected"),
    [("86400\n", 86400), ("-5", -5), ("", 0), ("1.5", 0), ("tomorrow", 0), (str(10**12), 0)],
)
def test_the_file_holds_whole_seconds_and_anything_else_is_no_offset(
    tmp_path: Path, text: str, expected: int
) -> None:
    path = tmp_path / "offset"
    path.write_text(text)
    assert read_offset(path) == expected


def test_a_missing_file_is_no_offset(tmp_path: Path) -> None:
    assert read_offset(tmp_path / "absent") == 0


async def test_without_a_file_the_clock_is_the_wall_clock() -> None:
    clock = Clock(None)
    await clock.start()
    assert abs(clock.now() - datetime.now(UTC)) < timedelta(seconds=1)
    await clock.close()


async def test_the_offset_is_read_at_start_and_again_in_the_background(tmp_path: Path) -> None:
    path = tmp_path / "offset"
    path.write_text("86400")
    clock = Clock(path, reread_s=0.05)
    await clock.start()
    try:
        assert abs(clock.now() - datetime.now(UTC) - timedelta(days=1)) < timedelta(seconds=1)
        path.write_text(str(3 * 86400))
        for _ in range(100):  # wait for the effect: the background task's next read
            if clock.offset_s == 3 * 86400:
                break
            await asyncio.sleep(0.02)
        assert abs(clock.now() - datetime.now(UTC) - timedelta(days=3)) < timedelta(seconds=1)
        path.unlink()
        for _ in range(100):
            if clock.offset_s == 0:
                break
            await asyncio.sleep(0.02)
        assert clock.offset_s == 0
    finally:
        await clock.close()
