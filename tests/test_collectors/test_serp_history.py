"""History profiles (issue 17): scripted searches, clicks and visits before the measured queries,
in the profile's own session, on record, and never moving the lock-step slot.

The engine is the fake one over HTTP (the browser fetcher runs the same steps in
``tests/integration/test_browser_history.py``). Its organic links go through ``/url?q=``
as on Google's page without JavaScript, so a click on a result reaches it.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

import pytest

from collectors.common.archive import Archive
from collectors.common.exceptions import CrawlConfigError
from collectors.common.journal import read_journal
from collectors.serp import crawler
from collectors.serp.study import load_study, parse_study
from tests.fakes.serp_engine import SLOW, FakeEngineScript, FakeSerpEngine
from tests.fakes.serp_study import UA, crawl, study_file
from tests.helpers import read_events

PROFILES = (("control", "control", ""), ("twin", "control_twin", ""), ("hist", "treatment", "history=golf"))


def history_steps(base_url: str) -> str:
    """Search and click the first result, visit a page of the engine's site, search and click
    the result whose URL holds 'site0'; the slot comes one spacing after the last step."""
    return (
        '\n[[profiles.history]]\nsearch = "golf clubs"\nclick = 1\n'
        f'\n[[profiles.history]]\nvisit = "{base_url}/page/club-news"\n'
        '\n[[profiles.history]]\nsearch = "yacht charter"\nclick = "site0"\n'
    )


def ts(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.timing  # fetch deadlines of a few hundred ms: run alone, after the rest
def test_history_steps_run_in_the_profiles_session_before_each_pass_and_keep_lock_step(
    tmp_path: Path,
) -> None:
    with FakeSerpEngine() as engine:
        path, start = study_file(
            tmp_path,
            study_id="hist",
            rounds=4,
            lead_s=2.0,
            spacing='"500ms"',
            profiles=PROFILES,
            extra='days = 2\nperiod = "2500ms"\nhistory_step = "300ms"\n',
            profile_extra={"hist": history_steps(engine.base_url)},
        )
        study = load_study(path)
        assert study.lead(0) == study.lead(2) == pytest.approx(1.1) and study.lead(1) == 0
        engine.script = FakeEngineScript(
            treatments={p.id: p.treatment for p in study.profiles}, click_redirect=True
        )
        summary = crawl(study, engine, tmp_path)
        hits, served = engine.hits, engine.served
    assert summary.finished and len(summary.rounds) == 4 and not summary.missed
    assert summary.history() == {"hist": {"ok": 10}}  # 5 steps (2 clicks) before each of 2 passes

    records = sorted(
        (r for r in read_journal(tmp_path / "state" / "hist" / "journal.jsonl") if r["kind"] == "round"),
        key=lambda r: r["round"],
    )
    slots = [ts(r["slot"]) for r in records]
    assert slots[0] == start and slots[2] == start + 2.5  # the grid did not move

    # what the engine saw from the history profile, in order: each pass's steps, then its queries
    mine = [h for h in hits if h.profile == "hist"]
    steps = [(h.path, h.query if h.path != "/url" else "(click)") for h in mine]
    one_pass = [
        ("/search", "golf clubs"),
        ("/url", "(click)"),
        ("/page/club-news", ""),
        ("/search", "yacht charter"),
        ("/url", "(click)"),
    ]
    assert steps == [*one_pass, ("/search", "coffee"), ("/search", "pizza boston")] * 2
    # each click went to the result asked for on the page the search before it got
    pages = {(p.query, p.round): p.organic for p in served if p.profile == "hist"}
    clicks = [h.query for h in mine if h.path == "/url"]
    assert clicks[0] == pages["golf clubs", 0][0] and clicks[2] == pages["golf clubs", 1][0]
    for target, pass_ in ((clicks[1], 0), (clicks[3], 1)):
        assert target == next(u for u in pages["yacht charter", pass_] if "site0" in u)
    # in the profile's own session: its cookie on every step, the engine's NID from its first
    # answer on, the visited page's cookie after the visit; no other profile got any of them
    nid = hashlib.sha1(b"hist").hexdigest()[:16]
    assert all(h.cookies["profile"] == "hist" and h.user_agent == UA for h in mine)
    assert [h.cookies.get("NID") for h in mine] == [None] + [nid] * (len(mine) - 1)
    assert [("VISITED" in h.cookies) for h in mine[:7]] == [False] * 3 + [True] * 4
    assert all(h.path == "/search" and "VISITED" not in h.cookies for h in hits if h.profile != "hist")
    # the steps ran on their plan, before the slot of the pass's first round
    for first, pass_hits in ((0, mine[:5]), (2, mine[7:12])):
        planned = [slots[first] - 1.1, None, slots[first] - 0.8, slots[first] - 0.5, None]
        for hit, at in zip(pass_hits, planned, strict=True):
            assert hit.at < slots[first] - 0.1
            if at is not None:
                assert at <= hit.at < at + 0.25

    # lock step: every measured request planned for its slot, the history profile's too
    for r in records:
        assert {p["status"] for p in r["profiles"]} == {"ok"}
        assert all(p["planned_at"] == r["slot"] and p["attempts"] == 1 for p in r["profiles"])
        assert r["skew_ms"] < 100, r["skew_ms"]

    # on record: in the round the history came before, each page archived with what it was
    archive = Archive(tmp_path / "archive")
    for r in records:
        entries = {p["profile_id"]: p.get("history") for p in r["profiles"]}
        assert entries["control"] is None and entries["twin"] is None
        if r["round"] % 2:
            assert entries["hist"] is None
            continue
        history = entries["hist"]
        assert [(h["action"], h["status"]) for h in history] == [
            ("search", "ok"),
            ("click", "ok"),
            ("visit", "ok"),
            ("search", "ok"),
            ("click", "ok"),
        ]
        assert history[1]["target"].startswith("https://site") and "site0" in history[4]["target"]
        for h in history:
            assert ts(h["sent_at"]) < ts(r["slot"]) and h["raw_ref"]
            assert archive.get(h["raw_ref"]).meta["history"] == h["action"]
        assert archive.get(history[0]["raw_ref"]).meta["query"] == "golf clubs"

    # the events: one snapshot per profile and round, none for history pages
    events = read_events(tmp_path / "events.jsonl")
    assert len(events) == 4 * len(PROFILES)
    assert {e["query"] for e in events} == {"coffee", "pizza boston"}
    assert all(e["consent"] == "none" and e["loaded_at"] is not None for e in events)


def test_a_pass_whose_history_did_not_run_is_not_measured(tmp_path: Path) -> None:
    """A crawler started after a pass's history was due misses the pass's rounds (they would
    measure a treatment without its history) and runs the next pass with its history."""
    with FakeSerpEngine() as engine:
        path, start = study_file(
            tmp_path,
            study_id="late",
            rounds=4,
            lead_s=-0.5,  # round 0's history (1.1 s before its slot) was due before the crawler starts
            spacing='"500ms"',
            profiles=PROFILES,
            extra='days = 2\nperiod = "2500ms"\nhistory_step = "300ms"\n',
            profile_extra={"hist": history_steps(engine.base_url)},
        )
        study = load_study(path)
        engine.script = FakeEngineScript(click_redirect=True)
        summary = crawl(study, engine, tmp_path)
        hits = engine.hits
    assert sorted(summary.missed) == [0, 1] and [r.round for r in summary.rounds] == [2, 3]
    assert "history" in summary.missed[0] and "history before its pass did not run" in summary.missed[1]
    assert [h.path for h in hits if h.profile == "hist"][:5] == [
        "/search",
        "/url",
        "/page/club-news",
        "/search",
        "/url",
    ]
    assert all(h.at >= start + 2.5 - 1.2 for h in hits)


CARRY = """
[study]
id = "carry"
engine = "google"
spacing = "30m"
round_timeout = "5m"

