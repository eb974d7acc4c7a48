"""The browser fetcher (issue 18): consent walls, CAPTCHAs found in the rendered page, the
persistent profile, and what ``crawl serp`` tells the operator; the load skew of both fetchers.

The engine is the fake one, on TLS under www.google.com (Chromium resolves the host to
it and accepts its throw-away certificate), as in ``tests/integration/test_browser_crawl.py``,
which runs a whole study through the service.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditstream.cli import app
from collectors.common.archive import Archive
from collectors.common.exceptions import CrawlConfigError
from collectors.common.journal import read_journal
from collectors.serp.browser import BrowserFetcher, BrowserOptions, launch_options, playwright_driver
from collectors.serp.parser import parse_serp
from collectors.serp.study import Profile, load_study
from tests.chromium import chromium_binary
from tests.fakes.browser_study import PROFILES, browser_study_file, chromium_cli_args, chromium_options
from tests.fakes.serp_engine import (
    CAPTCHA_503,
    RENDERED_CAPTCHA,
    FakeSerpEngine,
    rendered_captcha_page,
    tls_engine,
)
from tests.fakes.serp_study import UA
from tests.helpers import read_events

runner = CliRunner()
needs_chromium = pytest.mark.skipif(
    chromium_binary() is None, reason="no Chromium (apt-get install chromium)"
)
SEARCH = "https://www.google.com/search"


def flat(text: str) -> str:
    return " ".join(text.split())


def journal_rounds(state: Path, study_id: str) -> list[dict[str, Any]]:
    records = read_journal(state / study_id / "journal.jsonl")
    return sorted((r for r in records if r["kind"] == "round"), key=lambda r: r["round"])


def profile(pid: str = "p", **kw: Any) -> Profile:
    return Profile(id=pid, role="control", user_agent=UA, **kw)


@needs_chromium
def test_consent_walls_and_rendered_captchas_are_handled_and_reported(tmp_path: Path) -> None:
    """Done-means 2: the wall is rejected as the study says, the CAPTCHA that only a script
    draws is found in the rendered page, not retried, counted, and the CLI says both."""
    three = PROFILES[:3]  # control, twin, login
    path = browser_study_file(tmp_path, study_id="walls", rounds=2, consent="reject", profiles=three)
    state, out = tmp_path / "state", tmp_path / "events.jsonl"
    with tls_engine() as engine:
        engine.walled = {"twin", "login"}
        engine.fail("login", RENDERED_CAPTCHA)  # round 0: a CAPTCHA instead of the wall
        args = ["crawl", "serp", "--study", str(path), "--out", str(out), "--state-dir", str(state)]
        args += ["--archive-dir", str(tmp_path / "archive"), *chromium_cli_args(engine.port)]
        result = runner.invoke(app, args, terminal_width=200)
        assert result.exit_code == 0, result.output
        hits, consents = engine.hits, engine.consents

    text = flat(result.output)
    assert "round walls-r0000: consent wall (reject): twin rejected" in text
    assert "round walls-r0000: {'login': 'captcha'}" in text
    assert "round walls-r0001: consent wall (reject): login rejected" in text
    assert (
        "consent walls met by login: 1 rejected" in text and "consent walls met by twin: 1 rejected" in text
    )
    assert "CAPTCHA or block pages (not retried within their round): login 1" in text
    assert "load skew median" in text and "loaded within" in text

    # the engine saw each button pressed once; the CAPTCHA was not asked again in its round
    assert sorted(consents) == [("login", "reject"), ("twin", "reject")]
    login = [h for h in hits if h.profile == "login"]
    assert [h.answer for h in login] == [RENDERED_CAPTCHA, "200", "200"]  # captcha; wall, then results
    assert "SOCS" in login[-1].cookies and all(
        "SOCS" not in h.cookies for h in hits if h.profile == "control"
    )

    rounds = journal_rounds(state, "walls")
    first, second = ({p["profile_id"]: p for p in r["profiles"]} for r in rounds)
    assert (first["twin"]["status"], first["twin"]["consent"]) == ("ok", "rejected")
    assert (first["login"]["status"], first["login"]["attempts"]) == ("captcha", 1)
    assert (second["login"]["status"], second["login"]["consent"]) == ("ok", "rejected")
    assert second["twin"]["consent"] == "" and first["control"]["consent"] == ""
    # the archive holds the page as rendered (the CAPTCHA the script drew) and the consent outcome
    archive = Archive(tmp_path / "archive")
    captcha = archive.get(first["login"]["raw_ref"])
    assert 'id="captcha-form"' in captcha.body.decode() and captcha.meta["fetcher"] == "browser"
    assert archive.get(first["twin"]["raw_ref"]).meta["consent"] == "rejected"
    events = {(e["round_id"], e["profile_id"]): e for e in read_events(out)}
    assert events["walls-r0000", "login"]["status"] == "captcha"
    assert {e["status"] for k, e in events.items() if k != ("walls-r0000", "login")} == {"ok"}


def test_a_rendered_captcha_is_invisible_in_the_html_as_served() -> None:
    """Why the browser matters: the served HTML is no result page but shows no CAPTCHA either."""
    parsed = parse_serp("google", rendered_captcha_page())
    assert (parsed.status, parsed.detail) == ("error", "not a result page")


@needs_chromium
def test_accept_or_leave_a_wall_and_the_profile_persists_between_runs(tmp_path: Path) -> None:
    async def go(engine: FakeSerpEngine) -> None:
        options = chromium_options(engine.port)
        cookies_txt = tmp_path / "jar.txt"
        expires = int(time.time()) + 86400
        cookies_txt.write_text(f".google.com\tTRUE\t/\tTRUE\t{expires}\tSID\tfirst\n")
        url = f"{SEARCH}?q=coffee"

        def fetcher(pid: str, action: Any, jar: Path | None = None) -> BrowserFetcher:
            p = profile(pid, cookies={"profile": pid}, cookies_file=jar)
            return BrowserFetcher(
                p, "google", SEARCH, user_data_dir=tmp_path / pid, options=options, consent_action=action
            )

        async with playwright_driver() as pw:
            accept, leave = fetcher("accepter", "accept", cookies_txt), fetcher("leaver", "leave")
            await asyncio.gather(accept.start(pw), leave.start(pw))
            try:
                accepted, left = await asyncio.gather(
                    accept.fetch(url, time_limit=20), leave.fetch(url, time_limit=20)
                )
            finally:
                await asyncio.gather(accept.aclose(), leave.aclose())
            assert (accepted.consent, accepted.http_status, accepted.url) == ("accepted", 200, url)
            assert parse_serp("google", accepted.body).status == "ok"
            assert left.consent == "left"
            assert (parse_serp("google", left.body).status, parse_serp("google", left.body).detail) == (
                "blocked",
                "consent interstitial instead of results",
            )
            # the next run: the same profile directory remembers the consent and its cookies,
            # and the cookies file (changed meanwhile) is not imported over them again
            cookies_txt.write_text(f".google.com\tTRUE\t/\tTRUE\t{expires}\tSID\tsecond\n")
            again = fetcher("accepter", "accept", cookies_txt)
            await again.start(pw)
            try:
                page = await again.fetch(url, time_limit=20)
            finally:
                await again.aclose()
            assert page.consent == "" and parse_serp("google", page.body).status == "ok"

    with tls_engine() as engine:
        engine.walled = {"accepter", "leaver"}
        asyncio.run(go(engine))
        accepter = [h for h in engine.hits if h.profile == "accepter"]
    assert engine.consents == [("accepter", "accept")]
    # hits: the wall, the results after it, the second run's results
    assert [h.cookies.get("SOCS") for h in accepter] == [None, "CAEaccept", "CAEaccept"]
    assert [h.cookies.get("SID") for h in accepter] == ["first"] * 3  # imported once, then kept


def test_the_http_fetcher_reports_load_skew_and_never_retries_a_captcha(tmp_path: Path) -> None:
    """Done-means 3 for the HTTP fetcher, and a CAPTCHA behind a 503 is not asked again."""
    path = browser_study_file(
        tmp_path, study_id="plain", rounds=2, spacing="1s", round_timeout="800ms", fetcher="http"
    )
    text = path.read_text().replace('retry_backoff = "50ms"', 'retry_backoff = "50ms"\nretries = 2')
    path.write_text(text)
    with FakeSerpEngine() as engine:
        engine.fail("boston", CAPTCHA_503)
        args = ["crawl", "serp", "--study", str(path), "--out", str(tmp_path / "e.jsonl")]
        args += ["--state-dir", str(tmp_path / "state"), "--archive-dir", str(tmp_path / "archive")]
        result = runner.invoke(app, [*args, "--endpoint", f"google={engine.base_url}"], terminal_width=200)
        assert result.exit_code == 0, result.output
        boston = [h for h in engine.hits if h.profile == "boston"]
    text = flat(result.output)
    assert "plain-r0000 'coffee': skew" in text and "loaded within" in text and "load skew median" in text
    assert "CAPTCHA or block pages (not retried within their round): boston 1" in text
    assert len(boston) == 2  # one per round: the 503 CAPTCHA was not retried
    for r in journal_rounds(tmp_path / "state", "plain"):
        assert r["load_skew_ms"] is not None and r["load_skew_ms"] >= 0
        assert {p["fetcher"] for p in r["profiles"]} == {"http"}


def test_the_twin_is_launched_like_the_control_and_proxies_carry_their_login(tmp_path: Path) -> None:
    path = browser_study_file(tmp_path, study_id="launch", rounds=1)
    study = load_study(path)
    options = BrowserOptions("/usr/bin/chromium", ("--foo",))
    control = launch_options(study.profile("control"), options)
    assert control == launch_options(study.profile("control_twin"), options)
    assert control["viewport"] == {"width": 1280, "height": 800} and control["timezone_id"] == "Europe/Zurich"
    assert launch_options(study.profiles[3], options)["timezone_id"] == "America/New_York"
    with_proxy = launch_options(profile(proxy="http://alice:p%40ss@10.0.0.2:3128"), options)
    assert with_proxy["proxy"] == {"server": "http://10.0.0.2:3128", "username": "alice", "password": "p@ss"}
    assert launch_options(profile(proxy="socks5://10.0.0.3:1080"), options)["proxy"] == {
        "server": "socks5://10.0.0.3:1080"
    }


def test_the_browser_fetcher_says_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nowhere = BrowserFetcher(
        profile(),
        "google",
        SEARCH,
        user_data_dir=tmp_path / "b",
        options=BrowserOptions("/nonexistent/chrome"),
    )
    with pytest.raises(CrawlConfigError, match=r"no Chromium at /nonexistent/chrome.*AUDITSTREAM_CHROMIUM"):
        asyncio.run(nowhere.start())
    path = browser_study_file(tmp_path, study_id="nochromium", rounds=1)
    args = ["crawl", "serp", "--study", str(path), "--out", str(tmp_path / "e.jsonl")]
    args += ["--data-dir", str(tmp_path)]
    result = runner.invoke(app, args, env={"AUDITSTREAM_CHROMIUM": "/elsewhere/chromium"}, terminal_width=200)
    assert result.exit_code == 1 and "no Chromium at /elsewhere/chromium" in flat(result.output)
    monkeypatch.setitem(sys.modules, "playwright", None)  # as if the extra were not installed
    with pytest.raises(CrawlConfigError, match=r"pip install 'auditstream\[browser\]'"):
        asyncio.run(nowhere.start())
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 1 and "pip install 'auditstream[browser]'" in flat(result.output)


def browser_pids(user_data_dir: Path) -> list[int]:
    """The main Chromium process of a profile directory (its helpers carry --type=...)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--user-data-dir={user_data_dir}".encode() in args and not any(
            a.startswith(b"--type=") for a in args
        ):
            pids.append(int(proc.name))
    return pids


