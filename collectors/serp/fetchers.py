"""Fetchers: one per profile, each with its own cookies, User-Agent, language and proxy.

Both kinds implement :class:`~collectors.serp.page.Fetcher` and never raise on a failed
request: they return a :class:`~collectors.serp.page.Fetched` with ``http_status`` 0
and the reason, so the crawler records it. ``HttpFetcher`` (aiohttp) is the default;
``BrowserFetcher`` (``collectors.serp.browser``) drives Chromium through Playwright
(``pip install 'auditstream[browser]'``), for engines that serve a plain client another
page than a browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
from collections.abc import AsyncIterator, Mapping
from http.cookies import Morsel
from pathlib import Path
from urllib.parse import urljoin

import aiohttp
from yarl import URL

from collectors.common.exceptions import CrawlStateError, unwrap_group
from collectors.common.http import no_answer, raw_response
from collectors.serp.browser import CHROMIUM, BrowserFetcher, BrowserOptions, playwright_driver
from collectors.serp.cookies import read_cookies, unexpired
from collectors.serp.page import Fetched, Fetcher, accept_language
from collectors.serp.study import Profile, Study

__all__ = ["CHROMIUM", "BrowserFetcher", "BrowserOptions", "Fetcher", "HttpFetcher", "open_fetchers"]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


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
            for cookie in unexpired(read_cookies(self.profile.cookies_file)):
                morsel: Morsel[str] = Morsel()
                morsel.set(cookie.name, cookie.value, cookie.value)
                morsel["path"] = cookie.path
                if cookie.include_subdomains:  # else host-only: the host of response_url
                    morsel["domain"] = cookie.domain
                morsel["secure"], morsel["httponly"] = cookie.secure, cookie.http_only
                self.jar.update_cookies({cookie.name: morsel}, response_url=URL(f"https://{cookie.domain}/"))

    async def fetch(self, url: str, *, time_limit: float) -> Fetched:
        return await self._get(url, time_limit)

    async def visit(self, url: str, *, time_limit: float) -> Fetched:
        return await self._get(url, time_limit)

    async def click(self, href: str, *, page_url: str, time_limit: float) -> Fetched:
        """GET the link as it stands in the page (an engine's click redirect included), with
        the page as the referrer, as a browser following it would."""
        return await self._get(urljoin(page_url, href), time_limit, {"Referer": page_url})

    async def _get(self, url: str, time_limit: float, headers: dict[str, str] | None = None) -> Fetched:
        try:
            async with asyncio.timeout(time_limit):
                async with self._session.get(
                    url,
                    proxy=self.profile.proxy,
                    headers=headers,
                    timeout=aiohttp.ClientTimeout(total=time_limit),
                ) as resp:
                    raw = await raw_response(resp, str(resp.url), MAX_BODY_BYTES)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raw = no_answer(url, exc)
        await self._after_query()
        return Fetched(**vars(raw))

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


@contextlib.asynccontextmanager
async def open_fetchers(
    study: Study,
    engine_url: str,
    *,
    cookie_dir: Path | None = None,
    browser_dir: Path | None = None,
    browser: BrowserOptions | None = None,
) -> AsyncIterator[Mapping[str, Fetcher]]:
    """One started fetcher per profile (the study's kind), all closed on exit. ``cookie_dir``
    keeps the HTTP profiles' cookie jars across runs, ``browser_dir`` the browser profiles'
    Chromium directories (one per profile, launched together)."""
    if study.study.fetcher == "browser":
        async with _browsers(study, engine_url, browser_dir or Path("browser"), browser) as fetchers:
            yield fetchers
        return
    if cookie_dir is not None:
        await asyncio.to_thread(cookie_dir.mkdir, parents=True, exist_ok=True)
    opened: dict[str, Fetcher] = {}
    try:
        for p in study.profiles:
            jar = cookie_dir / f"{p.id}.pickle" if cookie_dir is not None else None
            opened[p.id] = HttpFetcher(p, engine_url, jar_path=jar)
        yield opened
    finally:
        await _close(opened)


@contextlib.asynccontextmanager
async def _browsers(
    study: Study, engine_url: str, directory: Path, options: BrowserOptions | None
) -> AsyncIterator[Mapping[str, Fetcher]]:
    """Every profile's Chromium, started side by side on one Playwright driver."""
    fetchers = {
        p.id: BrowserFetcher(
            p,
            study.study.engine,
            engine_url,
            user_data_dir=directory / p.id,
            options=options,
            consent_action=study.study.consent,
        )
        for p in study.profiles
    }
    async with playwright_driver() as playwright:
        try:
            try:
                async with asyncio.TaskGroup() as tg:
                    for fetcher in fetchers.values():
                        tg.create_task(fetcher.start(playwright))
            except BaseExceptionGroup as group:
                raise unwrap_group(group) from None
            yield fetchers
        finally:
            await _close(fetchers)


async def _close(fetchers: Mapping[str, Fetcher]) -> None:
    for fetcher in fetchers.values():
        try:
            await fetcher.aclose()
        except Exception:  # closing must not hide the error that ended the crawl
            log.warning("closing a fetcher failed", exc_info=True)
