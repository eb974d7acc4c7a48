"""A scripted suggestion server: the real formats on the real paths, for crawler tests.

It runs in its own thread and event loop, so a test can drive the crawler with
``asyncio.run``, the CLI runner or a subprocess while the server keeps answering.
Scripts: the suggestion graph (changeable between crawls), per-query answers to
serve first (429, 503, a CAPTCHA page, a slow answer), CAPTCHA pages for the first
N requests, and a gate that holds requests from the Nth on (to kill a crawl mid-way).
Every request is logged with its arrival time for the politeness assertions. It
also accepts ``POST /v1/events`` like ingest (Bearer key, JSON array, 202), so
posting can be tested without the pipeline.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from tests.fakes.threaded import ThreadedFake

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "autocomplete"
CAPTCHA = "captcha"
SLOW = "slow"


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it (``at`` is ``time.monotonic()`` on arrival)."""

    at: float
    fmt: str
    query: str
    answer: str


def _key(query: str) -> str:
    return " ".join(query.split()).casefold()


def _bold(query: str, suggestion: str) -> str:
    """Google's markup: the part the user did not type is bold, entities escaped."""
    esc = lambda s: html.escape(s, quote=True).replace("&#x27;", "&#39;")  # noqa: E731
    if suggestion.startswith(query):
        rest = suggestion[len(query) :]
        return esc(query) + (f"<b>{esc(rest)}</b>" if rest else "")
    return f"<b>{esc(suggestion)}</b>"


def render(fmt: str, query: str, suggestions: Sequence[str]) -> tuple[bytes, str]:
    """Body and content type of a normal answer in ``fmt``."""
    if fmt == "psy-ab":
        doc = [
            query,
            [[_bold(query, s), 0, [512, 433]] for s in suggestions],
            {"q": "fake", "t": {"bpc": False, "tlw": False}},
        ]
        return json.dumps(doc).encode(), "text/javascript"
    if fmt in ("firefox", "osjson"):
        return json.dumps([query, list(suggestions)]).encode(), "application/json"
    if not suggestions:
        return b"", "text/html"
    items = "".join(
        f'<li class="sa_sg" query="{html.escape(s)}" role="option"><div class="sa_tm">'
        f'<span class="sa_tm_text">{html.escape(s)}</span></div></li>'
        for s in suggestions
    )
    return f'<ul class="sa_drw" role="listbox" id="sa_ul">{items}</ul>'.encode(), "text/html"


class FakeSuggestServer(ThreadedFake):
    """``with FakeSuggestServer(graph) as server: ... server.base_url ...``."""

    thread_name = "fake-suggest"

    def __init__(self, graph: Mapping[str, Sequence[str]] | None = None) -> None:
        super().__init__()
        self._graph: dict[str, list[str]] = {}
        self.set_graph(graph or {})
        self._scripts: dict[str, deque[int | str]] = {}
        self._hits: list[Hit] = []
        self.captcha_first = 0
        """Answer the first N requests with a CAPTCHA page (status 200)."""
        self.hold_from: int | None = None
        """Requests numbered from this one on (1-based) wait until ``release()``."""
        self.slow_s = 2.0
        self._release: asyncio.Event | None = None

    # --- scripting (any thread) -------------------------------------------------------

    def set_graph(self, graph: Mapping[str, Sequence[str]]) -> None:
        with self._lock:
            self._graph = {_key(q): list(s) for q, s in graph.items()}

    def script(self, query: str, *answers: int | str) -> None:
        """Serve these first for ``query``: HTTP statuses, ``CAPTCHA`` or ``SLOW``."""
        with self._lock:
            self._scripts.setdefault(_key(query), deque()).extend(answers)

    def release(self) -> None:
        if self._loop is not None and self._release is not None:
            self._loop.call_soon_threadsafe(self._release.set)

    @property
    def hits(self) -> list[Hit]:
        with self._lock:
            return list(self._hits)

    def queries(self) -> list[str]:
        return [h.query for h in self.hits]

    # --- serving ----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        if request.path == "/complete/search" and q.get("client") == "firefox":
            fmt, query = "firefox", q.get("q", "")
        elif request.path == "/complete/search" and q.get("sclient") == "psy-ab":
            fmt, query = "psy-ab", q.get("q", "")
        elif request.path == "/AS/Suggestions" and "qry" in q and "cvid" in q and "mkt" in q:
            fmt, query = "as", q["qry"]
        elif request.path == "/osjson.aspx":
            fmt, query = "osjson", q.get("query", "")
        else:
            raise web.HTTPNotFound()
        with self._lock:
            n = len(self._hits) + 1
            script = self._scripts.get(_key(query))
            answer: int | str = script.popleft() if script else 200
            if n <= self.captcha_first:
                answer = CAPTCHA
            self._hits.append(Hit(time.monotonic(), fmt, query, str(answer)))
            suggestions = list(self._graph.get(_key(query), []))
            hold = self.hold_from is not None and n >= self.hold_from
        if hold:
            assert self._release is not None
            await self._release.wait()
        if answer == SLOW:
            await asyncio.sleep(self.slow_s)
            answer = 200
        if answer == CAPTCHA:
            page = (FIXTURES / "google_sorry.html").read_bytes()
            return web.Response(body=page, content_type="text/html")
        if answer != 200:
            assert isinstance(answer, int)
            return web.Response(status=answer, text="busy", headers={"Retry-After": "0"})
        body, ctype = render(fmt, query, suggestions)
        return web.Response(body=body, content_type=ctype, charset="utf-8")

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/{tail:.*}", self._handle)

    async def on_start(self) -> None:
        self._release = asyncio.Event()

    async def on_stop(self) -> None:
        if self._release is not None:
            self._release.set()
