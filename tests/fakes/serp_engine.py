"""A scripted Google-like search engine for lock-step crawl tests, with a known ground truth.

Pages have the structure of ``tests/fixtures/serp/google_coffee.html`` (top ads, a
shopping box, organic results, top stories, people also ask, videos, related
searches, a bottom ad, a knowledge panel), so the real parser reads them. Non-organic
components are the same on every page of a query, so the organic results keep their
component ranks and only they vary.

The script (:class:`FakeEngineScript`), exported so a test can compute what it should
measure:

- Each round of a query has a *base* list of ``base_results`` organic URLs, drawn
  from a pool per query (so consecutive rounds overlap, as a real index drifts).
- Every page independently replaces each rank's URL with a fresh unique noise URL with
  probability ``noise`` (A/B tests, datacenter inconsistency).
- A page for a profile whose treatment is ``personalized_treatment`` additionally
  replaces each rank's URL with a personalized URL with probability ``personalization``.
- So per rank, P(changed) between two profiles' pages of one round is
  ``1 - (1 - noise)^2 * (1 - p_a) * (1 - p_b)`` with ``p = personalization`` for the
  personalized treatment and 0 otherwise: :meth:`FakeEngineScript.expected_changed_fraction`.

A profile is recognized by its ``profile`` cookie (the study gives each profile one);
its treatment is looked up in ``script.treatments``. The round of a request is, with
``grid = (start, spacing)``, the slot its arrival falls in (from 20% of a spacing
before a slot to 80% after it, so retries within the round deadline stay in the
round); without a grid, it is how many result pages that profile already got for that
query (each lock-step round asks once, so it counts rounds, unless a profile missed
one). Randomness is seeded by (seed, profile, query, round): a retried request in a
round gets the same page. Every served page is logged in ``served`` (the exact truth).

Carry-over (``carry_over_s``, the paper's Figure 3): a search that arrives less than
``carry_over_s`` after the same profile searched another query has each rank replaced,
with probability ``carry_over``, by a result of that previous query (logged in
``Served.carried_from``). With ``click_redirect`` the organic links go through
``/url?q=`` on the engine, so a click on a result reaches it; ``/page/NAME`` is any
other page of its site (a visit). Both are logged in ``hits`` (``Hit.path``).

On demand (:meth:`FakeSerpEngine.fail`): a 503, a 429 CAPTCHA page (Google's
/sorry/ page; ``CAPTCHA_503``: the same behind a 503), a CAPTCHA page that only its
script draws (``RENDERED_CAPTCHA``: a 200 whose HTML holds no sign of a CAPTCHA until
the script ran, so only a browser sees it) or a slow answer for a profile's next
requests; ``delays`` slows every answer to a profile. Profiles in ``walled`` get a
consent wall (modeled on "Before you continue to Google") instead of results until
they carry a ``SOCS`` cookie, set by pressing Accept all or Reject all (a form posted
to ``/save``, which redirects back to the search); each decision is logged in
``consents``. ``POST /v1/events`` behaves like ingest, to test posting.

:func:`tls_engine` serves it on TLS under the engines' own host names (a ``trustme``
certificate for www.google.com and www.bing.com), for a browser told to resolve them
to 127.0.0.1 (:func:`host_rules`).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import html
import random
import ssl
import time
from collections import Counter, deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote_plus

import trustme
from aiohttp import web

from tests.fakes.threaded import ThreadedFake

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "serp"
CAPTCHA = "captcha"
CAPTCHA_503 = "captcha-503"
RENDERED_CAPTCHA = "rendered-captcha"
SLOW = "slow"
HOSTS = ("www.google.com", "www.bing.com")
POOL = 3
"""Base pool size per query, as a multiple of ``base_results``."""


@dataclass(frozen=True)
class FakeEngineScript:
    base_results: int = 10
    noise: float = 0.10
    personalized_treatment: str = "logged_in"
    personalization: float = 0.15
    seed: int = 0
    treatments: Mapping[str, str] = field(default_factory=dict)
    """profile id -> treatment value ("" for the controls)."""
    grid: tuple[float, float] | None = None
    """(Unix start, spacing in seconds) of the study: rounds by arrival time."""
    carry_over_s: float = 0.0
    """Carry-over: a search that comes less than this long after the same profile searched
    another query has ``carry_over`` of its ranks replaced by results of that query."""
    carry_over: float = 0.6
    click_redirect: bool = False
    """Organic links go through ``/url?q=`` on the engine (as on Google's page without
    JavaScript), so a click reaches the engine: it is logged in ``hits``."""

    def p_personal(self, treatment: str) -> float:
        return self.personalization if treatment == self.personalized_treatment else 0.0

    def expected_changed_fraction(self, treatment_a: str, treatment_b: str) -> float:
        """P(the organic URL at a rank differs) between two profiles' pages of one round,
        given their treatment values ("" for control and twin)."""
        keep = (1 - self.noise) ** 2 * (1 - self.p_personal(treatment_a)) * (1 - self.p_personal(treatment_b))
        return 1 - keep

    def expected_personalization(self, treatment: str) -> float:
        """Changed fraction against the control minus the noise floor (control vs twin)."""
        return self.expected_changed_fraction(treatment, "") - self.expected_changed_fraction("", "")

    def _rng(self, *key: object) -> random.Random:
        digest = hashlib.sha256(repr((self.seed, *key)).encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    def base_urls(self, query: str, round_: int) -> list[str]:
        slug = quote_plus(query.lower())
        pool = [f"https://site{i:02d}.example/{slug}" for i in range(self.base_results * POOL)]
        return self._rng("base", query, round_).sample(pool, self.base_results)

    def page_urls(self, profile: str, query: str, round_: int, carried_from: str = "") -> list[str]:
        """The organic URLs one profile gets in one round (``carried_from``: the query whose
        results carry over into this one)."""
        rng = self._rng("page", profile, query, round_)
        carry = self._rng("carry", profile, query, round_)
        personal = self.p_personal(self.treatments.get(profile, ""))
        urls = []
        for rank, url in enumerate(self.base_urls(query, round_), start=1):
            if rng.random() < self.noise:
                url = f"https://noise.example/{profile}/{round_}/{rank}/{rng.getrandbits(32):08x}"
            if personal and rng.random() < personal:
                url = f"https://personal.example/{profile}/{round_}/{rank}"
            if carried_from and carry.random() < self.carry_over:
                url = f"https://carry.example/{quote_plus(carried_from.lower())}/{rank}"
            urls.append(url)
        return urls

    def carries(self, previous: tuple[str, float] | None, query: str, arrival: float) -> str:
        """The query that carries over into a search for ``query`` arriving at ``arrival``, given
        the profile's previous search ``(query, arrival)``; "" for none."""
        if previous is None or not self.carry_over_s or previous[0] == query:
            return ""
        return previous[0] if arrival - previous[1] < self.carry_over_s else ""

    def round_at(self, arrival: float) -> int | None:
        if self.grid is None:
            return None
        start, spacing = self.grid
        return int((arrival - start) / spacing + 0.2) if arrival >= start - 0.2 * spacing else -1


