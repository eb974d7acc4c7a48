"""Which stored decision-line looks a worker's recompute makes stale."""

from __future__ import annotations

from datetime import UTC, date, datetime

from streams.processors.arrangement_rollup import stale_looks
from studies.arrangement.looks import DAY_S, GRACE_S


def at(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def test_only_slices_of_days_whose_look_may_be_stored_make_looks_stale() -> None:
    now = at("2026-10-03 01:30:00")  # 2 Oct ended 1.5 h ago: its look may be stored (grace 1 h)
    assert GRACE_S == 3600 and DAY_S == 86400
    slices = [
        ("e", "google", at("2026-10-03 01:29:50")),  # today: never stored
        ("e", "google", at("2026-10-02 23:59:50")),  # late in a stored day
        ("e", "google", at("2026-10-02 10:00:00")),
        ("e", "bing", at("2026-10-01 12:00:00")),
        ("f", "google", at("2026-10-03 00:00:00")),
    ]
    assert stale_looks(slices, now) == {("e", "google"): date(2026, 10, 2), ("e", "bing"): date(2026, 10, 1)}
    # half an hour after midnight, yesterday's look is not stored yet
    assert stale_looks(slices[:2], at("2026-10-03 00:30:00")) == {}


def test_a_day_is_complete_from_completed_at_on() -> None:
    """``completed_at`` inverts ``last_complete_day`` (the rule ``stored_through`` stores
    looks by), and ``stale_looks`` counts a day as stored from the same moment."""
    from datetime import timedelta

    from studies.arrangement.looks import completed_at, last_complete_day

    for day in (date(2026, 10, 2), date(2026, 12, 31), date(2028, 2, 29)):
        moment = completed_at(day)
        assert moment == at(f"{day + timedelta(days=1)} 01:00:00")
        assert last_complete_day(moment) == day
        assert last_complete_day(moment - 1) == day - timedelta(days=1)
        noon = at(f"{day} 12:00:00")
        assert stale_looks([("e", "google", noon)], moment) == {("e", "google"): day}
        assert stale_looks([("e", "google", noon)], moment - 1) == {}
