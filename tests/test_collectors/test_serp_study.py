"""Study files (validation and the messages an operator sees), the slot grid, events, and the
fake engine's ground truth."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

import collectors.serp
from collectors.common.exceptions import CrawlConfigError
from collectors.serp.events import round_events, snapshot_event, snapshot_event_id
from collectors.serp.schedule import Grid
from collectors.serp.study import load_study, parse_duration, parse_study
from schemas.event_types import AnyEvent
from tests.fakes.serp_engine import FakeEngineScript

EXAMPLE = Path(collectors.serp.__file__).parent / "examples" / "study.toml"
EVENT = TypeAdapter(AnyEvent)


def study_text(header: str = "", profiles: str | None = None, queries: int = 2) -> str:
    default_profiles = """
[[profiles]]
id = "control"
role = "control"
user_agent = "UA"

[[profiles]]
id = "twin"
role = "control_twin"
user_agent = "UA"

[[profiles]]
id = "login"
role = "treatment"
treatment = "logged_in"
user_agent = "UA"
"""
    qs = "".join(f'\n[[queries]]\ntext = "query {i}"\ncategory = "c{i % 2}"\n' for i in range(queries))
    people = default_profiles if profiles is None else profiles
    return f'[study]\nid = "s1"\nengine = "google"\n{header}\n{qs}{people}'


def test_the_example_study_is_valid() -> None:
    study = load_study(EXAMPLE)
    assert study.total_rounds == 7 * len(study.queries)
    assert study.study.spacing == 660.0 and study.period == 86400.0
    assert [p.role for p in study.profiles].count("treatment") == 3


def test_defaults_follow_hannak() -> None:
    study = parse_study(study_text())
    assert study.study.spacing == 660.0  # 11 minutes
    assert study.total_rounds == 2  # each query once
    assert study.round_timeout == pytest.approx(528.0)
    assert study.max_start_delay == 30.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("500ms", 0.5), ("30s", 30.0), ("11m", 660.0), ("1.5h", 5400.0), ("1d", 86400.0), (2, 2)],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    ("header", "profiles", "message"),
    [
        ('spacing = "11 minutes"', None, r"study\.spacing: a duration is a number of seconds or e\.g\."),
        ('spacing = "1s"\nround_timeout = "2s"', None, "round_timeout must be shorter than spacing"),
        ('engine2 = "x"', None, r"study\.engine2: Extra inputs are not permitted"),
        ('days = 1\nspacing = "13h"', None, r"2 queries x spacing 46800s do not fit in a period of 86400s"),
        ('period = "2d"', None, "period only applies with days"),
        (
            "",
            '[[profiles]]\nid = "a"\nrole = "control"\nuser_agent = "UA"\n'
            '[[profiles]]\nid = "b"\nrole = "treatment"\ntreatment = "x=1"\nuser_agent = "UA"\n',
            "exactly one profile with role control and one with control_twin",
        ),
        (
            "",
            '[[profiles]]\nid = "a"\nrole = "control"\nuser_agent = "UA"\n'
            '[[profiles]]\nid = "b"\nrole = "control_twin"\nuser_agent = "UA"\nlanguage = "de-DE"\n',
            "the control_twin must be configured like the control: language differs",
        ),
        (
            "",
            '[[profiles]]\nid = "a"\nrole = "control"\nuser_agent = "UA"\n'
            '[[profiles]]\nid = "a"\nrole = "control_twin"\nuser_agent = "UA"\n',
            "profile ids must be distinct",
        ),
        (
            "",
            '[[profiles]]\nid = "a"\nrole = "control"\nuser_agent = "UA"\ntreatment = "x"\n'
            '[[profiles]]\nid = "b"\nrole = "control_twin"\nuser_agent = "UA"\n',
            r"profile a: the control has no treatment",
        ),
        (
            "",
            '[[profiles]]\nid = "a"\nrole = "control"\nuser_agent = "UA"\n'
            '[[profiles]]\nid = "b"\nrole = "control_twin"\nuser_agent = "UA"\n'
            '[[profiles]]\nid = "c"\nrole = "treatment"\nuser_agent = "UA"\n',
            r"profile c: a treatment profile needs treatment",
        ),
        (
            "",
            '[[profiles]]\nid = "a b"\nrole = "control"\nuser_agent = "UA"\n',
            r"profiles\.0\.id: String should match pattern",
        ),
    ],
)
def test_invalid_studies_say_what_is_wrong(header: str, profiles: str | None, message: str) -> None:
    with pytest.raises(CrawlConfigError, match=message):
        parse_study(study_text(header, profiles), source="study.toml")


def test_unknown_engine_and_bad_toml() -> None:
    with pytest.raises(CrawlConfigError, match="unknown engine 'altavista'"):
        parse_study(study_text().replace('engine = "google"', 'engine = "altavista"'))
    with pytest.raises(CrawlConfigError, match=r"study\.toml is not valid TOML"):
        parse_study("[study", source="study.toml")


def test_study_id_must_leave_room_for_round_ids() -> None:
    with pytest.raises(CrawlConfigError, match="study id too long"):
        parse_study(study_text().replace('id = "s1"', f'id = "{"x" * 60}"', 1))


def test_cookie_files_are_found_next_to_the_study(tmp_path: Path) -> None:
    (tmp_path / "jar.txt").write_text(
        "# Netscape HTTP Cookie File\n.google.com\tTRUE\t/\tTRUE\t2147483647\tSID\tsecret\n"
    )
    text = study_text().replace('id = "login"', 'id = "login"\ncookies_file = "jar.txt"')
    (tmp_path / "study.toml").write_text(text)
    study = load_study(tmp_path / "study.toml")
    assert study.profiles[2].cookies_file == tmp_path / "jar.txt"
    (tmp_path / "jar.txt").unlink()
    with pytest.raises(CrawlConfigError, match="profile login: no cookies file"):
        load_study(tmp_path / "study.toml")


def test_fingerprint_ignores_operational_settings_not_the_design() -> None:
    base = parse_study(study_text())
    assert parse_study(study_text('retries = 5\nfetch_timeout = "10s"')).fingerprint() == base.fingerprint()
    assert parse_study(study_text('spacing = "10m"')).fingerprint() != base.fingerprint()
    assert parse_study(study_text(queries=3)).fingerprint() != base.fingerprint()


def test_grid_slots_cycle_queries_and_days() -> None:
    start = datetime(2025, 1, 6, 9, tzinfo=UTC)
    study = parse_study(study_text("days = 3"))
    grid = Grid.of(study, start)
    assert grid.total == 6
    assert [grid.slot(k) - start for k in range(6)] == [
        timedelta(0),
        timedelta(minutes=11),
        timedelta(days=1),
        timedelta(days=1, minutes=11),
        timedelta(days=2),
        timedelta(days=2, minutes=11),
    ]
    assert [grid.query_index(k) for k in range(4)] == [0, 1, 0, 1]
    assert grid.round_id(5) == "s1-r0005"
    capped = Grid.of(parse_study(study_text("days = 3\nrounds = 4")), start)
    assert capped.total == 4
    back_to_back = Grid.of(parse_study(study_text('rounds = 5\nspacing = "500ms"')), start)
    assert back_to_back.slot(4) - start == timedelta(seconds=2)


def test_snapshot_events_validate_and_have_deterministic_ids() -> None:
    components = [
        {"rank": 1, "section": "top", "type": "ad", "url": "https://ad.example/", "title": "x"},
        {"rank": 2, "section": "main", "type": "organic", "url": "https://a.example/", "title": "y"},
        {"rank": 3, "section": "bottom", "type": "related_searches", "url": "", "title": ""},
    ]
    event = snapshot_event(
        study_id="s1",
        round_id="s1-r0003",
        profile_id="login",
        role="treatment",
        treatment="logged_in",
        engine="google",
        query="coffee",
        query_category="food",
        components=components,
        result_estimate=42,
        status="ok",
        raw_ref="sha256:" + "0" * 64,
        sent_at=datetime(2025, 1, 6, 9, 0, 0, 123000, tzinfo=UTC),
    )
    EVENT.validate_python(event)
    assert event["event_id"] == str(snapshot_event_id("s1", "s1-r0003", "login", "coffee"))
    assert event["results"] == [
        {"rank": 1, "type": "ad", "url": "https://ad.example/"},
        {"rank": 2, "type": "organic", "url": "https://a.example/"},
        {"rank": 3, "type": "related_searches", "url": "related_searches"},  # no link: the static label
    ]
    assert event["sent_at"].startswith("2025-01-06T09:00:00.123")
    assert snapshot_event_id("s1", "s1-r0003", "login", "coffee") != snapshot_event_id(
        "s1", "s1-r0004", "login", "coffee"
    )


def test_a_journaled_round_renamed_to_a_new_study_gets_new_ids() -> None:
    profile: dict[str, Any] = {
        "profile_id": "control",
        "role": "control",
        "treatment": "",
        "status": "captcha",
        "components": [],
        "result_estimate": None,
        "raw_ref": "",
        "sent_at": "2025-01-06T09:00:00.001+00:00",
    }
    record = {"study_id": "s1", "round_id": "s1-r0007", "engine": "google", "query": "q", "category": ""}
    (old,) = round_events({**record, "profiles": [profile]})
    (new,) = round_events({**record, "profiles": [profile]}, study_id="s1-fixed")
    assert (new["study_id"], new["round_id"], new["results"]) == ("s1-fixed", "s1-fixed-r0007", [])
    assert new["event_id"] != old["event_id"]


def test_fake_engine_ground_truth_matches_its_pages() -> None:
    """The exported formulas agree with what the fake actually serves (Monte Carlo, 3 sigma)."""
    treatments = {"control": "", "twin": "", "login": "logged_in", "boston": "location=Boston"}
    script = FakeEngineScript(noise=0.10, personalization=0.15, seed=11, treatments=treatments)
    rounds, ranks = 600, script.base_results
    changed = dict.fromkeys(("twin", "login", "boston"), 0)
    for r in range(rounds):
        control = script.page_urls("control", "q", r)
        for other in changed:
            page = script.page_urls(other, "q", r)
            changed[other] += sum(a != b for a, b in zip(control, page, strict=True))
    n = rounds * ranks
    for other, expected in (
        ("twin", script.expected_changed_fraction("", "")),
        ("login", script.expected_changed_fraction("logged_in", "")),
        ("boston", script.expected_changed_fraction("location=Boston", "")),
    ):
        sigma = (expected * (1 - expected) / n) ** 0.5
        assert abs(changed[other] / n - expected) < 3 * sigma, other
    assert script.expected_changed_fraction("", "") == pytest.approx(1 - 0.9**2)
    assert script.expected_personalization("logged_in") == pytest.approx(0.81 * 0.15)
    assert script.expected_personalization("location=Boston") == 0.0
