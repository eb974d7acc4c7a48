"""Issue 18, done-means 1 and 3: a lock-step study in real browsers, through the whole pipeline.

Four profiles (control, twin, a logged-in one whose login comes from a cookies.txt, and
a Boston one), each a persistent Chromium profile driven by Playwright, run 20 rounds
against the fake engine served on TLS under www.google.com itself (Chromium resolves
the host to the local server and accepts its throw-away certificate). The crawl runs
as ``crawl serp`` does and posts to the real service (ingest, tansu, worker, chDB).

Checked: every stored page is the one the engine served that profile in that round;
each profile sent back, from its second request on, the cookie the engine set it in
its first, and no other profile's; the archived pages are the HTML as rendered (the
page's script wrote what it saw of the browser: the profile's time zone, viewport and
language, the twin's the same as the control's); ``crawl reparse`` rebuilds the same
results from them; the personalization and noise figures in ClickHouse equal a recount
from the stored pages (written here, sharing no code with the service); and the load
skew (when each profile's page had finished loading) stays under the study's tolerance
in every round but one at most, a round over it flagged. The measured skews are printed
(``-s``).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.archive import Archive
from collectors.common.journal import read_journal
from collectors.serp.browser import launch_options
from collectors.serp.study import load_study
from tests.chromium import chromium_binary
from tests.fakes.browser_study import (
    LOGIN_COOKIE,
    VIEWPORT,
    browser_study_file,
    chromium_cli_args,
    chromium_options,
    zone,
)
from tests.fakes.serp_engine import FakeEngineScript, tls_engine
from tests.helpers import Service, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timing,
    pytest.mark.skipif(chromium_binary() is None, reason="no Chromium (apt-get install chromium)"),
]
STUDY, ROUNDS = "browser-crawl", 20
RANKS = 10


def organic(results: list[dict]) -> tuple[str, ...]:
    """Organic URLs in rank order, from a snapshot's results ({rank, type, url})."""
    return tuple(r["url"] for r in sorted(results, key=lambda r: r["rank"]) if r["type"] == "organic")


def changed(a: tuple[str, ...], b: tuple[str, ...]) -> list[int]:
    return [int((a[i] if i < len(a) else None) != (b[i] if i < len(b) else None)) for i in range(RANKS)]