SEEN = """<script>document.documentElement.dataset.seen = [
  Intl.DateTimeFormat().resolvedOptions().timeZone, innerWidth + 'x' + innerHeight, navigator.language
].join(' ');</script>"""
"""Writes what the page saw of the browser (time zone, viewport, language) into ``<html data-seen>``:
a page archived after its scripts ran carries it, the HTML as served does not."""


def render_page(
    query: str, organic: Sequence[str], *, estimate: int = 123_000_000, click_redirect: bool = False
) -> str:
    """A Google result page: fixed ads and boxes around ``organic`` (in page order); with
    ``click_redirect`` the organic links go through the engine's ``/url?q=``."""
    q, slug = html.escape(query), quote_plus(query)

    def result(url: str, n: int) -> str:
        u = html.escape(url)
        href = html.escape(f"/url?q={quote_plus(url)}&sa=U") if click_redirect else u
        return (
            f'<div class="MjjYud"><div class="g Ww4FFb tF2Cxc"><div class="yuRUbf"><a href="{href}" '
            f'data-ved="2ahUKE{n}"><h3 class="LC20lb">Result {n} for {q}</h3><cite>{u}</cite></a></div>'
            f'<div class="VwiC3b">Snippet {n}.</div></div></div>'
        )

    def ad(name: str) -> str:
        return (
            f'<div class="uEierd"><div data-text-ad="1"><a class="sVXRqc" '
            f'data-pcu="https://{name}.example/?utm_source=g" href="https://www.googleadservices.com/pagead/aclk?sa=L&amp;adurl=https://{name}.example/">'
            f'<div role="heading" aria-level="3"><span>{name} - {q}</span></div>'
            f'<span class="x2VHCd">Sponsored</span></a></div></div>'
        )

    organic = list(organic)
    first, middle, rest = organic[:3], organic[3:6], organic[6:]
    n = iter(range(1, len(organic) + 1))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="UTF-8"><title>{q} - Google Search</title>
