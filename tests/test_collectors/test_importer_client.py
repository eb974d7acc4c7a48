"""The import client against a service that fails part-way: it never hangs, and every
chunk the service stored is in the stats (so its days are recomputed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from collectors.import_upload import ImportFailed, ImportStats, send_all


def answer(day: int) -> dict[str, Any]:
    span = {"experiment_id": "e", "engine": "google", "day_start": day * 86400}
    return {"lines": 1, "accepted": 1, "inserted": 1, "duplicates": 0, "dead_letters": 0,
            "rejected_by_reason": {}, "rejected": [], "spans": [span]}  # fmt: skip


async def serve(handler: Any) -> TestServer:
    app = web.Application()
    app.router.add_get("/healthz", _ok)
    app.router.add_post("/v1/import", handler)
    server = TestServer(app)
    await server.start_server()
    return server


async def _ok(request: web.Request) -> web.Response:
    return web.json_response({"ok": True})


async def test_a_refused_chunk_lets_the_chunk_in_flight_finish_and_stops() -> None:
    slow_started = asyncio.Event()

    async def handler(request: web.Request) -> web.Response:
        day = int(await request.read())
        if day == 1:  # stored, but answered after the refusal below
            slow_started.set()
            await asyncio.sleep(0.3)  # wait-ok: the chunk in flight while another is refused
            return web.json_response(answer(1))
        await slow_started.wait()
        return web.json_response({"error": "bad"}, status=400) if day == 2 else web.json_response(answer(day))

    server = await serve(handler)
    stats = ImportStats()
    try:
        bodies = iter([(1, b"1"), (2, b"2"), (3, b"3"), (4, b"4")])
        with pytest.raises(ImportFailed, match="400"):
            await asyncio.wait_for(send_all(str(server.make_url("/")), "k", bodies, stats), 30)
    finally:
        await server.close()
    assert stats.spans == {("e", "google", 86400)}  # the chunk in flight was counted
    assert stats.accepted == 1  # and nothing after the refusal was sent


async def test_a_service_that_keeps_failing_ends_the_import_instead_of_hanging() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"error": "gone"}, status=410)

    server = await serve(handler)
    try:
        bodies = iter([(i, b"x") for i in range(1, 10)])
        with pytest.raises(ImportFailed, match="410"):
            await asyncio.wait_for(send_all(str(server.make_url("/")), "k", bodies, ImportStats()), 30)
    finally:
        await server.close()
