"""The plan of a recompute from closed days' sums (``studies/arrangement/write/closed_sums.py``):
which installs are read from their set, which are recomputed whole, which sets are written.
The SQL itself is checked against a recount on chDB (tests/integration/test_closed_sums.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from studies.arrangement.write import closed_sums as ac
from studies.arrangement.write import slice_rows

DAY = 86400
T = int(datetime(2026, 9, 10, tzinfo=UTC).timestamp())  # a day boundary
KEY = ("e", "google", "install-1")


@pytest.mark.parametrize(
    ("newest", "through"),
    [
        (T + 3600, T),  # a day closes an hour after it ends
        (T + 3599, T - DAY),
        (T + DAY - 1, T),
        (T + DAY + 3600, T + DAY),
    ],
)
def test_a_day_closes_an_hour_after_it_ends(newest: int, through: int) -> None:
    assert ac.closed_through(newest) == through


def test_targets_follow_the_newest_slice_of_each_study() -> None:
    slices = {("e", "google", T + 7200), ("e", "google", T - 5 * DAY), ("e", "bing", T + 10)}
    assert ac.targets_of(slices) == {("e", "google"): T, ("e", "bing"): T - DAY}


@pytest.mark.parametrize(
    ("state", "valid", "action", "t_new"),
    [
        # a whole set, the batch after its through, the day not over: its sums are used as they are
        ({"through": T, "has_rows": True, "whole": True, "oldest_touch": T + 60}, True, False, T),
        # a new day closed: the set advances
        ({"through": T - DAY, "has_rows": True, "whole": True, "oldest_touch": T + 60}, True, True, T),
        # a late event (a slice before through): recomputed whole, rebuilt through the same day
        ({"through": T, "has_rows": True, "whole": True, "oldest_touch": T - 60}, False, True, T),
        # a set not whole (a crash) or stale (an import): recomputed whole, rebuilt
        ({"through": T, "has_rows": True, "whole": False, "oldest_touch": T + 60}, False, True, T),
        # through never goes back, whatever the target says
        ({"through": T + DAY, "has_rows": True, "whole": False}, False, True, T + DAY),
        # an install without a set: all of its slices are after 0; it gets one with the next sets
        ({"oldest_touch": T + 60}, True, False, T),
        ({}, True, False, T),
    ],
)
def test_plans(state: dict[str, int], valid: bool, action: bool, t_new: int) -> None:
    plan = ac.Plan.of(KEY, T, **state)  # type: ignore[arg-type]
    assert (plan.valid, plan.action, plan.t_new) == (valid, action, t_new)


def test_plans_from_the_state_rows() -> None:
    other = ("e", "google", "install-2")
    rows = [["e", "google", "install-1", T - DAY, 1, 1, T + 60, 1, [7, 3], [5]]]
    first, second = ac.plans_of([KEY, other], rows, {("e", "google"): T})
    assert (first.valid, first.action, first.has_set, first.sums) == (True, True, True, True)
    assert (first.touched, first.subsets) == ((3, 7), (5,))
    assert (second.valid, second.action, second.has_set, second.sums, second.through) == (
        True,
        False,
        False,
        False,
        0,
    )


@pytest.mark.parametrize("contexts", [1, 5, 40, 5000])
def test_statements_stay_inside_max_query_size(contexts: int) -> None:
    """ClickHouse parses at most 256 KiB of a statement: a chunk of installs with the longest
    ids, a batch of many slices and any number of touched contexts (hashes of 20 digits) fit,
    the study-wide and per-subset rows split into portions of ``MAX_HASHES`` hashes."""
    installs = [("experiment-with-a-long-name", "google", f"{n:064d}") for n in range(ac.INSTALL_CHUNK)]
    slices = {("experiment-with-a-long-name", "google", T + 10 * n) for n in range(2000)}
    wide = [2**64 - 1 - k for k in range(contexts)]
    plans = [
        ac.Plan.of(key, T + DAY, through=T, has_rows=True, whole=True, touched=wide, subsets=wide)
        for key in installs[: max(1, 1000 // contexts)]
    ]
    since = "2026-09-10 12:00:00.000000"
    statements = [
        ac.state_sql(installs, slices),
        ac.closed_sql(plans, since),
        slice_rows.installs_sql(installs),
    ]
    for part in ac._portions(plans, lambda p: len(p.touched)):
        statements += [ac.installs_sql(part, since), ac.subsets_sql(part)]
    assert all(len(sql.encode()) < 256 * 1024 for sql in statements)


def test_portions_hold_at_most_max_hashes_each_unless_one_plan_has_more() -> None:
    plans = [ac.Plan.of(("e", "g", str(n)), T, touched=range(n % 7 * 1000)) for n in range(20)]
    parts = ac._portions(plans, lambda p: len(p.touched))
    assert [p for part in parts for p in part] == plans and all(parts)
    for part in parts:
        assert len(part) == 1 or sum(len(p.touched) for p in part) <= ac.MAX_HASHES
