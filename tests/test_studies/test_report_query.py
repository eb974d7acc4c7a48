from __future__ import annotations

from datetime import date, datetime

import pytest

from studies.arrangement.selection import ReportQuery, parse_moment, parse_window


@pytest.mark.parametrize(
    ("text", "seconds"), [("1m", 60), ("1h", 3600), ("1d", 86400), ("10s", 10), ("15m", 900)]
)
def test_parse_window(text: str, seconds: int) -> None:
    assert parse_window(text) == seconds


@pytest.mark.parametrize("text", ["15s", "0m", "1w", "", "h", "367d", "9999999999999999d"])
def test_parse_window_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_window(text)


def test_parse_moment_days_and_times() -> None:
    assert parse_moment("2026-11-01") == date(2026, 11, 1)
    assert parse_moment("2026-11-01T09:30") == datetime(2026, 11, 1, 9, 30)
    assert parse_moment("2026-11-01T09:30:00Z") == datetime(2026, 11, 1, 9, 30)
    assert parse_window("366d") == 366 * 86400


def test_a_moment_with_an_offset_is_read_in_utc() -> None:
    assert parse_moment("2026-11-01T09:30+05:00") == datetime(2026, 11, 1, 4, 30)
    assert parse_moment("2026-11-01 01:00-02:00") == datetime(2026, 11, 1, 3, 0)


@pytest.mark.parametrize(
    "text", ["1969-12-31", "2106-01-01", "0001-01-01T00:00+23:59", "9999-12-31T23:59-23:59"]
)
def test_moments_the_slices_cannot_hold_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="outside 1970-2105"):
        parse_moment(text)


def test_whole_days_become_a_half_open_time_range() -> None:
    """until is a whole day, inclusive: at slice resolution it is the next midnight, exclusive."""
    q = ReportQuery("e", since=date(2026, 11, 1), until=date(2026, 11, 3)).at_slice_resolution()
    assert (q.since, q.until) == (datetime(2026, 11, 1), datetime(2026, 11, 4))
    sql = q.windows_sql(3600)
    assert "slice_start >= toDateTime('2026-11-01 00:00:00', 'UTC')" in sql
    assert "slice_start < toDateTime('2026-11-04 00:00:00', 'UTC')" in sql
    assert "INTERVAL 3600 SECOND" in sql
