"""Engine adapters: (engine, format, URL builder), one table for every known endpoint.

The table is the single source of truth: ``DEFAULT_FORMAT`` and the CLI choices are
derived from it, and a test ties every format to a parser in ``PARSERS``. Base URLs
can be replaced (``--endpoint google=http://127.0.0.1:8765``) so tests talk to a
local fake; an override without a path keeps the real path.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from collectors.common.endpoints import rebase
from collectors.common.exceptions import CrawlConfigError

Params = Callable[["EngineAdapter", str], list[tuple[str, str]]]


@dataclass(frozen=True)
class EngineAdapter:
    """How to ask one engine for suggestions in one format."""

    engine: str
    format: str
    base_url: str
    params: Params = dataclasses.field(repr=False, compare=False)
    lang: str = "en"
    market: str = "en-US"
    cvid: str = ""
    """Bing's conversation id; one per crawl, as a browser keeps one per search box session."""

    def url(self, query: str) -> str:
        return f"{self.base_url}?{urlencode(self.params(self, query), quote_via=quote)}"

    def with_base(self, override: str) -> EngineAdapter:
        """This adapter at another origin (and path, if the override has one)."""
        return dataclasses.replace(self, base_url=rebase(self.base_url, override, self.engine))


ADAPTERS: tuple[EngineAdapter, ...] = (
    EngineAdapter(
        "google",
        "psy-ab",
        "https://www.google.com/complete/search",
        lambda a, q: [("sclient", "psy-ab"), ("hl", a.lang), ("q", q)],
    ),
    EngineAdapter(
        "google",
        "firefox",
        "https://suggestqueries.google.com/complete/search",
        lambda a, q: [("client", "firefox"), ("q", q)],
    ),
    EngineAdapter(
        "bing",
        "as",
        "https://www.bing.com/AS/Suggestions",
        lambda a, q: [("mkt", a.market), ("qry", q), ("cvid", a.cvid)],
    ),
    EngineAdapter(
        "bing",
        "osjson",
        "https://api.bing.com/osjson.aspx",
        lambda a, q: [("query", q)],
    ),
)
"""Every known (engine, format); the first row of an engine is its default."""

BY_KEY: dict[tuple[str, str], EngineAdapter] = {(a.engine, a.format): a for a in ADAPTERS}
ENGINES: tuple[str, ...] = tuple(dict.fromkeys(a.engine for a in ADAPTERS))
DEFAULT_FORMAT: dict[str, str] = {e: next(a.format for a in ADAPTERS if a.engine == e) for e in ENGINES}
FORMATS: dict[str, tuple[str, ...]] = {e: tuple(a.format for a in ADAPTERS if a.engine == e) for e in ENGINES}


def resolve(
    engines: Sequence[str],
    formats: Mapping[str, str] | None = None,
    endpoints: Mapping[str, str] | None = None,
    *,
    lang: str = "en",
    market: str = "en-US",
    crawl_id: str = "",
) -> list[EngineAdapter]:
    """The adapters for a crawl, with chosen formats, endpoint overrides and locale.

    ``endpoints`` keys are an engine (``google``) or an engine and format
    (``google:firefox``); the latter wins.
    """
    formats, endpoints = dict(formats or {}), dict(endpoints or {})
    for name in [*formats, *(k.split(":")[0] for k in endpoints)]:
        if name not in ENGINES:
            raise CrawlConfigError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    out = []
    for engine in dict.fromkeys(engines):
        if engine not in ENGINES:
            raise CrawlConfigError(f"unknown engine {engine!r}; known: {', '.join(ENGINES)}")
        fmt = formats.get(engine, DEFAULT_FORMAT[engine])
        if (engine, fmt) not in BY_KEY:
            raise CrawlConfigError(f"{engine} has no format {fmt!r}; known: {', '.join(FORMATS[engine])}")
        cvid = uuid.uuid5(uuid.NAMESPACE_URL, f"auditstream-cvid:{crawl_id}").hex.upper()
        adapter = dataclasses.replace(BY_KEY[engine, fmt], lang=lang, market=market, cvid=cvid)
        override = endpoints.get(f"{engine}:{fmt}") or endpoints.get(engine)
        out.append(adapter.with_base(override) if override else adapter)
    return out
