"""The browser fetcher: one persistent Chromium profile per study profile, driven by Playwright.

Engines serve a plain HTTP client another page than a browser (a consent wall, a
CAPTCHA, a page without the scripted parts), so Hannak et al. searched from a real
browser engine. Here every study profile gets its own Chromium user-data directory
(``<state>/<study>/browser/<profile>``), launched once per run with the profile's
user agent, language, viewport, time zone and proxy, and kept for the whole study:
cookies the engine sets in one round go back in the next, as in a person's browser.

- **Chromium**: Debian's ``/usr/bin/chromium`` by default (no browser download: the
  Playwright package's bundled driver drives any Chromium of a close version);
  ``BrowserOptions.executable`` (``crawl serp --chromium`` or ``AUDITSTREAM_CHROMIUM``)
  points at another one, ``args`` adds command-line switches.
- **Cookies**: the study's inline cookies and its ``cookies_file`` (a ``cookies.txt``
  export of a logged-in account) are imported once, when the profile directory is
  created; after that the profile's own cookies (rotated by the engine) are kept. A
  ``clear_cookies`` profile is emptied and seeded again after every query. Chromium
  writes its cookie store only now and then, so the profile's cookies are also saved
  after every query (``auditstream-cookies.json`` in its directory, readable by the
  user only) and restored when its browser starts again, after a crash or on resume:
  a profile keeps what the HTTP fetcher's cookie jar keeps, session cookies included.
- **A page** is loaded until its ``load`` event (scripts ran), then a consent wall is
  dealt with as the study says (``consent``), and the page's HTML as rendered then is
  what is archived and parsed: ``fetched_at`` is that moment, so the crawler's load
  skew compares when each profile's page was finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import orjson
from yarl import URL

from collectors.common.exceptions import CrawlConfigError
from collectors.common.http import network_error
from collectors.common.journal import write_atomic
from collectors.serp import consent
from collectors.serp.cookies import read_cookies, unexpired
from collectors.serp.page import Fetched
from collectors.serp.rulebook import load_rules
from collectors.serp.study import Profile

log = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
SEEDED = "auditstream-seeded"
SAVED_COOKIES = "auditstream-cookies.json"
"""The profile's cookies after its last query (private to the user): Chromium writes its own
cookie store only every 30 s or so, so a killed browser would lose the latest ones."""
INLINE_COOKIE_DAYS = 400
"""A study's inline cookies are persistent cookies (Chromium keeps none longer than 400 days)."""
"""Written into a profile directory once the study's cookies are in it."""

PAGE_JS = """({walls, results, texts}) => {
  const nav = performance.getEntriesByType('navigation')[0];
  const end = nav ? (nav.loadEventEnd || nav.loadEventStart || nav.domContentLoadedEventEnd) : 0;
  const loaded = performance.timeOrigin + (end || performance.now());
  const here = s => document.querySelector(s) !== null;
  const words = () => (document.body ? document.body.innerText : '').toLowerCase();
  const wall = walls.some(here) || (!results.some(here) && texts.some(t => words().includes(t)));
  return {wall, loaded};
}"""
"""When the page finished loading, by the browser's clock (Unix ms: the end of its load
event), and whether a consent wall is on it (the engine's rules, as the parser reads them)."""
GONE_JS = """(walls) => document.readyState === 'complete' && !walls.some(s => {
  const el = document.querySelector(s);
  return el !== null && el.getClientRects().length > 0;
})"""
"""The wall is gone (navigated away or closed) and the page it left is loaded."""


LINK_JS = """(href) =>
  [...document.querySelectorAll('a[href]')].find(a => a.getAttribute('href') === href) || null"""
"""The first link whose ``href`` attribute is exactly the one given (as the page's HTML has it)."""


class _NoLink(Exception):
    """The link to click is not on the page."""


def _import_playwright() -> Any:
    try:
        from playwright import async_api
    except ImportError:
        raise CrawlConfigError(
            "the browser fetcher needs Playwright: pip install 'auditstream[browser]' "
            "(it drives an installed Chromium, by default /usr/bin/chromium: apt-get install chromium)"
        ) from None
    return async_api


