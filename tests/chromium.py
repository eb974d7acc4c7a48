"""A real headless Chromium for tests, driven over the DevTools protocol (no extra library).

``chromium()`` starts Debian's Chromium with a throw-away profile and yields a
:class:`Browser`; ``Browser.evaluate(url, expression)`` opens ``url`` in a new tab,
evaluates a JavaScript expression there (awaiting a promise) and returns its JSON value.
Pages come from a local aiohttp server (``serve``), as ES modules need an http origin.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.helpers import wait_for

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_binary() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


STEP_S = 120
"""Longest wait for one DevTools step (a page of rules over 70 pages takes seconds)."""


class Session:
    """One DevTools connection: a tab or a worker (``evaluate``), a tab also ``navigate``."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)
        self._events: list[str] = []

    async def call(self, method: str, params: dict | None = None) -> Any:
        call_id = next(self._ids)
        await self.ws.send_json({"id": call_id, "method": method, "params": params or {}})
        async with asyncio.timeout(STEP_S):
            async for message in self.ws:
                doc = message.json()
                if doc.get("id") == call_id:
                    if "error" in doc:
                        raise AssertionError(f"DevTools {method}: {doc['error']}")
                    return doc["result"]
                if "method" in doc:
                    self._events.append(doc["method"])
        raise AssertionError(f"DevTools closed the connection during {method}")

    async def wait_event(self, method: str) -> None:
        """Wait for a DevTools event (one that came while awaiting a reply counts too)."""
        if method in self._events:
            self._events.remove(method)
            return
        async with asyncio.timeout(STEP_S):
            async for message in self.ws:
                if message.json().get("method") == method:
                    return
        raise AssertionError(f"DevTools closed the connection before {method}")

    async def navigate(self, url: str, until: str = "Page.loadEventFired") -> None:
        """Open ``url`` and wait for its load event (or another page event)."""
        self._events.clear()
        await self.call("Page.enable")
        await self.call("Page.navigate", {"url": url})
        await self.wait_event(until)

    async def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript (awaiting a promise); its JSON value."""
        options = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        result = await self.call("Runtime.evaluate", options)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise AssertionError(f"JavaScript raised: {details.get('exception', {}).get('description')}")
        return result["result"].get("value")


class Browser:
    def __init__(self, port: int) -> None:
        self.endpoint = f"http://127.0.0.1:{port}"

    async def targets(self) -> list[dict[str, Any]]:
        async with aiohttp.ClientSession() as session, session.get(f"{self.endpoint}/json/list") as resp:
            return await resp.json(content_type=None)

    @asynccontextmanager
    async def tab(self) -> AsyncIterator[Session]:
        """A new blank tab, closed afterwards."""
        async with aiohttp.ClientSession() as session:
            async with session.put(f"{self.endpoint}/json/new?about:blank") as resp:
                target = await resp.json(content_type=None)
            try:
                async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                    yield Session(ws)
            finally:
                async with session.get(f"{self.endpoint}/json/close/{target['id']}") as resp:
                    await resp.read()

    @asynccontextmanager
    async def attach(self, target: dict[str, Any]) -> AsyncIterator[Session]:
        """A session on an existing target (an extension's service worker, a tab)."""
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws,
        ):
            yield Session(ws)

    async def evaluate(self, url: str, expression: str) -> Any:
        """Open ``url`` in a new tab, evaluate ``expression`` there, close the tab."""
        async with self.tab() as tab:
            await tab.navigate(url)
            return await tab.evaluate(expression)


@asynccontextmanager
async def chromium(extra_args: tuple[str, ...] = ()) -> AsyncIterator[Browser]:
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError("no Chromium: .ci/run installs Debian's chromium package")
    # ignore_cleanup_errors: Chromium's helper processes may still be writing the profile as it exits
    with tempfile.TemporaryDirectory(prefix="auditstream-chromium-", ignore_cleanup_errors=True) as profile:
        proc = await asyncio.create_subprocess_exec(
            binary,
            "--headless",
            "--no-sandbox",  # CI runs as root
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            *extra_args,
            "about:blank",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            active = Path(profile) / "DevToolsActivePort"

            def port_written() -> bool:
                return active.exists() and active.read_text().count("\n") >= 1

            await asyncio.to_thread(wait_for, port_written, 60, "Chromium's DevTools port")
            yield Browser(int(active.read_text().split()[0]))
        finally:
            if proc.returncode is None:
                proc.terminate()
            try:
                async with asyncio.timeout(20):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Run ``app`` on a free port of 127.0.0.1; yields its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