<script nonce="f">(function(){{window.google={{kEI:'fake'}};}})();</script></head>
<body><div id="main"><div id="cnt">
<div id="appbar"><div id="result-stats">About {estimate:,} results<nobr> (0.33 seconds)</nobr></div></div>
<div id="rcnt"><div id="center_col"><div id="taw"><div id="tvcap">
<div class="cu-container"><div class="commercial-unit-desktop-top"><a class="pla-unit"
 href="/aclk?sa=l&amp;adurl=https://shop.example/{slug}%3Fgclid%3Dx"><div class="pymv4e">Buy {q}</div></a>
</div></div>
<div id="tads" aria-label="Ads">{ad("adone")}{ad("adtwo")}</div>
</div></div>
<div id="res" role="main"><div id="topstuff"></div><div id="search"><div><h1>Search Results</h1><div id="rso">
{"".join(result(u, next(n)) for u in first)}
<div class="MjjYud"><g-section-with-header class="yG4QQe"><div role="heading">Top stories</div>
<g-scrolling-carousel><a class="WlydOe" href="https://news.example/{slug}"><div role="heading">News</div></a>
</g-scrolling-carousel></g-section-with-header></div>
{"".join(result(u, next(n)) for u in middle)}
<div class="MjjYud"><div class="related-question-pair" data-q="What is {q}?">
<div role="heading">What is {q}?</div></div></div>
<div class="MjjYud"><div aria-label="Videos"><video-voyager><a class="X5OiLe" href="https://video.example/{slug}">
<div role="heading">Video</div></a></video-voyager></div></div>
{"".join(result(u, next(n)) for u in rest)}
</div></div></div></div>
<div id="bottomads"><div id="tadsb">{ad("adbottom")}</div></div>
<div id="botstuff"><div id="bres"><div aria-label="Related searches">
<a class="k8XOCe" href="/search?q={slug}+more">
<div class="s75CSd">{q} more</div></a></div></div></div>
</div>
<div id="rhs"><div class="kp-wholepage"><div data-attrid="title" role="heading">{q}</div>
<div class="kno-rdesc"><a href="https://encyclopedia.example/{slug}">Encyclopedia</a></div></div></div>
</div></div></div>{SEEN}</body></html>"""


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it; ``at`` is ``time.time()`` on arrival."""

    at: float
    profile: str
    query: str
    answer: str
    cookies: Mapping[str, str]
    user_agent: str
    accept_language: str
    host: str = ""
    path: str = "/search"
    """``/search``; ``/url`` (a click on a result: ``query`` is its target) or ``/page/...`` (a visit)."""


@dataclass(frozen=True)
class Served:
    """One result page: whose, which round, and its organic URLs in order (the truth)."""

    profile: str
    query: str
    round: int
    organic: tuple[str, ...]
    carried_from: str = ""
    """The profile's previous query, when it carried over into this page."""
    at: float = 0.0
    """Arrival time of the request."""


