"""Fetchers: one per profile, each with its own cookies, User-Agent, language and proxy.

Both kinds implement :class:`Fetcher` and never raise on a failed request: they
return a :class:`RawResponse` with ``http_status`` 0 and the reason, so the crawler
records it. ``HttpFetcher`` (aiohttp) is the default; ``BrowserFetcher`` drives
Debian's Chromium through Playwright (``pip install 'auditstream[browser]'``),
imported only when a study asks for it, for engines that serve scripted pages.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import logging
import os
import pickle
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from http.cookies import Morsel
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from yarl import URL

from collectors.common.exceptions import CrawlConfigError, CrawlStateError
from collectors.common.http import RawResponse, no_answer, raw_response
from collectors.serp.study import Profile, Study

log = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"
MAX_BODY_BYTES = 8 * 1024 * 1024
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


class Fetcher(Protocol):
    async def fetch(self, url: str, *, time_limit: float) -> RawResponse: ...

    async def aclose(self) -> None: ...


def accept_language(language: str) -> str:
    """``en-US`` -> ``en-US,en;q=0.9``, as a browser set to that language sends it."""
    primary = language.split("-")[0]
    return language if primary == language else f"{language},{primary};q=0.9"


def file_cookies(path: Path) -> list[tuple[str, str, str, str]]:
    """(domain, path, name, value) from a Netscape ``cookies.txt`` (browsers' export format)."""
    jar = http.cookiejar.MozillaCookieJar(str(path))
    try:
        jar.load(ignore_discard=True, ignore_expires=True)
    except (OSError, http.cookiejar.LoadError) as exc:
        raise CrawlConfigError(f"cannot read cookies file {path}: {exc}") from None
    return [(c.domain, c.path, c.name, c.value or "") for c in jar]


class HttpFetcher:
    """aiohttp with the profile's cookie jar (saved to ``jar_path`` after each query, unless
    the profile clears its cookies), User-Agent, Accept-Language and proxy."""

    def __init__(self, profile: Profile, engine_url: str, *, jar_path: Path | None = None) -> None:
        self.profile = profile
        self.engine_url = URL(engine_url).origin()
        self.jar_path = jar_path
        self.jar = aiohttp.CookieJar(unsafe=True)  # unsafe: also keep cookies of IP hosts (proxies, fakes)
        if jar_path is not None and jar_path.exists() and not profile.clear_cookies:
            try:
                self.jar.load(jar_path)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                raise CrawlStateError(
                    f"cookie jar {jar_path} of profile {profile.id} is unreadable ({exc}); delete it "
                    "to start the profile again from the study's cookies"
                ) from None
        else:
            self._seed()
        headers = {
            "User-Agent": profile.user_agent,
            "Accept-Language": accept_language(profile.language),
            "Accept": ACCEPT,
        }
        self._session = aiohttp.ClientSession(cookie_jar=self.jar, headers=headers)

    def _seed(self) -> None:
        """The study's cookies: inline ones for the engine's host, then the cookies file."""
        self.jar.update_cookies(self.profile.cookies, response_url=self.engine_url)
        if self.profile.cookies_file is not None:
            for domain, path, name, value in file_cookies(self.profile.cookies_file):
                morsel: Morsel[str] = Morsel()
                morsel.set(name, value, value)
                morsel["domain"], morsel["path"] = domain, path
                self.jar.update_cookies({name: morsel}, response_url=URL(f"https://{domain.lstrip('.')}/"))

    async def fetch(self, url: str, *, time_limit: float) -> RawResponse:
        try:
            async with asyncio.timeout(time_limit):
                async with self._session.get(
                    url, proxy=self.profile.proxy, timeout=aiohttp.ClientTimeout(total=time_limit)
                ) as resp:
                    raw = await raw_response(resp, str(resp.url), MAX_BODY_BYTES)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raw = no_answer(url, exc)
        await self._after_query()
        return raw

    async def _after_query(self) -> None:
        if self.profile.clear_cookies:
            self.jar.clear()
            self._seed()
        elif self.jar_path is not None:
            await asyncio.to_thread(self._save_jar, self.jar_path)

    def _save_jar(self, path: Path) -> None:
        """Atomically (a kill mid-save must not leave a torn pickle)."""
        tmp = path.with_suffix(".tmp")
        self.jar.save(tmp)
        os.replace(tmp, path)

    async def aclose(self) -> None:
        await self._session.close()


class BrowserFetcher:
    """A persistent Chromium profile per study profile (``user_data_dir`` keeps its logins)."""

    def __init__(
        self, profile: Profile, engine_url: str, *, user_data_dir: Path, executable: str = CHROMIUM
    ) -> None:
        self.profile = profile
        self.engine_url = str(URL(engine_url).origin())
        self.user_data_dir = user_data_dir
        self.executable = executable
        self._playwright: Any = None
        self._context: Any = None
        self._page: Any = None
        self._errors: tuple[type[BaseException], ...] = (TimeoutError,)

    async def start(self) -> None:
        try:
            from playwright.async_api import Error as PlaywrightError
            from playwright.async_api import async_playwright
        except ImportError:
            raise CrawlConfigError(
                "the browser fetcher needs Playwright: pip install 'auditstream[browser]' "
                f"(it drives the Chromium at {self.executable}; apt-get install chromium)"
            ) from None
        if not await asyncio.to_thread(Path(self.executable).exists):
            raise CrawlConfigError(
                f"no Chromium at {self.executable}; apt-get install chromium or pass --chromium"
            )
        self._errors = (PlaywrightError, TimeoutError)
        p = self.profile
        self._playwright = await async_playwright().start()
        self._context = await self._playwright.chromium.launch_persistent_context(
            str(self.user_data_dir),
            executable_path=self.executable,
            headless=True,
            user_agent=p.user_agent,
            locale=p.language,
            extra_http_headers={"Accept-Language": accept_language(p.language)},
            proxy={"server": p.proxy} if p.proxy else None,
        )
        await self._seed()
        self._page = await self._context.new_page()

    async def _seed(self) -> None:
        cookies = [{"name": k, "value": v, "url": self.engine_url} for k, v in self.profile.cookies.items()]
        if self.profile.cookies_file is not None:
            cookies += [
                {"name": n, "value": v, "domain": d, "path": pth}
                for d, pth, n, v in file_cookies(self.profile.cookies_file)
            ]
        if cookies:
            await self._context.add_cookies(cookies)

    async def fetch(self, url: str, *, time_limit: float) -> RawResponse:
        try:
            resp = await self._page.goto(url, timeout=time_limit * 1000, wait_until="domcontentloaded")
            body = (await self._page.content()).encode("utf-8")
            status = resp.status if resp is not None else 200
            raw = RawResponse(self._page.url, status, body, datetime.now(UTC), "text/html", "utf-8")
        except self._errors as exc:
            raw = no_answer(url, exc)
        if self.profile.clear_cookies:
            await self._context.clear_cookies()
            await self._seed()
        return raw

    async def aclose(self) -> None:
        if self._context is not None:
            await self._context.close()
        if self._playwright is not None:
            await self._playwright.stop()


FetcherFactory = Callable[[Profile], Fetcher]


@contextlib.asynccontextmanager
async def open_fetchers(
    study: Study,
    engine_url: str,
    *,
    cookie_dir: Path | None = None,
    browser_dir: Path | None = None,
    chromium: str = CHROMIUM,
) -> AsyncIterator[Mapping[str, Fetcher]]:
    """One started fetcher per profile (the study's kind), all closed on exit; ``cookie_dir``
    (which must exist) keeps the HTTP profiles' cookie jars across runs."""
    opened: dict[str, Fetcher] = {}
    try:
        for p in study.profiles:
            if study.study.fetcher == "browser":
                browser = BrowserFetcher(
                    p, engine_url, user_data_dir=(browser_dir or Path("browser")) / p.id, executable=chromium
                )
                opened[p.id] = browser
                await browser.start()
            else:
                jar = cookie_dir / f"{p.id}.pickle" if cookie_dir is not None else None
                opened[p.id] = HttpFetcher(p, engine_url, jar_path=jar)
        yield opened
    finally:
        for fetcher in opened.values():
            try:
                await fetcher.aclose()
            except Exception:  # closing must not hide the error that ended the crawl
                log.warning("closing a fetcher failed", exc_info=True)
