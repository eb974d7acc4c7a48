"""The client side of ``auditstream import``: read event files, send them in chunks.

Files are JSON lines (optionally gzipped, by the ``.gz`` suffix), Parquet (``.parquet``,
one column per event field) or ``-`` for JSON lines on standard input. Lines go to
``POST /v1/import`` in chunks of at most ``chunk_lines`` lines, two chunks in flight, so
the service validates one while it stores the other. The days each chunk touched are
collected and sent to ``POST /v1/import/recompute`` at the end, then each experiment's
study-wide rows, then the autocomplete and personalization studies the chunks held: the
service recomputes them in the background, and its answers to
``GET /v1/import/recompute/{id}`` show the progress.
"""

from __future__ import annotations

import asyncio
import codecs
import gzip
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from collectors.common.http import ensure_answers

NDJSON = "application/x-ndjson"


class ImportFailed(Exception):
    """The service refused a chunk for a reason retrying will not fix (4xx)."""


class UnreadableFile(Exception):
    """An input file stopped making sense part-way (a truncated or corrupt gzip, a broken
    Parquet file): what came before it was sent."""


MAX_LINE_BYTES = 1024 * 1024
"""A line longer than what ``POST /v1/events`` takes as a whole request cannot be an event:
it is rejected here (``line_too_long``) instead of sent, where it made its chunk too large."""


@dataclass
class ImportStats:
    lines: int = 0
    accepted: int = 0
    inserted: int = 0
    duplicates: int = 0
    dead_letters: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    examples: list[dict[str, Any]] = field(default_factory=list)
    spans: set[tuple[str, str, int]] = field(default_factory=set)
    crawl_studies: set[tuple[str, str]] = field(default_factory=set)
    """(engine, study_id) of the autocomplete crawls stored."""
    serp_studies: set[str] = field(default_factory=set)

    @property
    def recompute_steps(self) -> int:
        """Days, experiments and crawler studies the recompute goes through."""
        experiments = {(e, g) for e, g, _ in self.spans}
        return len(self.spans) + len(experiments) + len(self.crawl_studies) + len(self.serp_studies)

    def add(self, answer: dict[str, Any], first_line: int) -> None:
        for name in ("lines", "accepted", "inserted", "duplicates", "dead_letters"):
            setattr(self, name, getattr(self, name) + int(answer[name]))
        self.rejected.update(answer["rejected_by_reason"])
        for r in answer["rejected"][: max(0, 20 - len(self.examples))]:
            self.examples.append({**r, "line": r["line"] + first_line - 1})
        self.spans.update((s["experiment_id"], s["engine"], s["day_start"]) for s in answer["spans"])
        self.crawl_studies.update((s["engine"], s["study_id"]) for s in answer.get("crawl_studies", ()))
        self.serp_studies.update(s["study_id"] for s in answer.get("serp_studies", ()))


def file_size(name: str) -> int:
    return 0 if name == "-" else Path(name).stat().st_size


def _text_lines(handle: Iterable[bytes]) -> Iterator[bytes]:
    for number, line in enumerate(handle):
        line = line.strip()
        if number == 0 and line.startswith(codecs.BOM_UTF8):  # a file saved "with BOM"
            line = line[len(codecs.BOM_UTF8) :].strip()
        if line:
            yield line


def read_lines(name: str, on_bytes: Callable[[int], None] | None = None) -> Iterator[bytes]:
    """Each event of a file as one JSON line (bytes); ``on_bytes`` gets the file bytes read.
    A file that stops making sense part-way raises ``UnreadableFile`` (after the lines before)."""
    try:
        yield from _read_lines(name, on_bytes)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:  # truncated or corrupt gzip
        raise UnreadableFile(f"{name} is not a whole gzip file ({exc or type(exc).__name__})") from None
    except Exception as exc:
        if type(exc).__module__.startswith("pyarrow"):  # ArrowInvalid and kin: a broken Parquet file
            raise UnreadableFile(f"{name} is not a readable Parquet file ({exc})") from None
        raise