def jaccard(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    x, y = set(a[:RANKS]), set(b[:RANKS])
    return len(x & y) / len(x | y) if x | y else 1.0


def test_a_browser_study_stores_what_each_profile_was_served(tmp_path: Path, service: Service) -> None:
    # a round may take 2.3 s: five cold Chromiums' first loads took over 1.3 s on an idle
    # 2-core machine (a fresh-clone CI run), and "every profile answered" is asserted below
    path = browser_study_file(tmp_path, study_id=STUDY, rounds=ROUNDS, spacing="2.5s", round_timeout="2.3s")
    study = load_study(path)
    script = FakeEngineScript(
        treatments={p.id: p.treatment for p in study.profiles}, noise=0.10, personalization=0.3, seed=18
    )
    data = tmp_path / "data"
    with tls_engine(script) as engine:
        args = ["crawl", "serp", "--study", str(path), "--url", service.url, "--api-key", service.api_key]
        args += ["--data-dir", str(data), *chromium_cli_args(engine.port)]
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        served, hits = engine.served, engine.hits
    output = " ".join(result.output.split())
    assert "rounds: 20 recorded, 0 missed, 0 undelivered of 20" in output and "load skew median" in output

    # lock-step: every round recorded, every profile answered, no retries
    records = sorted(
        (r for r in read_journal(data / "serp" / "state" / STUDY / "journal.jsonl") if r["kind"] == "round"),
        key=lambda r: r["round"],
    )
    assert [r["round"] for r in records] == list(range(ROUNDS))
    for r in records:
        assert {p["status"] for p in r["profiles"]} == {"ok"}
        assert all(p["fetcher"] == "browser" and p["attempts"] == 1 for p in r["profiles"])
        assert all(p["planned_at"] == r["slot"] for p in r["profiles"])

    # every request came to www.google.com over TLS, one per profile and round, with its settings
    assert {h.host for h in hits} == {"www.google.com"}
    by_profile: dict[str, list] = defaultdict(list)
    for hit in hits:
        by_profile[hit.profile].append(hit)
    assert {p: len(h) for p, h in by_profile.items()} == {p.id: ROUNDS for p in study.profiles}
    for profile, seen in by_profile.items():
        expected = (study.profiles[0].user_agent, "en-US,en;q=0.9")  # as the HTTP fetcher sends
        assert {(h.user_agent, h.accept_language) for h in seen} == {expected}
        # the engine's cookie from round 1 came back from round 2 on, this profile's own only
        nid = hashlib.sha1(profile.encode()).hexdigest()[:16]
        assert [h.cookies.get("NID") for h in seen] == [None] + [nid] * (ROUNDS - 1), profile
        # the logged-in profile carried its imported login, and only it did
        assert all((h.cookies.get(LOGIN_COOKIE[0]) == LOGIN_COOKIE[1]) == (profile == "login") for h in seen)

    # the twin's browser is launched exactly like the control's
    options = chromium_options(engine.port)
    control, twin = (launch_options(study.profile(role), options) for role in ("control", "control_twin"))
    assert control == twin

    # ClickHouse holds exactly the page the engine served each profile in each round
    # (the crawler's posts were accepted; the worker stores them a moment later)
    stored = wait_for(
        lambda: (
            rows
            if len(
                rows := service.sql(
                    "SELECT round_id, profile_id, results, raw_ref FROM serp_snapshots "
                    f"WHERE study_id = '{STUDY}' AND status = 'ok'"
                )
            )
            >= ROUNDS * len(study.profiles)
            else None
        ),
        60,
        "every snapshot stored",
    )
    pages = {(row["round_id"], row["profile_id"]): organic(row["results"]) for row in stored}
    assert len(pages) == len(stored) == ROUNDS * len(study.profiles)
    truth = {(s.profile, s.query, s.round): s.organic for s in served}
    for r in records:
        for profile in study.profiles:
            assert pages[r["round_id"], profile.id] == truth[profile.id, r["query"], r["round"] // 2]

    # the archive holds the pages as rendered: the page's script saw each profile's settings
    archive = Archive(data / "serp" / "archive")
    for row in stored:
        if row["round_id"] == f"{STUDY}-r0000":
            body = archive.get(row["raw_ref"]).body.decode()
            assert f'data-seen="{zone(row["profile_id"])} {VIEWPORT} en-US"' in body, row["profile_id"]

    # crawl reparse reads the rendered pages back to the same results
    reparsed = tmp_path / "reparsed.jsonl"
    again = CliRunner().invoke(
        app, ["crawl", "reparse", "--study", STUDY, "--data-dir", str(data), "--out", str(reparsed)]
    )
    assert again.exit_code == 0 and "0 changed" in again.output, again.output
    events = [json.loads(line) for line in reparsed.read_text().splitlines()]
    assert {
        (e["round_id"], e["profile_id"]): tuple(x["url"] for x in e["results"] if x["type"] == "organic")
        for e in events
    } == pages

    # the figures equal a recount from the stored pages
    def compared() -> list[dict]:
        rows = service.sql(f"SELECT state FROM personalization_rounds WHERE study_id = '{STUDY}'")
        return rows if len(rows) == ROUNDS and all(r["state"] == "complete" for r in rows) else []

    wait_for(compared, 120, "every round compared")
    figures = {
        row["treatment"]: row
        for row in service.sql(
            f"SELECT * FROM personalization_by_treatment WHERE study_id = '{STUDY}' AND links = 'organic'"
        )
    }
    noise = [
        c for r in records for c in changed(pages[r["round_id"], "control"], pages[r["round_id"], "twin"])
    ]
    for profile, treatment in (("login", "logged_in"), ("boston", "location=Boston")):
        rounds = [(pages[r["round_id"], "control"], pages[r["round_id"], profile]) for r in records]
        share = statistics.mean(c for a, b in rounds for c in changed(a, b))
        row = figures[treatment]
        assert row["changed"] == pytest.approx(share, abs=1e-9)
        assert row["changed_noise"] == pytest.approx(statistics.mean(noise), abs=1e-9)
        assert row["personalization"] == pytest.approx(share - statistics.mean(noise), abs=1e-9)
        assert row["jaccard"] == pytest.approx(statistics.mean(jaccard(a, b) for a, b in rounds), abs=1e-9)
    assert figures["logged_in"]["personalization"] > 0.1  # planted: 30% of ranks personalized

    # skew: sent within the same moment every round; loaded within the study's tolerance in
    # all rounds but at most one, and a round over it is flagged as such. Four Chromiums share
    # two cores: CI once saw one fresh browser finish its first page 1.13 s after the others
    # (its other 19 rounds under 350 ms), which no neutral warm-up page before round 0 removed
    # here, so the crawler flags such a round for the analyst rather than hiding it
    tolerance_ms = study.skew_tolerance * 1000
    sent = [r["skew_ms"] for r in records]
    loaded = [r["load_skew_ms"] for r in records]
    print(
        f"\nbrowser lock-step, {len(study.profiles)} profiles x {ROUNDS} rounds: sent skew median "
        f"{statistics.median(sent):.0f} ms, max {max(sent):.0f} ms; load skew median "
        f"{statistics.median(loaded):.0f} ms, max {max(loaded):.0f} ms (tolerance {tolerance_ms:.0f} ms)"
    )
    assert max(sent) < tolerance_ms
    assert statistics.median(loaded) < tolerance_ms / 2
    assert sum(skew >= tolerance_ms for skew in loaded) <= 1, loaded
    assert [r["over_tolerance"] for r in records] == [skew > tolerance_ms for skew in loaded]
