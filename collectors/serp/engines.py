"""Search URLs per engine: one table; ``--endpoint google=http://127.0.0.1:PORT`` swaps the origin.

Only the query goes in the URL (plus a study's ``url_params``): language and login
state travel as headers and cookies, as they do for a person using a browser.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote_plus, urlencode

from collectors.common.endpoints import rebase


@dataclass(frozen=True)
class SerpEngine:
    name: str
    search_url: str

    def url(self, query: str, params: Mapping[str, str] | None = None) -> str:
        return f"{self.search_url}?{urlencode([('q', query), *(params or {}).items()], quote_via=quote_plus)}"

    def with_endpoint(self, override: str | None) -> SerpEngine:
        """This engine at another origin (and path, if the override has one)."""
        if not override:
            return self
        return dataclasses.replace(self, search_url=rebase(self.search_url, override, self.name))


SERP_ENGINES: dict[str, SerpEngine] = {
    e.name: e
    for e in (
        SerpEngine("google", "https://www.google.com/search"),
        SerpEngine("bing", "https://www.bing.com/search"),
    )
}
