"""Malformed requests leave one short line in the log, never their bytes or a traceback,
however many of them are sent."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from ingest.log_privacy import WithholdRequestContent

SECRET = b"not-gzip-but-says-so-0123456789"


class Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(logging.Formatter().format(record))


async def _send(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    writer.close()
    return head


@pytest.mark.parametrize("encoding", [b"gzip", b"deflate"])
async def test_bodies_that_lie_about_their_encoding_log_one_line_without_content(encoding: bytes) -> None:
    capture = Capture()
    capture.addFilter(WithholdRequestContent())
    # on aiohttp's logger, so it sees each record before the root logger's handlers (whose
    # filters other tests may have installed) do
    aiohttp_log = logging.getLogger("aiohttp")
    aiohttp_log.addHandler(capture)
    server = TestServer(web.Application())  # every path a 404: no handler reads the body
    await server.start_server()
    try:
        assert server.port is not None
        request = (
            b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Encoding: " + encoding + b"\r\n"
            b"Content-Length: " + str(len(SECRET)).encode() + b"\r\n\r\n" + SECRET
        )
        for _ in range(20):
            assert (await _send(server.port, request)).startswith(b"HTTP/1.1 404")

        def refused() -> list[logging.LogRecord]:
            return [r for r in capture.records if "malformed" in r.getMessage()]

        for _ in range(100):  # aiohttp logs after the answer, as it drains the body
            if refused():
                break
            await asyncio.sleep(0.05)  # wait-ok: polled under a bound
    finally:
        await server.close()
        aiohttp_log.removeHandler(capture)
    assert len(refused()) == 1 and refused()[0].levelno == logging.WARNING
    assert not any("Traceback" in line or "Unhandled" in line for line in capture.lines)
    assert not any(SECRET.decode()[:12] in line for line in capture.lines)
