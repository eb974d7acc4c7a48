"""A request body has a deadline: one that trickles in or never ends gets 408 body_timeout
and its connection is closed, instead of being held for as long as the client likes (200
connections sending a byte every 15 s were held 120 s; an unterminated chunked body was
still open after 150 s). An import chunk's deadline is on progress: a slow chunk that keeps
coming is read whole. Raw sockets against the real app, with a 1 s deadline set through the
environment."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer

from core.settings import Settings
from core.store.base import NoStore
from ingest.api_keys import KeyFile
from ingest.app import create_app

DEADLINE_S = 2.0
SLACK_S = 3.0
"""How much later than the deadline the answer may come on a busy machine."""


@dataclass
class Intake:
    port: int
    keys: dict[str, str]


@pytest.fixture
async def intake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Intake]:
    monkeypatch.setenv("AUDITSTREAM_BODY_READ_TIMEOUT_S", str(DEADLINE_S))
    settings = Settings(data_dir=tmp_path, kafka_bootstrap="127.0.0.1:9")
    assert settings.body_read_timeout_s == DEADLINE_S
    keys = KeyFile(settings.resolved_keys_file)
    secrets = {"ingest": keys.create("extension", ("ingest",))[1], "admin": keys.create("lab", ("admin",))[1]}
    # as `auditstream ingest` serves it: a client that hangs up cancels its handler
    server = TestServer(create_app(settings, NoStore("no store here")), handler_cancellation=True)
    await server.start_server()
    yield Intake(server.port or 0, secrets)
    await server.close()


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    after_s: float
    closed: bool


async def exchange(port: int, head: str, body_parts: list[bytes], every_s: float) -> Answer:
    """Send ``head``, then ``body_parts`` one every ``every_s`` (stopping when the server
    answers or hangs up); read the answer and whether the connection is then closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(head.encode())

    async def trickle() -> None:
        with contextlib.suppress(ConnectionError):
            for part in body_parts:
                await asyncio.sleep(every_s)  # wait-ok: the slow client's pace
                writer.write(part)
                await writer.drain()

    sender = asyncio.create_task(trickle())
    try:
        async with asyncio.timeout(DEADLINE_S + SLACK_S + len(body_parts) * every_s):
            status_line = await reader.readuntil(b"\r\n")
            raw_headers = await reader.readuntil(b"\r\n\r\n")
            after_s = time.monotonic() - started
            headers = {}
            for line in raw_headers.decode().split("\r\n"):
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers["content-length"]))
        sender.cancel()  # the answer is in: the client sends no more
        closed = False
        try:
            async with asyncio.timeout(2):
                closed = await reader.read() == b""
        except ConnectionError:  # reset by the server (a part sent as it closed): closed too
            closed = True
        except TimeoutError:
            pass
        return Answer(int(status_line.split()[1]), headers, body, after_s, closed)
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender
        writer.close()


def head(path: str, key: str, content_type: str, framing: str) -> str:
    return (
        f"POST {path} HTTP/1.1\r\nHost: ingest\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {content_type}\r\n{framing}\r\n\r\n"
    )


def assert_timed_out(answer: Answer) -> None:
    assert answer.status == 408, answer
    assert orjson.loads(answer.body)["error"] == "body_timeout", answer
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers.get("connection", "").lower() == "close", answer.headers
    assert DEADLINE_S * 0.9 <= answer.after_s <= DEADLINE_S + SLACK_S, answer.after_s
    assert answer.closed, "the connection stayed open after the 408"


async def test_a_body_that_trickles_in_gets_408_and_its_connection_closed(intake: Intake) -> None:
    body = orjson.dumps([{"type": "serp_view"}])
    slow = head("/v1/events", intake.keys["ingest"], "application/json", f"Content-Length: {len(body)}")
    answer = await exchange(intake.port, slow, [body[i : i + 1] for i in range(len(body))], every_s=0.25)
    assert_timed_out(answer)


async def test_a_chunked_body_that_never_ends_gets_408_and_its_connection_closed(intake: Intake) -> None:
    endless = head("/v1/events", intake.keys["ingest"], "application/json", "Transfer-Encoding: chunked")
    answer = await exchange(intake.port, endless + "2\r\n[{\r\n", [], every_s=0)
    assert_timed_out(answer)


async def test_an_import_chunk_that_stalls_gets_408_and_its_connection_closed(intake: Intake) -> None:
    stalled = head("/v1/import", intake.keys["admin"], "application/x-ndjson", "Transfer-Encoding: chunked")
    answer = await exchange(intake.port, stalled + '9\r\n{"x": 1}\n\r\n', [], every_s=0)
    assert_timed_out(answer)


async def test_an_import_chunk_that_keeps_coming_is_read_whole_however_long_it_takes(intake: Intake) -> None:
    """Progress, not the total, is what the import's deadline is on: 4 s of lines, one every
    0.25 s, with a 2 s deadline (wide margins: the client shares the loop of a busy machine).

    A one-line chunk is imported first: the first import starts the validation process (a
    spawned Python importing the models: over 5 s beside two CPU burners), and that
    start is not what the slow chunk's answer is timed on."""
    line = b'{"x": 1}\n'
    admin = {"Authorization": f"Bearer {intake.keys['admin']}", "Content-Type": "application/x-ndjson"}
    url, within = f"http://127.0.0.1:{intake.port}/v1/import", aiohttp.ClientTimeout(total=120)
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=line, headers=admin, timeout=within) as first,
    ):
        assert first.status == 200 and (await first.json())["lines"] == 1
    parts = [b"%x\r\n%s\r\n" % (len(line), line) for _ in range(16)] + [b"0\r\n\r\n"]
    slow = head("/v1/import", intake.keys["admin"], "application/x-ndjson", "Transfer-Encoding: chunked")
    answer = await exchange(intake.port, slow, parts, every_s=0.25)
    assert answer.status == 200, answer
    assert orjson.loads(answer.body)["lines"] == 16
    assert answer.after_s > 4.0
