"""The live board in a real headless Chromium against the real service: every panel shows
the numbers that are in ClickHouse, the page updates without a reload when events arrive,
and nothing is logged as an error in the browser console.

The browser is Debian's ``/usr/bin/chromium`` driven over the Chrome DevTools Protocol
(a small client over aiohttp websockets below); no browser download is needed. The
screenshot goes to ``$AUDITSTREAM_ARTIFACTS_DIR/board.png`` (default ``artifacts/``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import random
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import orjson
import pytest

from collectors.simulate.autocomplete_traffic import AutocompleteSimulation, CrawlConfig
from collectors.simulate.extension_traffic import DEFAULT_ARMS, ExtensionTraffic, TrafficConfig
from collectors.simulate.poster import post_batches
from tests.helpers import Service, http, post_study, report_json, wait_for

pytestmark = pytest.mark.integration
T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]
EXP = "board-exp"
SALT = "board-salt-0001"
STUDY = CrawlConfig(
    roots=("asa hutchinson", "jeb bush", "ted cruz", "bernie sanders"),
    drift=0.05,
    shock_rounds=frozenset({4}),
    seed=11,
    study="board-ac",
)
AC_ROUNDS = 6  # nmi from round 1; three rounds of history before the shock in round 4
AC_PREFIX = f"{STUDY.study}-{STUDY.engine}-"
PERS = "board-pers"
PANELS = (
    "panel-ctr",
    "panel-gap",
    "panel-corrections",
    "panel-shares",
    "panel-box",
    "panel-srm",
    "panel-markets",
    "panel-drops",
    "panel-churn",
    "panel-nmi",
    "panel-pers",
    "panel-figures",
    "panel-alerts",
)


def artifacts_dir() -> Path:
    path = Path(os.environ.get("AUDITSTREAM_ARTIFACTS_DIR") or REPO / "artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


# --------------------------------------------------------------------------- browser


def launch_chromium(profile: Path) -> tuple[subprocess.Popen[bytes], str]:
    """Start headless Chromium with a DevTools port of its choosing; return it and the page's
    websocket address."""
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    assert Path(executable).exists(), "install Chromium: apt-get install -y chromium"
    with open(profile.parent / "chromium.log", "wb") as log:  # the child keeps its own copy
        proc = subprocess.Popen(
            [
                executable,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1400,1000",
                "about:blank",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    port_file = profile / "DevToolsActivePort"
    port = int(wait_for(lambda: port_file.exists() and port_file.read_text().split()[0], 30, "Chromium"))
    pages = wait_for(
        lambda: [
            t
            for t in http("GET", f"http://127.0.0.1:{port}/json/list", timeout=5).body
            if t["type"] == "page"
        ],
        30,
        "a page target",
    )
    return proc, str(pages[0]["webSocketDebuggerUrl"])


class Browser:
    """One headless Chromium page over CDP: commands, events, console errors."""

    def __init__(self, profile: Path) -> None:
        self.profile = profile
        self.proc: subprocess.Popen[bytes] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.ws: aiohttp.ClientWebSocketResponse | None = None
        self.reader: asyncio.Task[None] | None = None
        self.ids = itertools.count(1)
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []

    async def start(self) -> None:
        self.proc, page_ws = await asyncio.to_thread(launch_chromium, self.profile)
        self.session = aiohttp.ClientSession()
        self.ws = await self.session.ws_connect(page_ws, max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        for domain in ("Page", "Runtime", "Log"):
            await self.send(f"{domain}.enable")

    async def _read(self) -> None:
        assert self.ws is not None
        async for msg in self.ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            data = orjson.loads(msg.data)
            future = self.pending.pop(data["id"], None) if "id" in data else None
            if future is not None and not future.done():
                future.set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.ws is not None
        ident = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[ident] = future
        await self.ws.send_str(orjson.dumps({"id": ident, "method": method, "params": params}).decode())
        answer = await asyncio.wait_for(future, 60)
        assert "error" not in answer, (method, answer["error"])
        return dict(answer["result"])

    async def js(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, (expression, result["exceptionDetails"])
        return result["result"].get("value")

    async def navigate(self, url: str) -> None:
        await self.send("Page.navigate", url=url)
        probe = f"location.href === {orjson.dumps(url).decode()} && document.readyState === 'complete'"
        await until(lambda: self.js(probe), 30, f"{url} to load")

    def console_errors(self) -> list[dict[str, Any]]:
        errors = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if (
                (method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"))
                or method == "Runtime.exceptionThrown"
                or (method == "Log.entryAdded" and params["entry"].get("level") == "error")
            ):
                errors.append(event)
        return errors

    def navigations(self) -> int:
        return sum(1 for e in self.events if e["method"] == "Page.frameNavigated")

    async def screenshot(self, path: Path) -> None:
        height = int(await self.js("document.documentElement.scrollHeight"))
        await self.send(
            "Emulation.setDeviceMetricsOverride", width=1400, height=height, deviceScaleFactor=1, mobile=False
        )
        shot = await self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader
        if self.session is not None:
            await self.session.close()
        if self.proc is not None:
            self.proc.terminate()
            await asyncio.to_thread(self.proc.wait, 20)


@pytest.fixture
async def browser(tmp_path: Path) -> AsyncIterator[Browser]:
    b = Browser(tmp_path / "chromium-profile")
    try:
        await b.start()
        yield b
    finally:
        await b.close()


async def until(predicate: Callable[[], Awaitable[T]], within: float, what: str) -> T:
    """Poll an async condition until it is truthy; fail with ``what`` after ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: Any = None
    while loop.time() < deadline:
        last = await predicate()
        if last:
            return last
        await asyncio.sleep(0.2)  # wait-ok: poll interval under a deadline
    raise AssertionError(f"timed out after {within}s waiting for {what}; last value: {last!r}")


