"""What the ingest middleware counts: a client that hangs up is not a server error."""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestServer

from ingest.app_state import METRICS
from ingest.metrics import IngestMetrics
from ingest.middlewares import CLIENT_CLOSED, observe


async def test_a_request_whose_client_hangs_up_is_counted_499_not_500() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.Response:
        started.set()
        try:
            await asyncio.Event().wait()  # until the client's hang-up cancels it
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return web.json_response({})

    app = web.Application(middlewares=[observe])
    app[METRICS] = IngestMetrics.create()
    app.router.add_get("/slow", slow)
    server = TestServer(app, handler_cancellation=True)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as session:
            request = asyncio.ensure_future(session.get(server.make_url("/slow")))
            await asyncio.wait_for(started.wait(), 10)
            request.cancel()  # the client hangs up
        await asyncio.wait_for(cancelled.wait(), 10)

        def counted() -> dict[str, float]:
            return {
                s.labels["status"]: s.value
                for metric in app[METRICS].requests.collect()
                for s in metric.samples
                if s.name.endswith("_total") and s.labels["route"] == "/slow"
            }

        async with asyncio.timeout(10):  # the middleware counts as the cancellation unwinds
            while not counted():
                await asyncio.sleep(0.01)  # wait-ok: poll interval under a deadline
        assert counted() == {str(CLIENT_CLOSED): 1.0}
    finally:
        await server.close()
