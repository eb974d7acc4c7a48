"""The extension end to end: a real Chromium, real result pages, a running ``auditstream up``.

Issue 14, Done-means 2 to 5. A volunteer joins through the onboarding page, then browses:
every arm of the paper's Figure 5 on real Google pages with ads and a shopping box, and a
Bing page, clicking results at display positions 1 to 3, an ad and the box. Halfway
through, the network to the service is cut (the proxy in front of it stops listening)
and later restored. Checked:

- the DOM order after the content script ran is the arm's arrangement, ads and box are
  hidden exactly when the arm says so;
- ClickHouse ends up with exactly the expected serp_view and click rows (arm, element
  type, original and display rank), each once, and the onboarding answers;
- no request the extension sent holds a query, a result URL or a page title.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web

from collectors.serp.parser import decode, parse_serp
from schemas.assignment import assign_arm
from tests.chromium import Browser, Session, chromium
from tests.fakes.engine_host import (
    BUILD_STORED,
    MARKS,
    READY,
    build_extension,
    chromium_args,
    engine_host,
    extension_worker,
    search_url,
)
from tests.helpers import Service, http, own_service, wait_for
from tests.serp_labels import labels

pytestmark = pytest.mark.integration

KEY = "extension-e2e-admin-key-0123-padded-to-35-chars"
EXPERIMENT = "ext-e2e"
SALT = "e2e-salt-0123456789"
ARMS = ["control", "swap_1_2", "swap_1_3", "swap_2_3", "hide_ads_box", "hide_box", "hide_ads_box_swap_1_2"]
PUBLIC_ARMS = [(arm, 1 / len(ARMS)) for arm in ARMS]
GOOGLE_PAGES = ("google-landscape-paintings-gb", "google-playstation-5-games")
BING_PAGE = "bing-wonder-kids-beginning"
PAGES = {lab.name: lab for lab in labels() if lab.name in (*GOOGLE_PAGES, BING_PAGE)}


class CuttableProxy:
    """Forwards the extension's requests to the service, records every one, and can stop
    listening (the network is cut: connections are refused) and start again."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.requests: list[tuple[str, str, bytes]] = []
        self.port = 0
        self.runner: web.AppRunner | None = None

    async def forward(self, request: web.Request) -> web.Response:
        body = await request.read()
        self.requests.append((request.method, request.path_qs, body))
        headers = {k: v for k, v in request.headers.items() if k.lower() in ("authorization", "content-type")}
        async with (
            aiohttp.ClientSession() as session,
            session.request(
                request.method, self.target + request.path_qs, data=body, headers=headers
            ) as resp,
        ):
            kept = {k: v for k, v in resp.headers.items() if k.lower() in ("content-type", "retry-after")}
            return web.Response(status=resp.status, body=await resp.read(), headers=kept)

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.forward)
        # shutdown_timeout: a cut closes the browser's keep-alive connections at once
        self.runner = web.AppRunner(app, shutdown_timeout=0.1)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def cut(self) -> None:
        """Stop listening and close every open connection (keep-alive ones too)."""
        await self.close()

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None


@asynccontextmanager
async def proxy_to(target: str) -> AsyncIterator[CuttableProxy]:
    proxy = CuttableProxy(target)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


