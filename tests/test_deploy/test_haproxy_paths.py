"""The proxy's path rules, run: haproxy with deploy/haproxy/haproxy.cfg on loopback, its
backend a stand-in of ingest with the real app's routes (so aiohttp's router reads each path
as ingest does). Every public route passes; no spelling of /metrics reaches the app.

``/%6detrics`` was the way in: aiohttp decodes the path and serves it as /metrics, while
the proxy's rule matched the path as sent."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.settings import Settings
from ingest.app import create_app
from tests.helpers import free_port
from tests.test_deploy.common import DEPLOY, tool

CONFIG = DEPLOY / "haproxy" / "haproxy.cfg"
PRIVATE = {"/metrics"}
"""Routes of the app the proxy must not let through."""

METRICS_SPELLINGS = [
    "/metrics",
    "/%6detrics",
    "/%6Detrics",
    "/%6D%65%74%72%69%63%73",
    "/METRICS",
    "/Metrics",
    "/metrics?name=x",
    "/metrics#top",
    "/metrics/",
    "/metrics;x",
    "//metrics",
    "/./metrics",
    "/%2e/metrics",
    "/%2Fmetrics",
    "/v1/../metrics",
    "/v1/%2e%2e/metrics",
    "/v1/%2E%2E/metrics",
    "/v1%2F..%2Fmetrics",
    "/v1/..%2Fmetrics",
    "/v1/x/../../metrics",
    "/board/static/..%2F..%2Fmetrics",
    "/healthz/../metrics",
    "/%252e%252e/metrics",
    "/metrics%00",
    "/metrics%",
    "/metrics%zz",
    "http://ingest/metrics",
    "http://ingest/%6detrics",
]


def app_routes(tmp_path: Path) -> list[tuple[str, str]]:
    """(method, canonical path) of every route of the real app."""
    app = create_app(Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9"))
    return sorted(
        {
            (route.method, route.resource.canonical)
            for route in app.router.routes()
            if route.resource is not None
        }
    )


class StandIn:
    """An aiohttp app with ingest's routes, each answering which route it matched."""

    def __init__(self, routes: list[tuple[str, str]]) -> None:
        self.served: list[str] = []
        self.app = web.Application()
        for method, path in routes:
            self.app.router.add_route(method, path, self._answer(path))

    def _answer(self, canonical: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handler(request: web.Request) -> web.Response:
            self.served.append(canonical)
            return web.json_response({"route": canonical})

        return handler


async def raw_request(port: int, method: str, target: str) -> tuple[int, bytes]:
    """Send ``target`` exactly as written (no client normalises it); the status and body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"{method} {target} HTTP/1.1\r\nHost: ingest\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 10)
    finally:
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def start_haproxy(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [tool("haproxy"), "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT
        )


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[tuple[int, StandIn]]:
    stand_in = StandIn(app_routes(tmp_path))
    server = TestServer(stand_in.app, host="127.0.0.1")
    await server.start_server()
    proxy_port, stats_port = free_port(), free_port()
    text = CONFIG.read_text()
    for old, new in (
        ("maxconn 20000", "maxconn 200"),  # what a test's file descriptor limit allows
        ("bind :8080", f"bind 127.0.0.1:{proxy_port}"),
        ("bind :8404", f"bind 127.0.0.1:{stats_port}"),
        (
            "server-template ingest 8 ingest:8080 check resolvers docker init-addr none",
            f"server ingest-1 127.0.0.1:{server.port} check",
        ),
    ):
        assert text.count(old) == 1, f"deploy/haproxy/haproxy.cfg no longer has {old!r}: update this test"
        text = text.replace(old, new)
    config, log = tmp_path / "haproxy.cfg", tmp_path / "haproxy.log"
    config.write_text(text)
    proxy = start_haproxy(config, log)
    try:
        async with asyncio.timeout(20):
            while True:
                assert proxy.poll() is None, f"haproxy exited: {log.read_text()}"
                try:
                    if (await raw_request(proxy_port, "GET", "/healthz"))[0] == 200:
                        break
                except (OSError, IndexError, ValueError):
                    pass
                await asyncio.sleep(0.1)  # wait-ok: poll interval under a deadline
        stand_in.served.clear()
        yield proxy_port, stand_in
    finally:
        proxy.terminate()
        await asyncio.to_thread(proxy.wait, 10)
        await server.close()


async def test_no_spelling_of_metrics_reaches_the_app(proxied: tuple[int, StandIn]) -> None:
    port, stand_in = proxied
    for target in METRICS_SPELLINGS:
        try:
            status, body = await raw_request(port, "GET", target)
        except (IndexError, ValueError):  # the proxy hung up on it: not through either
            continue
        assert b'"/metrics"' not in body, (target, status, body)
        assert status >= 400, (target, status, body)
    assert "/metrics" not in stand_in.served, stand_in.served


async def test_every_public_route_passes(proxied: tuple[int, StandIn], tmp_path: Path) -> None:
    """Each route but the private ones, with its path parameters in the characters ids have
    (and once percent-encoded, as a browser's encodeURIComponent writes ':' and '=')."""
    port, stand_in = proxied
    public = [(m, p) for m, p in app_routes(tmp_path) if p not in PRIVATE and m != "HEAD"]
    assert ("POST", "/v1/events") in public and ("GET", "/board/static/{name}") in public
    for method, path in public:
        for value in ("exp-1.a_b:c=d", "exp-1.a_b%3Ac%3Dd"):
            target = re.sub(r"\{[^}]+\}", value, path)
            status, body = await raw_request(port, method, target)
            assert status == 200 and f'"{path}"'.encode() in body, (method, target, status, body)
    assert set(stand_in.served) == {p for _, p in public}
