"""Requests aiohttp's parser refuses are answered as JSON that quotes none of their bytes."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ingest import protocol_errors

KEY = "probe-admin-key-0123456789-padded-to-35-chars"


async def _raw(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)  # the answer closes the connection
    writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in headers.items()}, body


async def _ok(request: web.Request) -> web.Response:
    return web.json_response({})


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"GET /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + KEY.encode()
        + b"A" * 9000
        + b"\r\n\r\n",
        b"FOO\x01 /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + KEY.encode() + b"\r\n\r\n",
        b"GET /v1/sql HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00" + KEY.encode() + b"\r\n\r\n",
        b"POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz"
        + KEY.encode()
        + b"\r\n",
        b"GET /v1/sql HTTP/9." + KEY.encode() + b"\r\nHost: x\r\n\r\n",
    ],
    ids=["long-header", "bad-method", "nul-in-header", "bad-chunk", "bad-version"],
)
async def test_a_request_the_parser_refuses_gets_json_without_its_bytes(request_bytes: bytes) -> None:
    protocol_errors.install()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", _ok)
    server = TestServer(app)
    await server.start_server()
    try:
        assert server.port is not None
        status, headers, body = await _raw(server.port, request_bytes)
    finally:
        await server.close()
    assert 400 <= status < 500
    assert headers["content-type"].startswith("application/json")
    doc = orjson.loads(body)
    assert set(doc) == {"error", "message"} and "nothing was accepted" in doc["message"]
    assert KEY[:8].encode() not in body and b"AAAA" not in body
