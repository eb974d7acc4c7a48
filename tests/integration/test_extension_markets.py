"""The extension where volunteers search: Google's country domains and Bing's markets (issue 35,
Done-means 1).

Every real page of ``tests/fixtures/serp/real`` is served once, in a real Chromium, under a
Google country domain (fourteen of them, taken in turn: www.google.de, .ch, .it, .fr,
.co.uk, .at, .nl, .es, .com.br, .co.jp, .com.hk, .pl, .se and .cat) or on www.bing.com
with market parameters (``mkt``, ``cc``, ``setlang``, or none), to a volunteer who joined
through the onboarding page of the built extension. Checked:

- the extension marks on each page the organic results ``auditstream parse serp`` finds, in
  order, and the ads, the criterion tests/integration/test_extension_marks.py holds the
  same pages to on www.google.com and www.bing.com, so the marks are the same there;
- each page sends one ``serp_view``, none is refused, and the service stores each with the
  market its domain or parameters name (``de``, ``uk``, ``de-de``, ``''`` for a Bing page
  whose URL names none).

The query of each search is one the install is assigned ``control`` for, so nothing is
rearranged and the marks are in the page's order. Two tabs browse at once (about 40 s for
the 68 pages with the service's start; the whole test about a minute).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from collectors.serp.parser import decode, parse_serp
from collectors.serp.urls import normalize_url
from schemas.assignment import assign_arm
from tests.chromium import chromium
from tests.fakes.engine_host import (
    BUILD_STORED,
    HOSTS,
    MARKS,
    READY,
    build_extension,
    chromium_args,
    engine_host,
    extension_worker,
    search_url,
)
from tests.helpers import http, own_service, report_json, wait_for
from tests.integration.test_extension_e2e import ENROLLED, ingest_key, join
from tests.serp_labels import BASE, labels

pytestmark = pytest.mark.integration

KEY = "extension-markets-admin-key-0123-padded"
EXPERIMENT = "ext-markets"
SALT = "markets-salt-0123"
ARMS = [("control", 1.0), ("swap_1_2", 1.0)]
GOOGLE = {  # host -> the market its events must carry
    "www.google.de": "de",
    "www.google.ch": "ch",
    "www.google.it": "it",
    "www.google.fr": "fr",
    "www.google.co.uk": "uk",
    "www.google.at": "at",
    "www.google.nl": "nl",
    "www.google.es": "es",
    "www.google.com.br": "br",
    "www.google.co.jp": "jp",
    "www.google.com.hk": "hk",
    "www.google.pl": "pl",
    "www.google.se": "se",
    "www.google.cat": "cat",
}
BING: tuple[tuple[dict[str, str], str], ...] = (  # parameters -> market
    ({"mkt": "de-DE", "cc": "DE"}, "de-de"),
    ({"mkt": "fr-CH", "setlang": "fr"}, "fr-ch"),
    ({"cc": "GB"}, "gb"),
    ({"setmkt": "it-IT", "setlang": "it"}, "it-it"),
    ({"mkt": "ja-JP"}, "ja-jp"),
    ({"setlang": "de"}, ""),  # the interface language only: the market is Bing's choice
    ({}, ""),
)
PAGES = labels()
SETTLED = """new Promise(resolve => {
  const check = async () => {
    const box = (await chrome.storage.local.get('outbox')).outbox;
    box.queued === 0 && box.sent + box.rejected + box.dropped >= %d ? resolve(box) : setTimeout(check, 100);
  };
  check();
})"""
"""In the service worker: resolves with the outbox once that many events have left it."""


def plan() -> list[tuple[str, str, str, dict[str, str], str]]:
    """(page, engine, host, parameters, market) for every page: the hosts and markets in turn."""
    out = []
    google = [lab for lab in PAGES if lab.engine == "google"]
    bing = [lab for lab in PAGES if lab.engine == "bing"]
    for i, lab in enumerate(google):
        host = list(GOOGLE)[i % len(GOOGLE)]
        out.append((lab.name, "google", host, {}, GOOGLE[host]))
    for i, lab in enumerate(bing):
        params, market = BING[i % len(BING)]
        out.append((lab.name, "bing", "www.bing.com", params, market))
    return out


def control_queries(install_id: str, n: int) -> list[str]:
    """``n`` queries the install is assigned control for (by the reference assignment)."""
    queries = (f"search {k}" for k in itertools.count())
    return list(
        itertools.islice((q for q in queries if assign_arm(install_id, q, SALT, ARMS) == "control"), n)
    )


def register_experiment(url: str) -> None:
    config = {
        "experiment_id": EXPERIMENT,
        "engines": ["google", "bing"],
        "arms": dict(ARMS),
        "salt": SALT,
        "start": datetime.now(UTC).date().isoformat(),
    }
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    resp = http("POST", url + "/v1/experiments", orjson.dumps(config), headers)
    assert resp.status == 201, resp.body


def test_every_page_is_marked_and_measured_under_google_country_domains_and_bing_markets(
    tmp_path: Path,
) -> None:
    visits = plan()
    assert len({v[2] for v in visits if v[1] == "google"}) >= 8
    assert {v[4] for v in visits if v[1] == "bing"} == {m for _, m in BING}
    hosts = (*HOSTS, *GOOGLE)
    started = time.monotonic()
    with own_service(tmp_path / "data", KEY) as svc:
        register_experiment(svc.url)
        extension = build_extension(tmp_path / "ext", svc.url, ingest_key(svc), EXPERIMENT, svc.data_dir)

        async def browse() -> tuple[dict[str, list[dict]], dict]:
            marks = {}
            texts = {lab.name: decode(lab.html()) for lab in PAGES}
            async with (
                engine_host(texts, hosts) as port,
                chromium(chromium_args(str(extension), port, hosts)) as browser,
                extension_worker(browser) as worker,
            ):
                await worker.evaluate(BUILD_STORED)
                await join(browser, await worker.evaluate("chrome.runtime.id"))
                install_id = (await worker.evaluate(ENROLLED))["install"]["install_id"]
                queries = control_queries(install_id, len(visits))

                async def visit(part: list[tuple[str, tuple[str, str, str, dict[str, str], str]]]) -> None:
                    async with browser.tab() as tab:
                        for query, (name, engine, host, params, _) in part:
                            url = search_url(engine, name, query, host=host, **params)
                            await tab.navigate(url, until="Page.domContentEventFired")
                            try:
                                async with asyncio.timeout(60):
                                    await tab.evaluate(READY)
                            except TimeoutError:
                                raise AssertionError(
                                    f"the extension did not finish {name} on {host}"
                                ) from None
                            marks[name] = await tab.evaluate(MARKS)

                searches = list(zip(queries, visits, strict=True))
                await asyncio.gather(visit(searches[0::2]), visit(searches[1::2]))  # two tabs at once
                # the onboarding answer and one serp_view a page, each through the outbox
                outbox = await worker.evaluate(SETTLED % (len(visits) + 1))
            return marks, outbox

        marks, outbox = asyncio.run(browse())
        browsed = time.monotonic() - started  # the service's start included

        # the marks: the parser's organic results in order, and its ads, on every page
        wrong = []
        for name, engine, host, params, _ in visits:
            lab = next(lab for lab in PAGES if lab.name == name)
            parsed = parse_serp(engine, lab.html())
            expected = [c.url for c in parsed.components if c.type == "organic"]
            organic = [m for m in marks[name] if m["type"] == "organic"]
            found = [{normalize_url(h, BASE[engine]) for h in m["hrefs"]} for m in organic]
            if [m["rank"] for m in organic] != list(range(1, len(expected) + 1)) or not all(
                u in f for u, f in zip(expected, found, strict=False)
            ):
                wrong.append((name, host, params, expected, [sorted(f) for f in found]))
            ads = sum(1 for c in parsed.components if c.type == "ad")
            if ads != sum(1 for m in marks[name] if m["type"] == "ad"):
                wrong.append((name, host, params, "ads", ads))
        assert not wrong, "\n".join(map(str, wrong))

        # the events: one serp_view a page, each stored with its domain's or parameters' market
        assert (outbox["rejected"], outbox["dropped"]) == (0, 0), outbox
        where = f"FROM extension_events WHERE experiment_id = '{EXPERIMENT}' AND type = 'serp_view'"
        wait_for(lambda: svc.scalar(f"SELECT count() {where}") >= len(visits), 120, "every serp_view stored")
        rows = svc.sql(f"SELECT engine, market, count() AS n {where} GROUP BY engine, market")
        stored = Counter({(r["engine"], r["market"]): int(r["n"]) for r in rows})
        assert stored == Counter((engine, market) for _, engine, _, _, market in visits)

        # identification per market in `report experiment` and on the board (Done-means 5),
        # against a recount of the stored events
        recount = svc.sql(
            f"SELECT engine, market, count() AS n, countIf(identified) AS ok FROM extension_events "
            f"WHERE experiment_id = '{EXPERIMENT}' GROUP BY engine, market"
        )
        headers = {"Authorization": f"Bearer {svc.api_key}"}
        for engine in ("google", "bing"):
            mine = [r for r in recount if r["engine"] == engine]
            want = {r["market"]: (int(r["n"]), int(r["ok"]) / int(r["n"])) for r in mine}
            # a fresh install with page views only: no burn-in, pages as units, or nothing is kept
            options = ("--engine", engine, "--by-market", "--burn-in-days", "0", "--unit-mode", "impression")
            report = report_json(svc, EXPERIMENT, *options)
            assert {m["market"]: (m["events"], m["identified_share"]) for m in report["markets"]} == want
            url = f"{svc.url}/v1/board/experiments/{EXPERIMENT}?engine={engine}"
            board = http("GET", url, headers=headers)
            assert board.status == 200, board.body
            events = {m["market"]: m["events"] for m in board.body["markets"]}
            assert events == {market: n for market, (n, _) in want.items()}
    total = sum(len([m for m in v if m["type"] == "organic"]) for v in marks.values())
    print(
        f"\n{total} organic results marked in order on {len(visits)} real pages under "
        f"{len(GOOGLE)} Google domains and {len(BING)} Bing parameter sets; "
        f"{sum(stored.values())} serp_views stored by market "
        f"({browsed:.0f} s to start the service and browse)"
    )