def ingest_key(svc: Service) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "auditstream",
            "keys",
            "create",
            "--name",
            "extension",
            "--data-dir",
            str(svc.data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def register_experiment(svc: Service) -> None:
    config = {
        "experiment_id": EXPERIMENT,
        "engines": ["google", "bing"],
        "arms": dict.fromkeys(ARMS, 1.0),
        "salt": SALT,
        "start": datetime.now(UTC).date().isoformat(),
    }
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    resp = http("POST", svc.url + "/v1/experiments", orjson.dumps(config), headers)
    assert resp.status == 201, resp.body


def query_for(install_id: str, arm: str, taken: set[str]) -> str:
    """A query the install is assigned ``arm`` for (by the Python reference assignment)."""
    for n in range(100_000):
        query = f"search {n}"
        if query not in taken and assign_arm(install_id, query, SALT, PUBLIC_ARMS) == arm:
            taken.add(query)
            return query
    raise AssertionError(f"no query found for {arm}")


async def join(browser: Browser, extension_id: str, decline: bool = False) -> None:
    """Fill in the onboarding page as a volunteer would."""
    async with browser.tab() as tab:
        await tab.navigate(f"chrome-extension://{extension_id}/onboarding.html")
        await tab.evaluate(FORM_READY)
        if decline:
            await tab.evaluate("document.getElementById('decline').click()")
        else:
            await tab.evaluate(
                """(() => {
                  document.querySelector('select[name=age_band]').value = '25-34';
                  for (const code of ['en', 'de']) {
                    document.querySelector(`input[value=${code}]`).checked = true;
                  }
                  document.getElementById('country').value = 'DE';
                  document.querySelector('input[name=search_frequency][value=daily]').checked = true;
                  document.getElementById('join').click();
                })()"""
            )
        await tab.evaluate(ANSWERED)


def display_order(n: int, arm: str) -> list[int]:
    order = list(range(1, n + 1))
    swap = {"swap_1_2": (1, 2), "swap_1_3": (1, 3), "swap_2_3": (2, 3), "hide_ads_box_swap_1_2": (1, 2)}.get(
        arm
    )
    if swap:
        i, j = swap
        order[i - 1], order[j - 1] = order[j - 1], order[i - 1]
    return order


FORM_READY = """new Promise(resolve => {
  const filled = () => document.querySelector('#country option + option');
  const check = () => (filled() ? resolve() : setTimeout(check, 20));
  check();
})"""
ANSWERED = """new Promise(resolve => {
  const check = () => (document.getElementById('done').hidden ? setTimeout(check, 20) : resolve());
  check();
})"""
ENROLLED = """new Promise(resolve => {
  const check = async () => {
    const s = await chrome.storage.local.get(null);
    s.experiment && s.enrollment.status === 'enrolled' ? resolve(s) : setTimeout(check, 50);
  };
  check();
})"""
DRAINED = """new Promise(resolve => {
  const check = async () => {
    const box = (await chrome.storage.local.get('outbox')).outbox;
    box.queued === 0 ? resolve(box) : setTimeout(check, 100);
  };
  check();
})"""
"""In the service worker: resolves with the outbox once it is empty."""
POPUP_SHOWN = """new Promise(resolve => {
  const shown = () => document.querySelector('#status dd');
  const check = () => (shown() ? resolve(document.body.innerText) : setTimeout(check, 20));
  check();
})"""


DECLINED = """new Promise(resolve => {
  const check = async () => {
    const s = await chrome.storage.local.get(null);
    s.enrollment.status === 'declined' ? resolve(s.install.install_id) : setTimeout(check, 50);
  };
  check();
})"""
LEFT = """new Promise(resolve => {
  const check = async () => ((await chrome.storage.local.get('enrollment')).enrollment.status === 'left'
    ? resolve(true) : setTimeout(check, 20));
  check();
})"""
QUEUED = "chrome.storage.local.get('outbox').then(s => s.outbox)"

CLICK_PREVENTED = "document.addEventListener('click', e => e.preventDefault())"  # stay on the page
CLICK = """(([type, index]) => {
  const marked = [...document.querySelectorAll(`[data-auditstream-type=${type}]`)]
    .filter(el => getComputedStyle(el).display !== 'none');
  const el = marked[index];
  const link = el && (el.matches('a[href]') ? el : el.querySelector('a[href]'));
  if (!link) return false;
  link.click();
  return true;
})"""


async def visit(
    tab: Session, engine: str, name: str, query: str, arm: str, expected: list[tuple[Any, ...]]
) -> None:
    """One search: check the arrangement, click display positions 1-3, an ad and the box."""
    await tab.navigate(search_url(engine, name, query), until="Page.domContentEventFired")
    await tab.evaluate(READY)
    marks = await tab.evaluate(MARKS)
    organic = [m for m in marks if m["type"] == "organic"]
    assert [m["rank"] for m in organic] == display_order(len(organic), arm), (name, arm)
    hides_ads, hides_box = arm.startswith("hide_ads_box"), arm.startswith(("hide_ads_box", "hide_box"))
    assert all(m["hidden"] == hides_ads for m in marks if m["type"] == "ad"), (name, arm)
    assert all(m["hidden"] == hides_box for m in marks if m["type"] == "shopping_box"), (name, arm)
    expected.append(("serp_view", arm, None, None, None))
    await tab.evaluate(CLICK_PREVENTED)
    for j in (1, 2, 3):
        await tab.evaluate(f"{CLICK}(['organic', {j - 1}])")
        expected.append(("click", arm, "organic", organic[j - 1]["rank"], j))
    for kind in ("ad", "shopping_box"):
        if await tab.evaluate(f"{CLICK}(['{kind}', 0])"):  # a shown ad or box with a link
            expected.append(("click", arm, kind, None, None))


def strings(value: Any) -> list[str]:
    """Every string (keys too) in a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_a_volunteer_session_arrives_exactly_once_through_a_network_cut(tmp_path: Path) -> None:
    with own_service(tmp_path / "data", KEY) as svc:
        register_experiment(svc)
        key = ingest_key(svc)
        expected: list[tuple[Any, ...]] = []
        queries: set[str] = set()

        async def session() -> tuple[str, str, list[tuple[str, str, bytes]]]:
            texts = {name: decode(lab.html()) for name, lab in PAGES.items()}
            async with (
                proxy_to(svc.url) as proxy,
                engine_host(texts) as port,
            ):
                # in a thread: the build asks the service through the proxy, served by this loop
                study = f"http://127.0.0.1:{proxy.port}"
                extension = await asyncio.to_thread(
                    build_extension, tmp_path / "ext", study, key, EXPERIMENT, svc.data_dir
                )
                async with (
                    chromium(chromium_args(str(extension), port)) as browser,
                    extension_worker(browser) as worker,
                ):
                    await worker.evaluate(BUILD_STORED)
                    extension_id = await worker.evaluate("chrome.runtime.id")
                    await join(browser, extension_id)
                    state = await worker.evaluate(ENROLLED)
                    install_id = state["install"]["install_id"]
                    plan = [(arm, name) for arm in ARMS for name in GOOGLE_PAGES] + [("swap_1_2", BING_PAGE)]
                    async with browser.tab() as tab:
                        for k, (arm, name) in enumerate(plan):
                            if k == len(plan) // 2:
                                await proxy.cut()  # the network to the service goes down...
                            if k == len(plan) // 2 + 4:
                                queued = await worker.evaluate(QUEUED)
                                assert queued["queued"] > 0 and "network" in queued["last_error"], queued
                                await proxy.start()  # ...and comes back four searches later
                            engine = PAGES[name].engine
                            await visit(tab, engine, name, query_for(install_id, arm, queries), arm, expected)
                    async with browser.tab() as popup:  # the volunteer presses "Send now" in the popup
                        await popup.navigate(f"chrome-extension://{extension_id}/popup.html")
                        assert "taking part" in await popup.evaluate(POPUP_SHOWN)
                        await popup.evaluate("document.getElementById('send').click()")
                        status = await worker.evaluate(DRAINED)
                        assert status["dropped"] == 0 and status["rejected"] == 0, status
                        # then leaves the study: nothing more is recorded or sent
                        await popup.evaluate(
                            "window.confirm = () => true; document.getElementById('leave').click()"
                        )
                        await worker.evaluate(LEFT)
                    async with browser.tab() as tab:
                        await tab.navigate(search_url("google", GOOGLE_PAGES[0], "after leaving"))
                        await tab.evaluate(READY)
                    after = await worker.evaluate(QUEUED)
                    assert (after["queued"], after["sent"]) == (0, status["sent"])
                # A second person declines: recorded as declined, and their searches send nothing.
                async with (
                    chromium(chromium_args(str(extension), port)) as browser,
                    extension_worker(browser) as worker,
                ):
                    await worker.evaluate(BUILD_STORED)
                    await join(browser, await worker.evaluate("chrome.runtime.id"), decline=True)
                    declined = await worker.evaluate(DECLINED)
                    async with browser.tab() as tab:
                        await tab.navigate(search_url("google", GOOGLE_PAGES[0], "declined search"))
                        await tab.evaluate(READY)
                    assert (await worker.evaluate(DRAINED))["sent"] == 1  # the declined answer only
                return install_id, declined, proxy.requests

        install_id, declined_id, requests = asyncio.run(session())
        where = f"FROM extension_events WHERE experiment_id = '{EXPERIMENT}'"
        wait_for(lambda: svc.scalar(f"SELECT count() {where}") >= len(expected), 180, "every event stored")
        rows = svc.sql(
            f"SELECT type, arm, element_type, original_rank, display_rank, identified, install_id {where}"
        )
        got = Counter(
            (r["type"], r["arm"], r["element_type"] or None, r["original_rank"], r["display_rank"])
            for r in rows
        )
        assert got == Counter(expected)  # exactly these rows: nothing lost, nothing twice
        assert svc.scalar(f"SELECT uniqExact(event_id) {where}") == len(expected)
        assert {r["install_id"] for r in rows} == {install_id} and all(r["identified"] for r in rows)
        profile = svc.sql(f"SELECT * FROM install_profiles WHERE install_id = '{install_id}'")
        assert len(profile) == 1
        assert (profile[0]["consent"], profile[0]["age_band"], profile[0]["country"]) == (
            "given",
            "25-34",
            "DE",
        )
        assert (sorted(profile[0]["search_languages"]), profile[0]["search_frequency"]) == (
            ["de", "en"],
            "daily",
        )
        declined_where = f"FROM install_profiles WHERE install_id = '{declined_id}'"
        wait_for(lambda: svc.sql(f"SELECT consent {declined_where}"), 60, "the declined answer stored")
        refused = svc.sql(f"SELECT consent, age_band, search_languages {declined_where}")[0]
        assert (refused["consent"], refused["age_band"], refused["search_languages"]) == (
            "declined",
            None,
            [],
        )
        assert svc.scalar(f"SELECT count() FROM extension_events WHERE install_id = '{declined_id}'") == 0

        # Privacy: no request holds a query, a result URL or a page title, in its bytes or in
        # any string of its JSON (where escapes could hide text from a byte search).
        assert any(path.startswith("/v1/events") for _, path, _ in requests)
        texts = [path for _, path, _ in requests]
        for _, _, body in requests:
            texts.append(body.decode("utf-8", "replace"))
            if body:
                texts.extend(strings(orjson.loads(body)))
        sent = "\n".join(texts)
        secrets = set(queries)
        for lab in PAGES.values():
            parsed = parse_serp(lab.engine, lab.html())
            secrets |= {c.url for c in parsed.components if c.url} | {
                c.title for c in parsed.components if c.title
            }
        leaked = sorted(s for s in secrets if len(s) > 4 and s in sent)
        assert not leaked
        print(f"\n{len(expected)} events through a network cut, each stored once; {len(requests)} requests")