# --------------------------------------------------------------------------- the study


def register(service: Service) -> None:
    body = {
        "experiment_id": EXP,
        "engines": ["google", "bing"],
        "arms": dict(DEFAULT_ARMS),
        "salt": SALT,
        "start": datetime.now(UTC).date().isoformat(),
    }
    headers = {"Authorization": f"Bearer {service.api_key}", "Content-Type": "application/json"}
    assert http("POST", service.url + "/v1/experiments", orjson.dumps(body), headers).status == 201


def post_autocomplete(service: Service) -> None:
    """Crawl rounds in order, as a crawler sends them; the planted shock raises one alert."""
    sim = AutocompleteSimulation(STUDY)
    for r in range(AC_ROUNDS):
        events = list(sim.crawl_round(r))
        stats = asyncio.run(post_batches(service.url, service.api_key, [events], concurrency=1))
        assert stats.accepted == len(events)
    wait_for(
        lambda: (
            service.scalar(
                f"SELECT count() FROM autocomplete_crawls WHERE startsWith(crawl_id, '{AC_PREFIX}')"
            )
            == AC_ROUNDS * len(STUDY.roots)
        ),
        120,
        "every crawl analysed",
    )
    wait_for(
        lambda: service.scalar(
            "SELECT count() FROM alerts WHERE kind = 'autocomplete_shock' "
            f"AND subject = 'google/{AC_PREFIX}r0004'"
        ),
        60,
        "the shock alert",
    )


def post_personalization(service: Service) -> None:
    """Six lock-step rounds of a control, its twin and two treatments."""
    rng = random.Random(5)
    profiles = (
        ("b-ctl", "control", ""),
        ("b-twin", "control_twin", ""),
        ("b-in", "treatment", "logged_in"),
        ("b-ca", "treatment", "location=CA"),
    )
    start = datetime.now(UTC)
    events = []
    for r in range(6):
        query = f"board query {r % 2}"
        base = [f"https://site{i}.example/{r % 2}" for i in range(10)]
        for k, (profile_id, role, treatment) in enumerate(profiles):
            p = 0.08 if role != "treatment" else 0.3
            urls = [f"https://other.example/{rng.random()}" if rng.random() < p else u for u in base]
            sent = start + timedelta(seconds=r, milliseconds=5 * k)
            events.append(
                {
                    "type": "serp_snapshot",
                    "schema_version": 1,
                    "event_id": str(uuid.uuid4()),
                    "sent_at": sent.isoformat(timespec="milliseconds"),
                    "study_id": PERS,
                    "round_id": f"{PERS}-r{r:04d}",
                    "profile_id": profile_id,
                    "role": role,
                    "treatment": treatment,
                    "engine": "google",
                    "query": query,
                    "query_category": "news",
                    "results": [{"rank": i + 1, "type": "organic", "url": u} for i, u in enumerate(urls)],
                    "result_estimate": 1000,
                    "status": "ok",
                    "raw_ref": "",
                }
            )
    assert service.post(events).status == 202
    wait_for(
        lambda: (
            service.scalar(
                "SELECT count() FROM personalization_pairs "
                f"WHERE study_id = '{PERS}' AND kind = 'noise' AND links = 'primary'"
            )
            == 6
        ),
        60,
        "personalization rounds compared",
    )


