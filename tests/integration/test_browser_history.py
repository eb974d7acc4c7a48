"""Issues 17 and 18 in real browsers, through the whole pipeline: a history profile's steps
(search and click, visit) in its own Chromium before its queries, and the consent outcome
and page load time stored with every snapshot.

Three profiles (control, twin, and a history profile), each a persistent Chromium driven
by Playwright, against the fake engine on TLS under www.google.com. The twin and the
history profile meet the engine's consent wall; the study accepts walls. The history
profile meets it in its first history search, so its measured pages have none; the twin
meets it at round 0's query. Organic links go through ``/url?q=``, so the click reaches
the engine.

Checked: the steps reached the engine in order, at their planned times, before the
slot, with the profile's cookies (its own, the engine's NID, the consent choice); the
measured rounds stayed in lock step; the journal records each step with its archived
page; ``serp_snapshots`` stores ``consent`` (``accepted`` for the twin's round 0, ``none``
for every other page) and ``loaded_at``, from which the load skew of each round equals
the crawler's journal.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.archive import Archive
from collectors.common.journal import read_journal
from collectors.serp.study import load_study
from tests.chromium import chromium_binary
from tests.fakes.browser_study import browser_study_file, chromium_cli_args
from tests.fakes.serp_engine import FakeEngineScript, tls_engine
from tests.helpers import Service, wait_for

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timing,
    pytest.mark.skipif(chromium_binary() is None, reason="no Chromium (apt-get install chromium)"),
]
STUDY = "browser-history"
PROFILES = (("control", "control", ""), ("twin", "control_twin", ""), ("hist", "treatment", "history=golf"))
HISTORY = (
    '[[profiles.history]]\nsearch = "golf clubs"\nclick = 1\n'
    '[[profiles.history]]\nvisit = "https://www.google.com/page/club-news"\n'
)


def ts(text: str) -> float:
    """An ISO time from the journal, or a DateTime64 as ClickHouse writes it (UTC)."""
    moment = datetime.fromisoformat(text.replace(" ", "T"))
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def test_history_in_the_browser_and_the_consent_outcome_in_the_data(tmp_path: Path, service: Service) -> None:
    path = browser_study_file(
        tmp_path,
        study_id=STUDY,
        rounds=2,
        consent="accept",
        profiles=PROFILES,
        extra='history_step = "2s"\n',
        profile_extra={"hist": HISTORY},
    )
    study = load_study(path)
    lead = study.lead(0)
    assert lead == 5.0  # search (and click) 2 s before the visit, one spacing (3 s) before the slot
    data = tmp_path / "data"
    with tls_engine(FakeEngineScript(click_redirect=True)) as engine:
        engine.walled = {"twin", "hist"}
        args = ["crawl", "serp", "--study", str(path), "--url", service.url, "--api-key", service.api_key]
        args += ["--data-dir", str(data), *chromium_cli_args(engine.port)]
        result = CliRunner().invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        hits, consents = engine.hits, engine.consents
    records = sorted(
        (r for r in read_journal(data / "serp" / "state" / STUDY / "journal.jsonl") if r["kind"] == "round"),
        key=lambda r: r["round"],
    )
    assert [r["round"] for r in records] == [0, 1]
    slot = ts(records[0]["slot"])

    # the history profile's requests, in order: the wall, the search behind it (after the
    # accept), the click, the visit, then its two queries; its cookies on every one
    mine = [h for h in hits if h.profile == "hist"]
    assert [(h.path, h.query if h.path == "/search" else "") for h in mine] == [
        ("/search", "golf clubs"),
        ("/search", "golf clubs"),
        ("/url", ""),
        ("/page/club-news", ""),
        ("/search", "coffee"),
        ("/search", "pizza boston"),
    ]
    assert ("hist", "accept") in consents
    nid = hashlib.sha1(b"hist").hexdigest()[:16]
    assert all(h.host == "www.google.com" and h.cookies["profile"] == "hist" for h in mine)
    assert [h.cookies.get("NID") == nid for h in mine] == [False, False, True, True, True, True]
    assert ["SOCS" in h.cookies for h in mine] == [False] + [True] * 5
    assert [("VISITED" in h.cookies) for h in mine] == [False] * 4 + [True] * 2
    # on plan, and done before round 0's slot
    assert slot - lead <= mine[0].at < slot - lead + 1.0
    visit = slot - study.study.spacing  # one spacing before the slot
    assert visit <= mine[3].at < visit + 1.0
    assert all(h.at < slot for h in mine[:4])
    assert not any(h.path != "/search" for h in hits if h.profile != "hist")

    # the measured rounds were planned in lock step and each page fetched once; whether three
    # Chromiums also sent and loaded within the tolerance depends on the machine (it fails
    # under two CPU hogs beside the suite; test_browser_crawl and bench.serp_skew cover
    # the skew), so here the journal's flag must agree with its own measured skews
    tolerance_ms = study.skew_tolerance * 1000
    for r in records:
        assert {p["status"] for p in r["profiles"]} == {"ok"}
        assert all(p["planned_at"] == r["slot"] and p["attempts"] == 1 for p in r["profiles"])
        assert r["over_tolerance"] == (max(r["skew_ms"], r["load_skew_ms"]) > tolerance_ms)

    # the journal has each step, its page archived as rendered
    hist = next(p for p in records[0]["profiles"] if p["profile_id"] == "hist")
    steps = hist["history"]
    assert [(s["action"], s["status"], s["consent"]) for s in steps] == [
        ("search", "ok", "accepted"),
        ("click", "ok", ""),
        ("visit", "ok", ""),
    ]
    archive = Archive(data / "serp" / "archive")
    click = archive.get(steps[1]["raw_ref"])
    assert click.meta["fetcher"] == "browser" and "Redirect Notice" in click.body.decode()
    assert steps[1]["target"] == next(h.query for h in mine if h.path == "/url")
    assert "history" not in records[1]["profiles"][2]

    # the consent outcome and the load time are in the data
    def stored() -> list[dict]:
        rows = service.sql(
            "SELECT round_id, profile_id, consent, loaded_at, sent_at FROM serp_snapshots "
            f"WHERE study_id = '{STUDY}'"
        )
        return rows if len(rows) == 2 * len(PROFILES) else []

    rows = wait_for(stored, 60, "every snapshot stored")
    consent = {(row["round_id"][-5:], row["profile_id"]): row["consent"] for row in rows}
    assert consent == {
        ("r0000", "control"): "none",
        ("r0000", "twin"): "accepted",
        ("r0000", "hist"): "none",
        ("r0001", "control"): "none",
        ("r0001", "twin"): "none",
        ("r0001", "hist"): "none",
    }
    for r in records:
        loaded = [ts(row["loaded_at"]) for row in rows if row["round_id"] == r["round_id"]]
        assert (max(loaded) - min(loaded)) * 1000 == pytest.approx(r["load_skew_ms"], abs=1.5)
        answered = {p["profile_id"]: ts(p["answered_at"]) for p in r["profiles"]}
        for row in rows:
            if row["round_id"] == r["round_id"]:
                assert ts(row["loaded_at"]) == pytest.approx(answered[row["profile_id"]], abs=1e-3)
