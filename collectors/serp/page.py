"""What a SERP fetcher returns, and the interface both fetchers implement.

A fetcher never raises on a failed request: it returns a :class:`Fetched` with
``http_status`` 0 and the reason, so the crawler records it. ``fetched_at`` is when the
page finished loading: the body read (HTTP), or the load event after the page's scripts
ran and any consent wall was dealt with (browser). The crawler's load skew is taken
from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from collectors.common.http import RawResponse

FetcherKind = Literal["http", "browser"]


@dataclass(frozen=True)
class Fetched(RawResponse):
    """One page as a profile got it; ``consent`` is a ``consent.OUTCOMES`` value or ""."""

    fetcher: FetcherKind = "http"
    consent: str = ""


class Fetcher(Protocol):
    async def fetch(self, url: str, *, time_limit: float) -> RawResponse:
        """A result page of the engine (a browser deals with a consent wall on it)."""
        ...

    async def visit(self, url: str, *, time_limit: float) -> RawResponse:
        """Any page, in the profile's session (history: browsing)."""
        ...

    async def click(self, href: str, *, page_url: str, time_limit: float) -> RawResponse:
        """Follow the link ``href`` of the page just fetched from ``page_url`` (history: a
        click on a result), as the profile: a browser clicks the link itself."""
        ...

    async def aclose(self) -> None: ...


def accept_language(language: str) -> str:
    """``en-US`` -> ``en-US,en;q=0.9``, as a browser set to that language sends it."""
    primary = language.split("-")[0]
    return language if primary == language else f"{language},{primary};q=0.9"
