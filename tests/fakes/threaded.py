"""The part both fake servers share: an aiohttp app in its own thread and event loop (so a
test can drive a crawler with ``asyncio.run``, the CLI runner or a subprocess meanwhile),
and a ``POST /v1/events`` that behaves like ingest, to test posting without the pipeline."""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections import deque
from typing import Any, Self

from aiohttp import web


class ThreadedFake:
    """``with Subclass(...) as fake: ... fake.base_url ...``; subclasses add their routes."""

    thread_name = "fake-server"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.api_key = "test-key"
        self.ingested: list[dict[str, Any]] = []
        self.ingest_failures: deque[int] = deque()
        """Statuses to answer the next ingest posts with before accepting (e.g. 503)."""
        self.ssl_context: ssl.SSLContext | None = None
        """Set before ``__enter__`` to serve TLS (e.g. a ``trustme`` certificate for an engine's host)."""

    @property
    def base_url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}"

    def add_routes(self, app: web.Application) -> None:
        """The fake's own routes (``POST /v1/events`` is added after them)."""

    async def on_start(self) -> None:
        """Set up loop-bound state (events, queues) inside the server's loop."""

    async def on_stop(self) -> None:
        """Release whatever waits in a handler before the server shuts down."""

    async def _ingest(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return web.json_response({"error": "unauthorized"}, status=401)
        with self._lock:
            failure = self.ingest_failures.popleft() if self.ingest_failures else None
        if failure is not None:
            return web.json_response({"error": "busy"}, status=failure, headers={"Retry-After": "0"})
        batch = await request.json()
        with self._lock:
            self.ingested.extend(batch)
        return web.json_response({"accepted": len(batch), "rejected": []}, status=202)

    async def _serve(self, ready: threading.Event) -> None:
        self._stop = asyncio.Event()
        await self.on_start()
        app = web.Application()
        self.add_routes(app)
        app.router.add_post("/v1/events", self._ingest)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=self.ssl_context)
        await site.start()
        self.port = runner.addresses[0][1]
        ready.set()
        try:
            await self._stop.wait()
        finally:
            await self.on_stop()
            await runner.cleanup()

    def __enter__(self) -> Self:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        loop = self._loop
        self._thread = threading.Thread(
            target=lambda: loop.run_until_complete(self._serve(ready)), name=self.thread_name, daemon=True
        )
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"{self.thread_name} did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)
        if self._loop is not None:
            self._loop.close()
