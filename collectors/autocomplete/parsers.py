"""Suggestion-response parsers, one per wire format, dispatched by name from ``PARSERS``.

Contract, shared by every parser:

- ``parse_response(fmt, body, http_status=200, query=None)`` returns a
  :class:`ParsedResponse` ``(query, suggestions, status, detail)`` and never raises on
  any body: a crawl must record what it saw, not stop on it.
- ``status`` is ``ok`` (at least one suggestion), ``empty`` (empty body or empty
  list), ``blocked`` (HTTP 429, or a CAPTCHA / "unusual traffic" page where the
  format was expected) or ``error`` (anything else that cannot be read; ``detail``
  says why).
- ``rank`` is the 1-based position in the engine's raw list, so an entry that cannot
  be read leaves a gap instead of shifting the ranks below it. At most
  ``MAX_SUGGESTIONS`` are kept (the event schema's limit; engines send 8-10).
- A suggestion equal to the query (``query_key`` equality: case and whitespace
  folded) is kept and flagged ``self_loop``. The query compared against is the one
  submitted when the caller passes it, else the one the engine echoed.

Formats: ``psy-ab`` (Google ``sclient=psy-ab``), ``firefox`` (Google
``client=firefox``), ``as`` (Bing ``/AS/Suggestions`` HTML fragment), ``osjson``
(Bing ``osjson.aspx``).
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from selectolax.lexbor import LexborHTMLParser

log = logging.getLogger(__name__)

Status = Literal["ok", "empty", "blocked", "error"]
STATUSES: tuple[Status, ...] = ("ok", "empty", "blocked", "error")
MAX_SUGGESTIONS = 20
MAX_TEXT = 512
MAX_TYPE = 32
CRASH_PREFIX = "parser crashed: "
"""``detail`` prefix of a parser bug caught by the safety net (the fuzz test forbids it)."""

_BLOCK_MARKERS = (
    "unusual traffic",
    "/sorry/",
    "captcha",
    "are you a robot",
    "verify you are a human",
)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_XSSI = ")]}'"


@dataclass(frozen=True)
class ParsedSuggestion:
    """One suggestion; ``type`` is Google's ``code[:subtype,...]`` or empty."""

    rank: int
    text: str
    self_loop: bool = False
    type: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "text": self.text, "self_loop": self.self_loop, "type": self.type}


@dataclass(frozen=True)
class ParsedResponse:
    query: str | None
    suggestions: tuple[ParsedSuggestion, ...] = field(default=())
    status: Status = "ok"
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "query": self.query,
            "suggestions": [s.to_json() for s in self.suggestions],
            "status": self.status,
        }
        if self.detail:
            doc["detail"] = self.detail
        return doc


class _Unreadable(ValueError):
    """The body is not the expected format (becomes ``blocked`` or ``error``)."""


def query_key(text: str) -> str:
    """The identity of a query: engines fold case and whitespace, so the crawl does too."""
    return " ".join(text.split()).casefold()


def clean_text(text: str) -> str:
    """Whitespace-collapsed text, as the next query would be typed."""
    return " ".join(text.split())


def _strip_html(text: str) -> str:
    return html.unescape(_TAG.sub("", text))


def _decode(body: bytes, charset: str | None) -> str:
    if charset:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = body.decode("latin-1")
    return text.lstrip("\ufeff")


def _looks_blocked(text: str) -> bool:
    lowered = text[:200_000].lower()
    return any(marker in lowered for marker in _BLOCK_MARKERS)


