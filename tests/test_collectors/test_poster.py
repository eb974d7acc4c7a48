"""The traffic poster (``simulate``) ends with an error instead of hanging when ingest
refuses every batch while more are queued; a dead URL is said at once."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from collectors.common.http import ServiceUnreachable, ensure_answers
from collectors.simulate.poster import post_batches


async def _ok(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def _gone(request: web.Request) -> web.Response:
    return web.json_response({"error": "gone"}, status=410)


async def test_refused_batches_end_the_run_though_the_queue_is_full() -> None:
    app = web.Application()
    app.router.add_get("/healthz", _ok)
    app.router.add_post("/v1/events", _gone)
    server = TestServer(app)
    await server.start_server()
    try:
        batches = [[{"n": i}] for i in range(100)]  # far more than the queue holds
        with pytest.raises(RuntimeError, match="410"):
            await asyncio.wait_for(post_batches(str(server.make_url("/")), "k", batches, concurrency=2), 30)
    finally:
        await server.close()


async def test_nothing_answering_is_said_at_once() -> None:
    """``simulate`` and ``import`` ask first (``ensure_answers``); the poster itself keeps
    retrying, as a crawler's sink needs while ingest restarts."""
    with pytest.raises(ServiceUnreachable, match="nothing answers"):
        await asyncio.wait_for(ensure_answers("http://127.0.0.1:1"), 30)