@needs_chromium
def test_a_browser_that_died_is_started_again_at_the_next_fetch(tmp_path: Path) -> None:
    async def go(engine: FakeSerpEngine) -> tuple[Any, Any, Any]:
        p = profile("crashy", cookies={"profile": "crashy"})
        fetcher = BrowserFetcher(
            p, "google", SEARCH, user_data_dir=tmp_path / "crashy", options=chromium_options(engine.port)
        )
        await fetcher.start()
        try:
            before = await fetcher.fetch(f"{SEARCH}?q=coffee", time_limit=20)
            (pid,) = browser_pids(tmp_path / "crashy")
            os.kill(pid, signal.SIGKILL)
            async with asyncio.timeout(20):
                while not fetcher.gone:
                    await asyncio.sleep(0.05)  # wait-ok: polling for Playwright to notice, under a deadline
            after = await fetcher.fetch(f"{SEARCH}?q=tea", time_limit=20)
            return before, after, browser_pids(tmp_path / "crashy")
        finally:
            await fetcher.aclose()

    with tls_engine() as engine:
        before, after, pids = asyncio.run(go(engine))
        served = [(h.profile, h.query) for h in engine.hits]
    assert before.http_status == after.http_status == 200 and after.consent == ""
    assert parse_serp("google", after.body).status == "ok" and len(pids) == 1
    assert served == [("crashy", "coffee"), ("crashy", "tea")]


def test_the_consent_buttons_are_the_walls_buttons() -> None:
    """Each action's selectors find that button, and only it, on Google's wall (the stored page
    and the fake's), so accept never presses reject."""
    from selectolax.lexbor import LexborHTMLParser

    from collectors.serp.consent import buttons
    from tests.fakes.serp_engine import FIXTURES, consent_page

    google = buttons("google")
    for html in ((FIXTURES / "google_consent.html").read_text(), consent_page("/search?q=x")):
        doc = LexborHTMLParser(html)
        for selectors, label in ((google.accept, "Accept all"), (google.reject, "Reject all")):
            found = {node.text(strip=True) for s in selectors for node in doc.css(s)}
            assert found == {label}
    assert buttons("yahoo").all == ()  # an engine without a table: the wall is only recorded