@pytest.fixture(scope="module")
def study(service: Service) -> Service:
    """Every panel's data in the session service, under ids no other test uses."""
    register(service)
    post_study(service, TrafficConfig(experiment_id=EXP, salt=SALT, seed=31, installs=300, p_box=0.25), 6_000)
    post_autocomplete(service)
    post_personalization(service)
    return service


# --------------------------------------------------------------------------- reading the page


PANEL_STATES = (
    "Object.fromEntries([...document.querySelectorAll('section.panel')]"
    ".map(p => [p.id, [p.dataset.state, Number(p.dataset.rows)]]))"
)


def cell(panel: str, arm: str, field: str) -> str:
    return f'document.querySelector(\'#{panel} td[data-arm="{arm}"][data-field="{field}"]\')'


def value(panel: str, arm: str, field: str) -> str:
    """JS reading one number a table shows, from its data-value."""
    return f"({cell(panel, arm, field)} || {{dataset: {{}}}}).dataset.value ?? null"


def panel_data(panel: str, name: str) -> str:
    return f"document.getElementById('{panel}').dataset.{name}"


def all_of(selector: str) -> str:
    return f"[...document.querySelectorAll('{selector}')]"


READINGS = {
    "units": value("panel-ctr", "control", "units"),
    "ctr_c1": value("panel-ctr", "control", "ctr_c1"),
    "ctr_text": f"({cell('panel-ctr', 'control', 'ctr_c1')} || {{}}).firstChild?.textContent ?? null",
    "box_units": value("panel-box", "control", "units"),
    "box_beta_c1": value("panel-box", "control", "beta_c1"),
    "delta_c1": value("panel-gap", "swap_1_2", "delta_c1"),
    "organic": value("panel-shares", "control", "organic"),
    "kept": value("panel-drops", "*", "kept"),
    "burn_in": value("panel-drops", "*", "burn_in_dropped"),
    "srm_units": value("panel-srm", "control", "units"),
    "srm_status": panel_data("panel-srm", "status"),
    "churn_cells": f"{all_of('#panel-churn rect[data-value]')}.length",
    "shocks": f"Number({panel_data('panel-nmi', 'shocks')})",
    "shock_bands": f"{all_of('#panel-nmi rect[data-shock]')}.map(r => r.dataset.shock)",
    "nmi_rounds": f"Number({panel_data('panel-nmi', 'rows')})",
    "pers_rows": f"Number({panel_data('panel-pers', 'rows')})",
    "alert_kinds": f"{all_of('#panel-alerts li')}.map(li => li.dataset.kind)",
    "ctr_title": "document.querySelector('#panel-ctr h3 .title').textContent",
    "corrections_title": "document.querySelector('#panel-corrections h3 .title').textContent",
    "ctr_ticks": f"{all_of('#panel-ctr svg.chart > text')}.map(t => Number(t.textContent))"
    ".filter(x => !Number.isNaN(x))",
    "ctr_whiskers_below_zero": (
        "(() => { const zero = document.querySelector('#panel-ctr svg.chart line.zero');"
        " const y0 = Number(zero.getAttribute('y1'));"
        f" return {all_of('#panel-ctr svg.chart line.whisker')}"
        ".filter(w => Math.max(Number(w.getAttribute('y1')), Number(w.getAttribute('y2'))) > y0 + 1e-6)"
        ".length; })()"
    ),
}


async def board_numbers(browser: Browser) -> dict[str, Any]:
    """What the page shows, read from the DOM."""
    return dict(await browser.js("({" + ", ".join(f"{k}: {v}" for k, v in READINGS.items()) + "})"))


# --------------------------------------------------------------------------- the test


