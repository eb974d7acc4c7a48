"""The embedded broker's daily replacement falls once per day, at the hour asked."""

from datetime import UTC, datetime

import pytest

from supervisor.rotation_schedule import daily_rotation_due, last_slot


def ts(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_the_last_slot_is_today_once_passed_else_yesterday() -> None:
    assert last_slot(ts("2026-03-02T04:00:00"), "04:00") == ts("2026-03-02T04:00:00")
    assert last_slot(ts("2026-03-02T05:30:00"), "04:00") == ts("2026-03-02T04:00:00")
    assert last_slot(ts("2026-03-02T03:59:59"), "04:00") == ts("2026-03-01T04:00:00")
    assert last_slot(ts("2026-01-01T00:10:00"), "23:45") == ts("2025-12-31T23:45:00")


def test_due_once_per_day_after_the_hour() -> None:
    started = ts("2026-03-01T10:00:00")
    assert not daily_rotation_due(started, ts("2026-03-02T03:59:00"), "04:00")
    assert daily_rotation_due(started, ts("2026-03-02T04:00:00"), "04:00")
    restarted = ts("2026-03-02T04:00:05")  # replaced: not due again that day
    assert not daily_rotation_due(restarted, ts("2026-03-02T23:00:00"), "04:00")
    assert daily_rotation_due(restarted, ts("2026-03-03T04:01:00"), "04:00")


def test_a_clock_that_jumps_days_ahead_rotates_once() -> None:
    """A compressed study's clock jumps a day at a time: one replacement per jump."""
    started = ts("2026-03-01T12:00:00")
    assert daily_rotation_due(started, ts("2026-03-09T00:01:00"), "00:00")
    assert not daily_rotation_due(ts("2026-03-09T00:01:01"), ts("2026-03-09T23:58:00"), "00:00")


def test_off_and_invalid() -> None:
    assert not daily_rotation_due(0.0, ts("2026-03-02T04:00:00"), "")
    for bad in ("4:00", "24:00", "12:60", "noon"):
        with pytest.raises(ValueError):
            last_slot(0.0, bad)