def _read_lines(name: str, on_bytes: Callable[[int], None] | None) -> Iterator[bytes]:
    if name.endswith(".parquet"):
        yield from _parquet_lines(Path(name), on_bytes)
        return
    if name == "-":
        yield from _text_lines(sys.stdin.buffer)
        return
    with open(name, "rb") as raw, gzip.open(raw) if name.endswith(".gz") else raw as handle:
        seen = 0
        for line in _text_lines(handle):
            if on_bytes is not None and raw.tell() != seen:
                on_bytes(raw.tell() - seen)
                seen = raw.tell()
            yield line


def _parquet_lines(path: Path, on_bytes: Callable[[int], None] | None) -> Iterator[bytes]:
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(path)
    per_group = path.stat().st_size / max(1, parquet.num_row_groups)
    for group in range(parquet.num_row_groups):
        for row in parquet.read_row_group(group).to_pylist():
            yield orjson.dumps({k: v for k, v in row.items() if v is not None}, default=str)
        if on_bytes is not None:
            on_bytes(int(per_group))


def chunks(
    lines: Iterator[bytes],
    chunk_lines: int,
    max_bytes: int,
    on_too_long: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """(first line number, body) for chunks of at most ``chunk_lines`` lines and ``max_bytes``.
    A line over ``MAX_LINE_BYTES`` is not sent: ``on_too_long`` gets its number. A line
    left out stands as an empty line, so it keeps its place in the numbering (the
    non-blank lines of the files, counted on across them)."""
    buffer: list[bytes] = []
    size, first = 0, 1
    try:
        for number, line in enumerate(lines, start=1):
            if len(line) > MAX_LINE_BYTES:
                if on_too_long is not None:
                    on_too_long(number)
                line = b""
            if buffer and (len(buffer) >= chunk_lines or size + len(line) + 1 > max_bytes):
                yield first, b"\n".join(buffer)
                buffer, size, first = [], 0, number
            buffer.append(line)
            size += len(line) + 1
    except UnreadableFile:
        if buffer:  # every whole line read before the file broke is sent
            yield first, b"\n".join(buffer)
        raise
    if buffer:
        yield first, b"\n".join(buffer)


async def _post(
    session: aiohttp.ClientSession, url: str, body: bytes, content_type: str, tries: int = 30
) -> Any:
    """POST with retries on 429/503 and lost or cut-off answers (the same chunk is harmless
    twice): ``tries`` attempts, the waits doubling up to 10 s."""
    delay = 0.5
    for _ in range(tries):
        try:
            async with session.post(url, data=body, headers={"Content-Type": content_type}) as resp:
                text = await resp.read()
                if resp.status in (200, 202):  # 202: a recompute, started
                    return orjson.loads(text)
                if resp.status not in (429, 502, 503):
                    raise ImportFailed(f"{resp.status}: {text[:500].decode('utf-8', 'replace')}")
                delay = float(resp.headers.get("Retry-After", delay))
        except (TimeoutError, aiohttp.ClientError):  # a payload cut off mid-answer too
            pass
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)
    raise ImportFailed("the service kept answering 503 or hung up; try again later")


async def send_all(
    url: str,
    api_key: str,
    bodies: Iterator[tuple[int, bytes]],
    stats: ImportStats,
    on_chunk: Callable[[], None] | None = None,
    in_flight: int = 2,
) -> None:
    """Send every chunk, ``in_flight`` at a time, adding each answer to ``stats``."""
    headers = {"Authorization": f"Bearer {api_key}"}
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        await ensure_answers(url, session)
        endpoint = url.rstrip("/") + "/v1/import"

        async def send(first: int, body: bytes) -> None:
            stats.add(await _post(session, endpoint, body, NDJSON), first)
            if on_chunk is not None:
                on_chunk()

        # at most ``in_flight`` chunks at once; when one fails, no new chunk starts but those
        # in flight are let finish, so every chunk the service stored has its days in stats
        running: set[asyncio.Task[None]] = set()
        failure: BaseException | None = None
        try:
            for first, body in bodies:
                while len(running) >= in_flight and failure is None:
                    done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                    failure = next((t.exception() for t in done if t.exception() is not None), None)
                if failure is not None:
                    break
                running.add(asyncio.create_task(send(first, body)))
        except UnreadableFile as exc:  # the chunks read before it are still sent
            failure = exc
        except BaseException:  # interrupted: what is in flight cannot be waited for
            for t in running:
                t.cancel()
            raise
        results = await asyncio.gather(*running, return_exceptions=True)
        failure = failure or next((r for r in results if isinstance(r, BaseException)), None)
        if failure is not None:
            raise failure