class FakeSerpEngine(ThreadedFake):
    """``with FakeSerpEngine(script) as engine: ... engine.base_url ...`` (own thread and loop)."""

    thread_name = "fake-serp"

    def __init__(self, script: FakeEngineScript | None = None) -> None:
        super().__init__()
        self.script = script or FakeEngineScript()
        self._scripts: dict[str, deque[int | str]] = {}
        self._hits: list[Hit] = []
        self._served: list[Served] = []
        self._pages: Counter[tuple[str, str]] = Counter()
        self.delays: dict[str, float] = {}
        """Seconds every answer to a profile waits (a slow profile)."""
        self.slow_s = 2.0
        self.walled: set[str] = set()
        """Profiles shown the consent wall until they carry a SOCS cookie."""
        self._consents: list[tuple[str, str]] = []
        self._last_search: dict[str, tuple[str, float]] = {}
        """Profile -> its latest search (query, arrival), for carry-over."""

    # --- scripting and observation (any thread) -----------------------------------------

    def fail(self, profile: str, *answers: int | str) -> None:
        """Serve these first to ``profile``: HTTP statuses (503), ``CAPTCHA`` or ``SLOW``."""
        with self._lock:
            self._scripts.setdefault(profile, deque()).extend(answers)

    @property
    def hits(self) -> list[Hit]:
        with self._lock:
            return list(self._hits)

    @property
    def served(self) -> list[Served]:
        with self._lock:
            return list(self._served)

    @property
    def consents(self) -> list[tuple[str, str]]:
        """(profile, "accept" or "reject") per press of a consent button."""
        with self._lock:
            return list(self._consents)

    # --- serving --------------------------------------------------------------------------

    def _hit(self, request: web.Request, arrival: float, query: str, answer: str) -> Hit:
        """Log one request (under the lock)."""
        hit = Hit(
            arrival,
            request.cookies.get("profile", "anonymous"),
            query,
            answer,
            dict(request.cookies),
            request.headers.get("User-Agent", ""),
            request.headers.get("Accept-Language", ""),
            request.host,
            request.path,
        )
        self._hits.append(hit)
        return hit

    async def _search(self, request: web.Request) -> web.Response:
        arrival = time.time()
        profile = request.cookies.get("profile", "anonymous")
        query = request.query.get("q", "")
        with self._lock:
            queue = self._scripts.get(profile)
            answer: int | str = queue.popleft() if queue else 200
            self._hit(request, arrival, query, str(answer))
            delay = self.delays.get(profile, 0.0)
            walled = profile in self.walled and "SOCS" not in request.cookies
            carried_from = self.script.carries(self._last_search.get(profile), query, arrival)
            self._last_search[profile] = (query, arrival)
        if answer == SLOW:
            delay, answer = max(delay, self.slow_s), 200
        if delay:
            await asyncio.sleep(delay)
        if answer in (CAPTCHA, CAPTCHA_503):
            page = (FIXTURES / "google_sorry.html").read_text()
            return web.Response(text=page, status=429 if answer == CAPTCHA else 503, content_type="text/html")
        if answer == RENDERED_CAPTCHA:
            return web.Response(text=rendered_captcha_page(), content_type="text/html")
        if walled and answer == 200:
            return web.Response(text=consent_page(request.path_qs), content_type="text/html")
        if answer != 200:
            assert isinstance(answer, int)
            return web.Response(status=answer, text="Service Unavailable", headers={"Retry-After": "0"})
        with self._lock:
            round_ = self.script.round_at(arrival)
            if round_ is None:
                round_ = self._pages[profile, query]
            self._pages[profile, query] += 1
            organic = self.script.page_urls(profile, query, round_, carried_from)
            self._served.append(Served(profile, query, round_, tuple(organic), carried_from, arrival))
        page = render_page(query, organic, click_redirect=self.script.click_redirect)
        response = web.Response(text=page, content_type="text/html")
        if "NID" not in request.cookies:  # a tracking cookie, as the engine sets one
            response.set_cookie("NID", hashlib.sha1(f"{profile}".encode()).hexdigest()[:16], path="/")
        return response

    async def _save(self, request: web.Request) -> web.Response:
        """A consent button: remember the choice in SOCS, go back to the search."""
        form = await request.post()
        target = str(form.get("continue", "/"))
        if not target.startswith("/search"):
            return web.Response(status=400, text="bad continue")
        choice = "reject" if form.get("set_eom") == "true" else "accept"
        with self._lock:
            self._consents.append((request.cookies.get("profile", "anonymous"), choice))
        response = web.Response(status=303, headers={"Location": target})
        response.set_cookie("SOCS", f"CAE{choice}", path="/", max_age=13 * 30 * 86400)
        return response

    async def _click(self, request: web.Request) -> web.Response:
        """A click on a result (Google's ``/url?q=``): logged, answered with a redirect notice
        (the result's own site is not reachable from a test)."""
        target = request.query.get("q", "")
        with self._lock:
            self._hit(request, time.time(), target, "click")
        link = html.escape(target)
        return web.Response(
            text=f'<!doctype html><html><head><title>Redirect Notice</title></head><body><a href="{link}">'
            f"{link}</a></body></html>",
            content_type="text/html",
        )

    async def _page(self, request: web.Request) -> web.Response:
        """Any other page of the engine's site (a visit): logged; sets a cookie of its own."""
        with self._lock:
            self._hit(request, time.time(), "", "visit")
        response = web.Response(
            text=f"<!doctype html><html><head><title>{html.escape(request.path)}</title></head>"
            "<body><p>A page.</p></body></html>",
            content_type="text/html",
        )
        response.set_cookie("VISITED", request.path.rsplit("/", 1)[-1][:32] or "root", path="/")
        return response

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/search", self._search)
        app.router.add_post("/save", self._save)
        app.router.add_get("/url", self._click)
        app.router.add_get("/page/{name}", self._page)