[[queries]]
text = "touring"
preceded_by = "test"

[[queries]]
text = "obama"
preceded_by = "gay marriage"

[[profiles]]
id = "control"
role = "control"
user_agent = "UA"

[[profiles]]
id = "twin"
role = "control_twin"
user_agent = "UA"

[[profiles]]
id = "w5"
role = "treatment"
user_agent = "UA"
carry_over_wait = "5m"

[[profiles]]
id = "w13"
role = "treatment"
user_agent = "UA"
carry_over_wait = 780
"""


def test_carry_over_profiles_search_the_pair_first_at_their_wait() -> None:
    study = parse_study(CARRY)
    w5, w13 = study.profiles[2:]
    assert (w5.treatment, w13.treatment) == ("carry_over:wait=300s", "carry_over:wait=780s")
    (step,) = study.steps(w5, 1)
    assert (step.kind, step.target, step.at, step.until) == ("search", "gay marriage", -300.0, 0.0)
    assert study.steps(study.profile("control"), 1) == ()
    assert study.lead(0) == study.lead(1) == 780.0


def test_history_timing_follows_steps_and_waits() -> None:
    text = CARRY.replace('preceded_by = "test"\n', "").replace('preceded_by = "gay marriage"\n', "")
    text = text.split('[[profiles]]\nid = "w5"')[0] + (
        '[[profiles]]\nid = "searcher"\nrole = "treatment"\ntreatment = "history=search"\nuser_agent = "UA"\n'
        '[[profiles.history]]\nsearch = "a"\n[[profiles.history]]\nsearch = "b"\nclick = 2\n'
        '[[profiles.history]]\nwait = "2m"\n[[profiles.history]]\nvisit = "https://example.org/x"\n'
    )
    study = parse_study(text.replace('spacing = "30m"', 'spacing = "11m"\nhistory_step = "20s"'))
    steps = study.steps(study.profiles[2], 0)
    # a, 20 s later b (and its click), 2 min later the visit, then one spacing to the slot
    assert [(s.kind, s.target, s.at, s.until, s.click) for s in steps] == [
        ("search", "a", -800.0, -780.0, None),
        ("search", "b", -780.0, -660.0, 2),
        ("visit", "https://example.org/x", -660.0, 0.0, None),
    ]
    assert study.steps(study.profiles[2], 1) == ()  # before the first round of a pass only
    assert (
        study.fingerprint() != parse_study(text.replace('spacing = "30m"', 'spacing = "11m"')).fingerprint()
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('preceded_by = "test"\n', ""), "every query to name its pair's first query"),
        (('carry_over_wait = "5m"', 'carry_over_wait = "29m"'), "does not fit between a round's deadline"),
        (('preceded_by = "test"', 'preceded_by = "Touring"'), "cannot be preceded by itself"),
        (
            ('id = "twin"\nrole = "control_twin"', 'id = "twin"\nrole = "control_twin"\ncarry_over_wait = 5'),
            "carry_over_wait is for treatment profiles",
        ),
        (
            ('carry_over_wait = "5m"', 'carry_over_wait = "5m"\n[[profiles.history]]\nsearch = "x"'),
            "a carry-over profile has no other history",
        ),
    ],
)
def test_carry_over_studies_say_what_is_wrong(change: tuple[str, str], message: str) -> None:
    with pytest.raises(CrawlConfigError, match=message):
        parse_study(CARRY.replace(*change))


HISTORY = """
[study]
id = "hist"
engine = "google"
spacing = "11m"
days = 7