RECOMPUTE_BATCH = 1000
"""Days (or studies) one recompute request may name (the service's ``MAX_RECOMPUTE``)."""


def _batched(name: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{name: items[i : i + RECOMPUTE_BATCH]} for i in range(0, len(items), RECOMPUTE_BATCH)]


async def recompute(
    url: str,
    api_key: str,
    spans: set[tuple[str, str, int]],
    on_step: Callable[[], None] | None = None,
    tries: int = 30,
    crawl_studies: Iterable[tuple[str, str]] = (),
    serp_studies: Iterable[str] = (),
) -> None:
    """Recompute each touched day, then each touched experiment's study-wide rows, then each
    autocomplete study (per engine) and personalization study, in requests of up to
    ``RECOMPUTE_BATCH``; ``on_step`` is called once per day, experiment or study recomputed.
    A recompute that fails (the store restarted, the service stopped) is sent again,
    ``tries`` times at most (recomputing is idempotent); each request is retried as
    ``_post`` retries."""
    headers = {"Authorization": f"Bearer {api_key}"}
    endpoint = url.rstrip("/") + "/v1/import/recompute"
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    days: list[dict[str, Any]] = [
        {"experiment_id": e, "engine": g, "day_start": d} for e, g, d in sorted(spans)
    ]
    studies: list[dict[str, Any]] = [
        {"experiment_id": e, "engine": g} for e, g in sorted({(e, g) for e, g, _ in spans})
    ]
    crawls = [{"engine": g, "study_id": s} for g, s in sorted(set(crawl_studies))]
    serps = [{"study_id": s} for s in sorted(set(serp_studies))]
    batches = _batched("spans", days) + _batched("installs", studies)
    batches += _batched("crawl_studies", crawls) + _batched("serp_studies", serps)
    async with aiohttp.ClientSession(headers=headers, timeout=timeout) as session:
        for work in batches:  # every day before any study
            await _recompute_until_done(session, endpoint, work, on_step, tries)


async def _recompute_until_done(
    session: aiohttp.ClientSession,
    endpoint: str,
    work: dict[str, Any],
    on_step: Callable[[], None] | None,
    tries: int,
) -> None:
    """Start one recompute and poll it until it is done; start it again when it failed or
    the process that ran it is gone (a poll another process cannot answer: 404)."""
    reported = 0
    state: Any = None

    def advance(done: int) -> None:
        nonlocal reported
        while reported < done:
            reported += 1
            if on_step is not None:
                on_step()

    for _ in range(tries):
        state = await _post(session, endpoint, orjson.dumps(work), "application/json", tries)
        wait = 0.2
        while state is not None and state["status"] == "running":
            advance(state["done"])
            await asyncio.sleep(wait)  # the next poll
            wait = min(wait * 1.5, 2.0)
            state = await _poll(session, f"{endpoint}/{state['id']}", tries)
        if state is not None and state["status"] == "done":
            advance(state["done"])
            return
        await asyncio.sleep(1.0)  # then send it again
    failure = f"{state['error']}: {state['message']}" if state else "its state was lost"
    raise ImportFailed(f"the recompute kept failing ({failure})")


async def _poll(session: aiohttp.ClientSession, url: str, tries: int) -> Any:
    """A recompute's state, or None when this service does not know it (404); retried on
    429/503 and lost answers as ``_post`` is."""
    delay = 0.5
    for _ in range(tries):
        try:
            async with session.get(url) as resp:
                text = await resp.read()
                if resp.status == 200:
                    return orjson.loads(text)
                if resp.status == 404:
                    return None
                if resp.status not in (429, 502, 503):
                    raise ImportFailed(f"{resp.status}: {text[:500].decode('utf-8', 'replace')}")
                delay = float(resp.headers.get("Retry-After", delay))
        except (TimeoutError, aiohttp.ClientError):
            pass
        await asyncio.sleep(delay)
        delay = min(delay * 2, 10.0)
    raise ImportFailed("the service kept answering 503 or hung up; try again later")