async def test_board_shows_clickhouse_numbers_and_updates_live(study: Service, browser: Browser) -> None:
    svc = study
    # Without a key the page asks for one and fetches nothing.
    await browser.navigate(f"{svc.url}/board")
    await until(
        lambda: browser.js(
            "!document.getElementById('prompt').hidden && document.getElementById('board').hidden"
        ),
        30,
        "the key prompt",
    )

    fragment = f"key={svc.api_key}&experiment={EXP}&engine=google&ac={AC_PREFIX}&ps={PERS}&every=1"
    await browser.navigate(f"{svc.url}/board#{fragment}")
    states = await until(  # the figures section draws its 20 figures (6 + 7 + 7) one after another
        lambda: _all_ready(browser), 180, "every panel to show data (data-state=ready, rows > 0)"
    )
    assert set(states) == set(PANELS), states
    drawn = await browser.js(
        "[...document.querySelectorAll('#panel-figures figure')]"
        ".map(f => [f.dataset.figure, f.dataset.state])"
    )
    assert len(drawn) == 20 and all(state == "ready" for _, state in drawn), drawn

    # The numbers are the report's and ClickHouse's.
    shown = await board_numbers(browser)
    report = await asyncio.to_thread(report_json, svc, EXP)
    control = next(a for a in report["arms"] if a["arm"] == "control")
    assert int(shown["units"]) == control["units"]
    assert float(shown["ctr_c1"]) == control["ctr_c1"]
    assert shown["ctr_text"] == f"{control['ctr_c1']:.3f}"
    swap = next(a for a in report["arms"] if a["arm"] == "swap_1_2")
    assert float(shown["delta_c1"]) == swap["delta_c1"]
    shares = next(s for s in report["element_shares"] if s["arm"] == "control")
    assert float(shown["organic"]) == pytest.approx(shares["organic"], abs=5e-5)
    drops = report["preprocessing"]
    assert int(shown["burn_in"]) == sum(d["burn_in_dropped"] for d in drops) > 0
    kept = sum(d["all_units"] - d["burn_in_dropped"] - d["unidentified_dropped"] for d in drops)
    assert int(shown["kept"]) == kept == sum(a["units"] for a in report["arms"])
    assert int(shown["srm_units"]) == control["units"] and shown["srm_status"] == "ok"
    # The title names the intervals drawn (the board's default: confidence sequences), and
    # the CTR axis and whiskers stay at or above 0 (issue 37).
    assert shown["ctr_title"] == "CTR per position by arm, 95% confidence sequence"
    assert shown["ctr_ticks"] and min(shown["ctr_ticks"]) == 0
    assert shown["ctr_whiskers_below_zero"] == 0
    # The family's tests, Holm-corrected by default (issue 38).
    assert shown["corrections_title"].startswith("Holm over "), shown["corrections_title"]

    figure5 = await asyncio.to_thread(
        report_json, svc, EXP, "--subset", "box", "--baseline", "hide_ads_box", "--ranks", "3"
    )
    box_control = next(a for a in figure5["arms"] if a["arm"] == "control")
    assert int(shown["box_units"]) == box_control["units"] > 0
    assert float(shown["box_beta_c1"]) == box_control["beta_c1"]

    cells = await asyncio.to_thread(
        svc.scalar,
        "SELECT count() FROM (SELECT engine, rank, depth FROM autocomplete_churn "
        f"WHERE startsWith(crawl_id, '{AC_PREFIX}') GROUP BY engine, rank, depth)",
    )
    assert shown["churn_cells"] == cells > 0
    assert shown["nmi_rounds"] == AC_ROUNDS - 1  # nmi compares each crawl with the one before
    assert shown["shocks"] == 1 and shown["shock_bands"] == [f"{AC_PREFIX}r0004"]
    by_rank = await asyncio.to_thread(
        svc.scalar,
        f"SELECT count() FROM personalization_by_rank WHERE study_id = '{PERS}' AND links = 'primary'",
    )
    assert shown["pers_rows"] == by_rank > 0
    assert "autocomplete_shock" in shown["alert_kinds"]

    shot = artifacts_dir() / "board.png"
    await browser.screenshot(shot)
    print(f"board screenshot: {shot}")
    assert shot.stat().st_size > 10_000

    # New events appear without a reload.
    await browser.js("window.__sameDocument = 'yes'")
    navigations = browser.navigations()
    more = TrafficConfig(experiment_id=EXP, salt=SALT, seed=32, installs=60, p_new_install=0.0)
    stats = await post_batches(svc.url, svc.api_key, ExtensionTraffic(more).batches(200, 1_000))
    assert stats.accepted == 1_000
    await until(
        lambda: asyncio.to_thread(
            lambda: (
                svc.scalar(
                    "SELECT sum(units) + sum(impressions) + sum(later_units) + sum(later_impressions) "
                    "FROM arrangement_install_day "
                    f"WHERE experiment_id = '{EXP}'"
                )
                == 7_000
                # the report reads the per-subset rows, recomputed last (after the hours)
                and svc.scalar(
                    "SELECT sum(units) + sum(impressions) + sum(later_units) + sum(later_impressions) "
                    "FROM arrangement_install_subset "
                    f"WHERE experiment_id = '{EXP}' AND subset = 'all'"
                )
                == 7_000
            )
        ),
        120,
        "the new events in the statistics",
    )
    updated = await asyncio.to_thread(report_json, svc, EXP)
    want = next(a for a in updated["arms"] if a["arm"] == "control")
    assert want["units"] > control["units"]

    async def shows_new_units() -> bool:
        return str(await browser.js(value("panel-ctr", "control", "units"))) == str(want["units"])

    await until(shows_new_units, 30, f"the board to show {want['units']} control units")
    shown = await board_numbers(browser)
    assert float(shown["ctr_c1"]) == want["ctr_c1"]
    assert await browser.js("window.__sameDocument") == "yes"  # same page, not reloaded
    assert browser.navigations() == navigations

    assert browser.console_errors() == []


