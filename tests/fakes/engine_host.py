"""Result pages served under the engines' own host names, for the extension's Chromium tests.

A local TLS server (certificate from a throw-away ``trustme`` CA for www.google.com and
www.bing.com, or the hosts a test names: Google's country domains) answers
``/search?...&fixture=NAME`` with a stored page; Chromium is told to resolve the engine
hosts to it (``--host-resolver-rules``) and to accept the certificate, so the content
script runs on ``https://www.google.com/search?...`` unchanged. Page scripts are switched
off by a CSP header: the page is the HTML the engine served, as the parser sees it, and
cannot navigate away.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import trustme
from aiohttp import web

from tests.chromium import Browser, Session

HOSTS = ("www.google.com", "www.bing.com")
CSP = "script-src 'none'; object-src 'none'"


@asynccontextmanager
async def engine_host(pages: Mapping[str, str], hosts: Sequence[str] = HOSTS) -> AsyncIterator[int]:
    """Serve ``pages`` (name -> decoded HTML) on TLS for ``hosts``; yields the port."""
    ca = trustme.CA()
    cert = ca.issue_cert(*hosts)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)

    async def search(request: web.Request) -> web.Response:
        name = request.query.get("fixture", "")
        if name not in pages:
            return web.Response(status=404, text="no such fixture")
        return web.Response(
            text=pages[name],
            content_type="text/html",
            charset="utf-8",
            headers={"Content-Security-Policy": CSP},
        )

    app = web.Application()
    app.router.add_get("/search", search)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    try:
        yield site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    finally:
        await runner.cleanup()


def chromium_args(extension_dir: str, port: int, hosts: Sequence[str] = HOSTS) -> tuple[str, ...]:
    # the engines' hosts go to the local server; every other host fails at once (no network
    # here: an image on another host would otherwise hold the page's load event for minutes)
    rules = ", ".join(
        [*(f"MAP {host}:443 127.0.0.1:{port}" for host in hosts), "MAP * ~NOTFOUND", "EXCLUDE 127.0.0.1"]
    )
    return (
        f"--load-extension={extension_dir}",
        f"--disable-extensions-except={extension_dir}",
        f"--host-resolver-rules={rules}",
        "--ignore-certificate-errors",
    )


def search_url(
    engine: str, name: str, query: str = "test query", host: str | None = None, **params: str
) -> str:
    """``https://HOST/search?q=...&fixture=NAME&PARAMS``; HOST is the engine's .com host unless
    named (a Google country domain, which ``engine_host`` and ``chromium_args`` must list)."""
    host = host or ("www.google.com" if engine == "google" else "www.bing.com")
    extra = "".join(f"&{k}={quote(v)}" for k, v in params.items())
    return f"https://{host}/search?q={quote(query)}&fixture={quote(name)}{extra}"


@asynccontextmanager
async def extension_worker(browser: Browser) -> AsyncIterator[Session]:
    """A session on the extension's service worker, once Chromium has started it and its
    extension APIs are there (a worker target shows up a moment before ``chrome`` does)."""
    target = None
    async with asyncio.timeout(60):  # the discovery only: the session itself may last
        while target is None:
            found = [t for t in await browser.targets() if t["type"] == "service_worker"]
            target = next((t for t in found if t["url"].startswith("chrome-extension://")), None)
            if target is None:
                await asyncio.sleep(0.1)  # wait-ok: polling Chromium's target list for a condition
    async with browser.attach(target) as worker:
        async with asyncio.timeout(60):
            while not await worker.evaluate("typeof chrome === 'object' && Boolean(chrome.storage)"):
                await asyncio.sleep(0.1)  # wait-ok: polling for the worker's extension APIs
        yield worker


READY = """new Promise(resolve => {
  const done = () => document.documentElement.dataset.auditstreamReady;
  const check = () => (done() ? resolve(true) : setTimeout(check, 20));
  check();
})"""
"""Resolves once the test build's content script has finished with the page."""

BUILD_STORED = """new Promise(resolve => {
  const done = async () => (await chrome.storage.local.get('build')).build;
  const check = async () => ((await done()) ? resolve(true) : setTimeout(check, 20));
  check();
})"""
"""In the service worker: resolves once the build's options are in storage."""

MARKS = """[...document.querySelectorAll('[data-auditstream-type]')].map(el => ({
  type: el.dataset.auditstreamType,
  rank: el.dataset.auditstreamOriginalRank ? Number(el.dataset.auditstreamOriginalRank) : null,
  hrefs: [el, ...el.querySelectorAll('a[href]')]
    .filter(a => a.matches('a[href]'))
    .map(a => a.getAttribute('href')),
  hidden: getComputedStyle(el).display === 'none',
}))"""
"""Every marked element in DOM (display) order: type, control rank, links, hidden."""


def build_extension(
    out: Path,
    study_url: str,
    key: str,
    experiment: str,
    data_dir: Path,
    test_marks: bool = True,
    check: bool = True,
) -> Path:
    """The extension built by the CLI; ``data_dir``'s key file must hold ``key`` (ingest scope).
    ``check``: the service at ``study_url`` runs and knows ``experiment``."""
    from typer.testing import CliRunner

    from auditstream.cli import app

    args = ["extension", "build", "--study-url", study_url, "--key", key, "--experiment", experiment]
    args += ["--data-dir", str(data_dir), *([] if check else ["--no-check"])]
    result = CliRunner().invoke(app, [*args, "--out", str(out), *(["--test-marks"] if test_marks else [])])
    assert result.exit_code == 0, result.output
    return out