@dataclass(frozen=True)
class BrowserOptions:
    """How to run Chromium on this machine (not part of the study: another machine, another path)."""

    executable: str = CHROMIUM
    args: tuple[str, ...] = ()
    """Extra command-line switches, e.g. ``--host-resolver-rules=MAP www.google.com 142.250.1.1``."""
    headless: bool = True


def proxy_settings(url: str) -> dict[str, str]:
    """A proxy URL as Playwright takes it: Chromium wants the credentials apart from the server."""
    parts = urlsplit(url)
    server = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    out = {"server": server}
    if parts.username:
        out["username"] = unquote(parts.username)
        out["password"] = unquote(parts.password or "")
    return out


def launch_options(profile: Profile, options: BrowserOptions) -> dict[str, Any]:
    """The keyword arguments of ``launch_persistent_context`` for ``profile`` (its directory aside).

    The control and its twin get the same ones, but for the proxy (another address).
    """
    kw: dict[str, Any] = {
        "executable_path": options.executable,
        "headless": options.headless,
        "args": list(options.args),
        "user_agent": profile.user_agent,
        "locale": profile.language,
    }
    if profile.window is not None:
        width, height = profile.window
        kw["viewport"] = kw["screen"] = {"width": width, "height": height}
    if profile.timezone is not None:
        kw["timezone_id"] = profile.timezone
    if profile.proxy is not None:
        kw["proxy"] = proxy_settings(profile.proxy)
    return kw


@contextlib.asynccontextmanager
async def playwright_driver() -> AsyncIterator[Any]:
    """One started Playwright (its node driver), shared by a study's browser fetchers."""
    async_api = _import_playwright()
    async with async_api.async_playwright() as playwright:
        yield playwright