def consent_page(continue_to: str) -> str:
    """Google's consent wall in front of the results (no result page, two buttons)."""
    back = html.escape(continue_to)

    def form(eom: str, button: str, label: str) -> str:
        return (
            f'<form method="post" action="/save"><input type="hidden" name="continue" value="{back}">'
            f'<input type="hidden" name="set_eom" value="{eom}">'
            f'<button id="{button}" type="submit">{label}</button></form>'
        )

    return f"""<!doctype html>
<html lang="en"><head><meta charset="UTF-8"><title>Before you continue to Google</title></head>
<body><div role="dialog" aria-label="Before you continue to Google">
<h1>Before you continue to Google</h1><p>We use cookies and data to deliver and maintain services.</p>
{form("true", "W0wltc", "Reject all")}{form("false", "L2AGLb", "Accept all")}
</div></body></html>"""


def rendered_captcha_page() -> str:
    """A CAPTCHA that only its script draws: the HTML as served has no sign of one."""
    drawn = (
        '<form id="captcha-form" action="/sorry/index"><p>Our systems have detected unusual traffic '
        "from your computer network.</p></form>"
    )
    encoded = base64.b64encode(drawn.encode()).decode()
    return (
        '<!doctype html><html lang="en"><head><meta charset="UTF-8"><title>One moment</title></head>'
        '<body><div id="app">Loading</div><script>'
        f'document.getElementById("app").innerHTML = atob("{encoded}");</script></body></html>'
    )


def tls_context(hosts: Sequence[str] = HOSTS) -> ssl.SSLContext:
    """A server context with a certificate for ``hosts`` from a throw-away CA (Chromium is told
    to accept it: ``--ignore-certificate-errors``)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    trustme.CA().issue_cert(*hosts).configure_cert(context)
    return context


def tls_engine(script: FakeEngineScript | None = None) -> FakeSerpEngine:
    """The fake engine on TLS, to be reached as https://www.google.com/ through ``host_rules``."""
    engine = FakeSerpEngine(script)
    engine.ssl_context = tls_context()
    return engine


def host_rules(port: int, hosts: Sequence[str] = HOSTS) -> tuple[str, ...]:
    """Chromium switches: the engines' hosts go to the local TLS server, every other host fails
    at once (no network here), and its throw-away certificate is accepted."""
    maps = [f"MAP {h}:443 127.0.0.1:{port}" for h in hosts]
    rules = ", ".join([*maps, "MAP * ~NOTFOUND", "EXCLUDE 127.0.0.1"])
    return (f"--host-resolver-rules={rules}", "--ignore-certificate-errors")