def _json_list(text: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped.startswith(_XSSI):  # Google's anti-JSON-hijacking prefix
        stripped = stripped[len(_XSSI) :].lstrip()
    try:
        doc = orjson.loads(stripped)
    except orjson.JSONDecodeError as exc:
        raise _Unreadable(f"not JSON: {exc}") from None
    if not isinstance(doc, list) or len(doc) < 2 or not isinstance(doc[1], list):
        raise _Unreadable("expected [query, [suggestions, ...], ...]")
    return doc


def _type_label(code: Any, subtypes: Any) -> str:
    if not isinstance(code, int) or isinstance(code, bool):
        return ""
    label = str(code)
    if isinstance(subtypes, list):
        subs = [str(s) for s in subtypes if isinstance(s, int) and not isinstance(s, bool)]
        for i, _ in enumerate(subs):
            candidate = f"{code}:{','.join(subs[: len(subs) - i])}"
            if len(candidate) <= MAX_TYPE:
                return candidate
    return label[:MAX_TYPE]


RawEntry = tuple[int, str, str]
"""(raw 1-based position, text, type label) before self-loop flagging."""


def _psy_ab(text: str) -> tuple[str | None, list[RawEntry], int]:
    doc = _json_list(text)
    entries: list[RawEntry] = []
    for position, item in enumerate(doc[1][:MAX_SUGGESTIONS], start=1):
        if isinstance(item, list) and item and isinstance(item[0], str):
            raw, code = item[0], item[1] if len(item) > 1 else None
            subtypes = item[2] if len(item) > 2 else None
        elif isinstance(item, str):
            raw, code, subtypes = item, None, None
        else:
            continue
        entries.append((position, clean_text(_strip_html(raw)), _type_label(code, subtypes)))
    return (doc[0] if isinstance(doc[0], str) else None), entries, len(doc[1])


def _plain_json(text: str) -> tuple[str | None, list[RawEntry], int]:
    """``firefox`` and ``osjson`` share OpenSearch's ``[query, [suggestion, ...]]``."""
    doc = _json_list(text)
    entries = [
        (position, clean_text(item), "")
        for position, item in enumerate(doc[1][:MAX_SUGGESTIONS], start=1)
        if isinstance(item, str)
    ]
    return (doc[0] if isinstance(doc[0], str) else None), entries, len(doc[1])


def _bing_as(text: str) -> tuple[str | None, list[RawEntry], int]:
    tree = LexborHTMLParser(text)
    nodes = [
        node
        for node in tree.css("li.sa_tm, div.sa_tm")
        if not any("sa_tm" in (p.attributes.get("class") or "").split() for p in _ancestors(node))
    ]
    if not nodes:
        if _looks_blocked(text):
            raise _Unreadable("challenge page")
        if (tree.body and tree.body.text(deep=True).strip()) or (tree.head and tree.head.css_first("title")):
            raise _Unreadable("no .sa_tm elements in a non-empty page")
        return None, [], 0
    entries = [
        (position, clean_text(node.text(deep=True, separator="")), "")
        for position, node in enumerate(nodes[:MAX_SUGGESTIONS], start=1)
    ]
    return None, entries, len(nodes)


def _ancestors(node: Any) -> list[Any]:
    out = []
    parent = node.parent
    while parent is not None:
        out.append(parent)
        parent = parent.parent
    return out


Parser = Callable[[str], tuple[str | None, list[RawEntry], int]]
PARSERS: dict[str, Parser] = {
    "psy-ab": _psy_ab,
    "firefox": _plain_json,
    "as": _bing_as,
    "osjson": _plain_json,
}
"""Format name -> parser of the decoded body: (echoed query, entries, raw list length)."""


def parse_response(
    fmt: str,
    body: bytes,
    http_status: int = 200,
    *,
    query: str | None = None,
    charset: str | None = None,
) -> ParsedResponse:
    """Parse one response body; see the module docstring for the contract.

    Raises only ``ValueError`` for an unknown ``fmt`` (a caller bug, not a body problem).
    """
    parser = PARSERS.get(fmt)
    if parser is None:
        raise ValueError(f"unknown suggestion format {fmt!r}; known: {', '.join(PARSERS)}")
    try:
        return _parse(parser, body, http_status, query, charset)
    except Exception as exc:  # the never-raise contract; the fuzz test keeps this path unused
        log.error("%s parser crashed on a %d-byte body", fmt, len(body), exc_info=True)
        return ParsedResponse(query, (), "error", f"{CRASH_PREFIX}{type(exc).__name__}: {exc}")


def _parse(
    parser: Parser, body: bytes, http_status: int, query: str | None, charset: str | None
) -> ParsedResponse:
    text = _decode(body, charset)
    if http_status == 429:
        return ParsedResponse(query, (), "blocked", "http 429")
    if not 200 <= http_status < 300:
        if _looks_blocked(text):
            return ParsedResponse(query, (), "blocked", f"http {http_status} challenge page")
        return ParsedResponse(query, (), "error", f"http {http_status}")
    if not text.strip():
        return ParsedResponse(query, (), "empty", "empty body")
    try:
        echoed, entries, n_raw = parser(text)
    except _Unreadable as exc:
        if _looks_blocked(text):
            return ParsedResponse(query, (), "blocked", "challenge page")
        return ParsedResponse(query, (), "error", str(exc)[:200])
    asked = query if query is not None else echoed
    if n_raw == 0:
        return ParsedResponse(asked, (), "empty", "no suggestions")
    own = query_key(asked) if asked is not None else None
    suggestions = tuple(
        ParsedSuggestion(position, text, own is not None and query_key(text) == own, label)
        for position, text, label in entries
        if 0 < len(text) <= MAX_TEXT
    )
    if not suggestions:
        return ParsedResponse(asked, (), "error", f"none of {n_raw} entries is a usable suggestion")
    return ParsedResponse(asked, suggestions, "ok")
