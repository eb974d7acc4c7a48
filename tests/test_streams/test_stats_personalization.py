from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from analytics.stats.personalization import Snapshot, compare_round, skew_ms

T0 = datetime(2026, 11, 22, tzinfo=UTC)


def snap(
    profile: str, role: str, urls: str, treatment: str = "", status: str = "ok", ms: int = 0
) -> Snapshot:
    return Snapshot(profile, role, treatment, status, tuple(urls), T0 + timedelta(milliseconds=ms))


def test_treatments_against_control_and_control_against_twin() -> None:
    pairs = compare_round(
        [
            snap("c", "control", "abc"),
            snap("tw", "control_twin", "abd"),
            snap("t1", "treatment", "cb", "logged_in"),
            snap("t2", "treatment", "xyz", "location=Boston", status="captcha"),
        ],
        ranks=3,
    )
    assert [(p.kind, p.profile_b) for p in pairs] == [("noise", "tw"), ("treatment", "t1")]
    noise, treated = pairs
    assert noise.changed == (False, False, True) and noise.edit_distance == 1
    assert noise.jaccard == pytest.approx(2 / 4)
    assert treated.edit_distance == 2  # Hannak et al.'s example: [a,b,c] vs [c,b]
    assert treated.changed == (True, False, True) and treated.rank1_moved
    assert treated.treatment == "logged_in"


def test_no_control_no_pairs() -> None:
    assert compare_round([snap("tw", "control_twin", "ab"), snap("t", "treatment", "ab", "x")]) == []
    assert (
        compare_round([snap("c", "control", "ab", status="error"), snap("t", "treatment", "ab", "x")]) == []
    )


def test_skew_is_the_spread_of_start_times() -> None:
    assert skew_ms([snap("a", "control", "", ms=5), snap("b", "treatment", "", ms=42)]) == pytest.approx(37)
    assert skew_ms([]) == 0.0
