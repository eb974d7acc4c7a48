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


def test_primary_links_keep_every_result_of_the_main_column_and_organic_only_the_organic() -> None:
    from analytics.stats.personalization import links_of

    page = [
        ("ad", "https://ads.example/"),
        ("organic", "https://a.example/"),
        ("top_stories", "https://news.google.com/x"),
        ("organic", "https://b.example/"),
        ("knowledge_panel", "https://kp.example/"),
        ("related_searches", "related_searches"),  # no link: its type as a static label
        ("shopping", "https://shop.example/"),
    ]
    assert links_of(page, "primary") == (
        "https://a.example/",
        "https://news.google.com/x",
        "https://b.example/",
        "related_searches",
    )
    assert links_of(page, "organic") == ("https://a.example/", "https://b.example/")
    with pytest.raises(ValueError, match="links"):
        links_of(page, "all")


@pytest.mark.parametrize(
    ("control", "treated", "came_from", "went_to"),
    [
        ("abcdefghij", "bacdefghij", 2, 2),  # rank 1 and 2 switch: the paper's common case
        ("abcdefghij", "xbcdefghij", 0, 0),  # a new result on top; the old one evicted
        ("abcdefghij", "dbcaefghij", 4, 4),
        ("abcdefghij", "jbcdefghia", 10, 10),  # still on the page at rank 10
        ("abcdefghij", "abcdefghij", 0, 0),  # rank 1 did not move
    ],
)
def test_rank1_movement_figure16(control: str, treated: str, came_from: int, went_to: int) -> None:
    (pair,) = compare_round([snap("c", "control", control), snap("t", "treatment", treated, "x")])
    assert pair.rank1_moved == (control[0] != treated[0])
    assert (pair.rank1_from, pair.rank1_to) == (came_from, went_to)


def test_day_to_day_consistency_with_jaccard_and_edit_distance() -> None:
    from datetime import date

    from analytics.stats.personalization import DayPage, day_to_day

    pages = [
        DayPage(date(2026, 11, 3), tuple("abcx")),
        DayPage(date(2026, 11, 1), tuple("abcd")),
        DayPage(date(2026, 11, 2), tuple("bacd")),
    ]
    assert day_to_day(pages) == [
        (date(2026, 11, 2), date(2026, 11, 1), 1.0, 1),  # a swap: same set, one transposition
        (date(2026, 11, 3), date(2026, 11, 2), 0.6, 2),  # {a,b,c} of {a,b,c,d,x}; swap + substitution
    ]
    assert day_to_day(pages[:1]) == []