[[queries]]
text = "coffee"

[[profiles]]
id = "control"
role = "control"
user_agent = "UA"

[[profiles]]
id = "twin"
role = "control_twin"
user_agent = "UA"

[[profiles]]
id = "rich"
role = "treatment"
treatment = "history=income>150k"
user_agent = "UA"
{steps}
"""


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        (
            '[[profiles.history]]\nwait = "1m"\n[[profiles.history]]\nsearch = "x"',
            "starts with a search or a visit",
        ),
        ('[[profiles.history]]\nvisit = "x.org"', "String should match pattern"),
        ('[[profiles.history]]\nsearch = "x"\nvisit = "https://x.org/"', "a history step is one of"),
        ('[[profiles.history]]\nvisit = "https://x.org/"\nclick = 1', "click goes with a search"),
        (
            '[[profiles.history]]\nsearch = "x"\n[[profiles.history]]\nwait = "23.9h"',
            "takes 86040s before each pass",
        ),
    ],
)
def test_history_studies_say_what_is_wrong(steps: str, message: str) -> None:
    with pytest.raises(CrawlConfigError, match=message):
        parse_study(HISTORY.format(steps=steps))


def test_the_twin_has_the_controls_history() -> None:
    text = HISTORY.format(steps="").replace(
        'role = "control"\nuser_agent = "UA"\n',
        'role = "control"\nuser_agent = "UA"\n[[profiles.history]]\nsearch = "x"\n',
    )
    with pytest.raises(CrawlConfigError, match="history differs"):
        parse_study(text)


def one_search_history(tmp_path: Path, study_id: str, rounds: int) -> tuple[Path, float]:
    """A study whose treatment profile "hist" searches "golf clubs" one spacing (1 s: the
    round's full set-up lead, 0.25 s, on a loaded machine) before each slot."""
    return study_file(
        tmp_path,
        study_id=study_id,
        rounds=rounds,
        lead_s=1.0,
        spacing='"1s"',
        profiles=PROFILES,
        profile_extra={"hist": '\n[[profiles.history]]\nsearch = "golf clubs"\n'},
    )


def test_a_slow_history_step_is_cut_before_the_slot(tmp_path: Path) -> None:
    """The engine holds the history search for 2 s; the step is cut before the slot, recorded
    as a timeout, and the profile's measured query still leaves at the slot with the others."""
    with FakeSerpEngine() as engine:
        path, start = one_search_history(tmp_path, "slow", rounds=2)
        engine.fail("hist", SLOW)  # its first request: the history search
        summary = crawl(load_study(path), engine, tmp_path)
    assert len(summary.rounds) == 2 and summary.history() == {"hist": {"error": 1}}
    record = next(
        r for r in read_journal(tmp_path / "state" / "slow" / "journal.jsonl") if r["kind"] == "round"
    )
    (step,) = next(p for p in record["profiles"] if p["profile_id"] == "hist")["history"]
    assert step["detail"] == "timeout" and ts(step["sent_at"]) == pytest.approx(start - 1.0, abs=0.1)
    assert {p["status"] for p in record["profiles"]} == {"ok"}
    assert all(p["planned_at"] == record["slot"] for p in record["profiles"])
    assert record["skew_ms"] < 100 and record["late_ms"] < 100


def test_a_history_step_still_asleep_at_the_slot_is_on_record_as_not_begun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step whose wake-up comes after the slot (a starved event loop; here its sleep is
    held 0.5 s past the slot) is cancelled there before it began: it is recorded as skipped,
    "not begun by the slot", not left out (CI beside two CPU hogs once stored such a round
    with no history at all), and the measured query still leaves at the slot."""
    sleep_until = crawler._sleep_until
    planned: list[float] = []

    async def held(ts: float) -> None:
        if planned and abs(ts - planned[0]) < 0.01:  # the history step's own wake-up
            await sleep_until(ts + 1.5)
        else:
            await sleep_until(ts)

    monkeypatch.setattr(crawler, "_sleep_until", held)
    with FakeSerpEngine() as engine:
        path, start = one_search_history(tmp_path, "asleep", rounds=1)
        planned.append(start - 1.0)  # one spacing before the slot
        summary = crawl(load_study(path), engine, tmp_path)
        searched = [h.query for h in engine.hits]
    assert "golf clubs" not in searched and searched.count("coffee") == len(PROFILES)
    assert summary.history() == {"hist": {"skipped": 1}}
    record = next(
        r for r in read_journal(tmp_path / "state" / "asleep" / "journal.jsonl") if r["kind"] == "round"
    )
    (step,) = next(p for p in record["profiles"] if p["profile_id"] == "hist")["history"]
    assert (step["action"], step["target"], step["status"]) == ("search", "golf clubs", "skipped")
    assert step["detail"] == "not begun by the slot" and ts(step["planned_at"]) == pytest.approx(start - 1.0)
    assert record["late_ms"] < 100 and {p["status"] for p in record["profiles"]} == {"ok"}