async def _all_ready(browser: Browser) -> dict[str, Any] | None:
    states = await browser.js(PANEL_STATES)
    ready = all(state == "ready" and rows > 0 for state, rows in states.values())
    return states if ready and states else None


def test_readyz_says_when_the_boards_compute_process_is_ready(service: Service) -> None:
    """/readyz reports the board's compute process beside intake: "starting" while it starts
    and warms its caches after a restart, then "ready". Intake is ready either way."""

    def board() -> str | None:
        resp = http("GET", service.url + "/readyz")
        assert resp.status == 200 and resp.body["ready"] is True
        assert resp.body["board"] in ("starting", "ready")
        return resp.body["board"] if resp.body["board"] == "ready" else None

    assert wait_for(board, 60, "the board's compute process ready") == "ready"


def _spawned(ingest_pid: int) -> set[int]:
    """The children of ingest that multiprocessing spawned: the board's compute process,
    and the import's validation processes if an import ran."""
    children = Path(f"/proc/{ingest_pid}/task/{ingest_pid}/children").read_text().split()
    return {int(c) for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()}


def test_the_board_and_reports_come_back_when_the_compute_process_dies(study: Service) -> None:
    """The process that computes board panels and reports is killed (an OOM kill, say): the
    next report starts a new one and answers, and /readyz says "ready" again. A broken
    process pool had kept failing every report until ingest itself was restarted."""
    service = study
    ingest = service.pid("ingest")
    before = report_json(service, EXP, "--ranks", "3")
    first = wait_for(lambda: _spawned(ingest), 60, "the compute process")
    for pid in first:  # the compute process (and any validation process of an import)
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in first), 30, "them gone")

    def noticed() -> bool:
        """/readyz says "down", unless a board refresh already started the next process
        (the refresh loop may run between the kill and the first poll)."""
        if http("GET", service.url + "/readyz").body.get("board") == "down":
            return True
        return bool(_spawned(ingest) - first)

    wait_for(noticed, 30, "/readyz to say the compute process is down, or a new one")
    after = report_json(service, EXP, "--ranks", "3")
    assert after["arms"] == before["arms"]
    assert _spawned(ingest) - first  # answered by a new compute process

    def board() -> str | None:
        resp = http("GET", service.url + "/readyz")
        ready = resp.status == 200 and resp.body["board"] == "ready"
        return "ready" if ready else None

    assert wait_for(board, 60, "the board's compute process ready again") == "ready"


async def test_arms_named_like_object_properties_are_drawn_in_colours(
    study: Service, browser: Browser
) -> None:
    """An arm may be called ``constructor`` or ``toString`` (any identifier is): the board
    draws it in a colour of its palette, not Object's function of that name."""
    service, experiment = study, "board-odd-arms"
    arms = (("control", 2.0), ("constructor", 1.0), ("toString", 1.0), ("valueOf", 1.0))
    config = TrafficConfig(experiment_id=experiment, arms=arms, seed=41, installs=80, p_new_install=0.0)
    await asyncio.to_thread(post_study, service, config, 2_000)
    await browser.navigate(f"{service.url}/board#key={service.api_key}&experiment={experiment}&engine=google")

    async def legend() -> dict[str, str] | None:
        ready = (await browser.js(PANEL_STATES)).get("panel-ctr", [None, 0])
        if ready[0] != "ready" or not ready[1]:
            return None
        pairs = await browser.js(
            "[...document.querySelectorAll('#panel-ctr .legend span')]"
            ".map(s => [s.textContent, s.querySelector('rect').getAttribute('fill')])"
        )
        return dict(pairs) if len(pairs) == len(arms) else None

    colours = await until(legend, 60, "the CTR panel's legend")
    assert set(colours) == {arm for arm, _ in arms}
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours.values()), colours
    assert len(set(colours.values())) == len(arms)
    assert browser.console_errors() == []