class BrowserFetcher:
    """A persistent Chromium profile for one study profile; ``start`` it, ``fetch``, ``aclose``."""

    def __init__(
        self,
        profile: Profile,
        engine: str,
        engine_url: str,
        *,
        user_data_dir: Path,
        options: BrowserOptions | None = None,
        consent_action: consent.Action = "leave",
    ) -> None:
        self.profile = profile
        self.engine = engine
        self.engine_url = str(URL(engine_url).origin())
        self.user_data_dir = user_data_dir
        self.options = options or BrowserOptions()
        self.consent_action = consent_action
        self._own: Any = None
        self._playwright: Any = None
        self._gone = False
        self._context: Any = None
        self._page: Any = None
        self._status: int | None = None
        self._error: type[BaseException] = TimeoutError
        self._timeout: type[BaseException] = TimeoutError
        rules = load_rules(engine).page
        self._buttons = consent.buttons(engine)
        self._wall = {
            "walls": [*rules.consent, *self._buttons.all],
            "results": list(rules.result_page),
            "texts": list(rules.consent_text),
        }

    async def start(self, playwright: Any = None) -> None:
        """Launch the profile's Chromium (with a shared ``playwright``, else one of its own)."""
        async_api = _import_playwright()
        if not await asyncio.to_thread(Path(self.options.executable).exists):
            raise CrawlConfigError(
                f"no Chromium at {self.options.executable}: apt-get install chromium, or name another "
                "one with --chromium (or AUDITSTREAM_CHROMIUM)"
            )
        self._error, self._timeout = async_api.Error, async_api.TimeoutError
        if playwright is None:
            self._own = playwright = await async_api.async_playwright().start()
        self._playwright = playwright
        await self._launch()

    async def _launch(self) -> None:
        """Start Chromium on the profile's directory (seeding it if new) and open its page."""
        fresh = not await asyncio.to_thread((self.user_data_dir / SEEDED).exists)
        await asyncio.to_thread(self.user_data_dir.mkdir, parents=True, exist_ok=True)
        try:
            context = await self._playwright.chromium.launch_persistent_context(
                str(self.user_data_dir), **launch_options(self.profile, self.options)
            )
        except self._error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CrawlConfigError(
                f"profile {self.profile.id}: Chromium ({self.options.executable}) did not start with "
                f"profile directory {self.user_data_dir}: {first}"
            ) from None
        self._context, self._gone = context, False
        context.on("close", self._closed)
        if fresh or self.profile.clear_cookies:
            await context.clear_cookies()
            await self._seed()
            await asyncio.to_thread((self.user_data_dir / SEEDED).write_text, "cookies imported\n")
        else:
            await self._restore_cookies()
        pages = context.pages
        self._page = pages[0] if pages else await context.new_page()
        self._page.on("response", self._on_response)
        # Playwright's locale alone sends "Accept-Language: en-US"; Chromium set to a language
        # sends "en-US,en;q=0.9" and lists both in navigator.languages, as the HTTP fetcher does
        cdp = await context.new_cdp_session(self._page)
        languages = ",".join(dict.fromkeys([self.profile.language, self.profile.language.split("-")[0]]))
        await cdp.send(
            "Emulation.setUserAgentOverride",
            {"userAgent": self.profile.user_agent, "acceptLanguage": languages},
        )

    @property
    def gone(self) -> bool:
        """Whether the browser closed under the fetcher (the next fetch starts it again)."""
        return self._gone

    def _closed(self, _context: Any) -> None:
        """The browser went away (crashed, killed): the next fetch starts it again."""
        self._gone = True

    async def _relaunch(self) -> None:
        log.warning("profile %s: its Chromium had closed; starting it again", self.profile.id)
        with contextlib.suppress(self._error):
            await self._context.close()
        await self._launch()

    async def _restore_cookies(self) -> None:
        path = self.user_data_dir / SAVED_COOKIES
        try:
            cookies = orjson.loads(await asyncio.to_thread(path.read_bytes))
            await self._context.add_cookies(cookies)
        except FileNotFoundError:
            return
        except (OSError, orjson.JSONDecodeError, TypeError, self._error) as exc:  # Chromium's own store stays
            log.warning("profile %s: saved cookies not restored (%s)", self.profile.id, type(exc).__name__)

    async def _save_cookies(self) -> None:
        """Keep the profile's cookies as they are now, for a browser started again."""
        cookies = await self._context.cookies()
        await asyncio.to_thread(write_atomic, self.user_data_dir / SAVED_COOKIES, orjson.dumps(cookies))

    def _on_response(self, response: Any) -> None:
        """The status of the page's latest main document (after a consent form's redirect too)."""
        if response.request.is_navigation_request() and response.frame == self._page.main_frame:
            self._status = response.status

    async def _seed(self) -> None:
        """The study's cookies: inline ones for the engine's origin, then the cookies file's."""
        expires = time.time() + INLINE_COOKIE_DAYS * 86400  # kept across runs, as in the HTTP jar
        inline = [
            {"name": k, "value": v, "url": self.engine_url, "expires": expires}
            for k, v in self.profile.cookies.items()
        ]
        if inline:
            await self._context.add_cookies(inline)
        if self.profile.cookies_file is None:
            return
        cookies = await asyncio.to_thread(read_cookies, self.profile.cookies_file)
        for cookie in unexpired(cookies):
            try:
                await self._context.add_cookies([cookie.for_playwright()])
            except self._error:  # Chromium's message quotes the cookie: name the line instead
                raise CrawlConfigError(
                    f"profile {self.profile.id}: Chromium refused cookie {cookie.name!r} of "
                    f"{self.profile.cookies_file} line {cookie.line} (check its domain, path and flags)"
                ) from None
        if skipped := len(cookies) - len(unexpired(cookies)):
            log.warning("profile %s: %d expired cookies of its file not imported", self.profile.id, skipped)

    async def fetch(self, url: str, *, time_limit: float) -> Fetched:
        """A result page: loaded, then its consent wall dealt with as the study says."""
        return await self._load(
            url, time_limit, lambda ms: self._page.goto(url, wait_until="load", timeout=ms)
        )

    async def visit(self, url: str, *, time_limit: float) -> Fetched:
        """Any page (browsing history): loaded as it comes, no consent button pressed."""
        return await self._load(
            url, time_limit, lambda ms: self._page.goto(url, wait_until="load", timeout=ms), walls=False
        )

    async def click(self, href: str, *, page_url: str, time_limit: float) -> Fetched:
        """Click the link whose ``href`` attribute is ``href`` on the page shown (the one just
        fetched), with the mouse, as a person would: the engine's click tracking runs."""

        async def follow(ms: float) -> Any:
            found = await self._page.evaluate_handle(LINK_JS, href)
            link = found.as_element()
            if link is None:
                raise _NoLink(f"no link {href[:80]!r} on {page_url[:80]}")
            async with self._page.expect_navigation(wait_until="load", timeout=ms) as navigation:
                await link.click(timeout=ms)
            return await navigation.value

        return await self._load(urljoin(page_url, href), time_limit, follow, walls=False)

    async def _load(
        self, url: str, time_limit: float, navigate: Callable[[float], Awaitable[Any]], *, walls: bool = True
    ) -> Fetched:
        """Run ``navigate`` (given its time limit in ms) on the profile's page and keep the page
        it leads to as rendered; a consent wall on it is dealt with when ``walls``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + time_limit
        self._status = None
        try:
            async with asyncio.timeout(time_limit):
                if self._gone:
                    await self._relaunch()
                response = await navigate(time_limit * 1000)
                state = await self._page.evaluate(PAGE_JS, self._wall)
                wall = await self._consent(deadline) if walls and state["wall"] else consent.NONE
                if wall in (consent.OUTCOMES["accept"], consent.OUTCOMES["reject"]):
                    state = await self._page.evaluate(PAGE_JS, self._wall)  # the page behind the wall
                loaded = datetime.fromtimestamp(min(state["loaded"] / 1000, time.time()), UTC)
                body = (await self._page.content()).encode("utf-8")
            status = self._status or (response.status if response is not None else 200)
            raw = Fetched(
                self._page.url, status, body, loaded, "text/html", "utf-8", fetcher="browser", consent=wall
            )
        except (self._error, TimeoutError, CrawlConfigError, _NoLink) as exc:
            reason = "timeout" if isinstance(exc, (self._timeout, TimeoutError)) else network_error(exc)
            raw = Fetched(url, 0, b"", datetime.now(UTC), error=reason, fetcher="browser")
        try:
            if self.profile.clear_cookies:
                await self._context.clear_cookies()
                await self._seed()
            elif not self._gone:
                await self._save_cookies()
        except (self._error, OSError) as exc:  # a fetcher never raises: the next page shows it
            log.warning("profile %s: keeping its cookies failed: %s", self.profile.id, type(exc).__name__)
        return raw

    async def _consent(self, deadline: float) -> str:
        """Deal with the consent wall on the page as the study says; what happened
        (``consent.OUTCOMES``, or ``consent.FAILED`` if the wall stayed)."""
        selectors = self._buttons.of(self.consent_action)
        if not selectors:
            return consent.OUTCOMES["leave"]
        left_ms = max((deadline - asyncio.get_running_loop().time()) * 1000, 1.0)
        try:
            await self._page.locator(", ".join(selectors)).first.click(timeout=left_ms)
            left_ms = max((deadline - asyncio.get_running_loop().time()) * 1000, 1.0)
            await self._page.wait_for_function(GONE_JS, arg=self._wall["walls"], timeout=left_ms)
        except self._error as exc:
            log.warning("profile %s: the consent wall stayed (%s)", self.profile.id, type(exc).__name__)
            return consent.FAILED
        return consent.OUTCOMES[self.consent_action]

    async def aclose(self) -> None:
        try:
            if self._context is not None and not self._gone:
                await self._context.close()
        finally:
            if self._own is not None:
                await self._own.stop()
