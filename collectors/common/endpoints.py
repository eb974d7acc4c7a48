"""Base-URL overrides (``--endpoint google=http://127.0.0.1:8765``), so tests talk to a fake.

An override without a path keeps the real path, so one fake server can stand in for
an engine's several endpoints.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from collectors.common.exceptions import CrawlConfigError


def rebase(base_url: str, override: str, engine: str) -> str:
    """``base_url`` at the override's origin (and path, if the override has one)."""
    new, old = urlsplit(override), urlsplit(base_url)
    if not new.scheme or not new.netloc:
        raise CrawlConfigError(f"endpoint for {engine} must be an absolute URL: {override!r}")
    path = new.path if new.path not in ("", "/") else old.path
    return urlunsplit((new.scheme, new.netloc, path, "", ""))


def parse_pairs(items: Sequence[str], what: str, sep: str) -> dict[str, str]:
    """``["google:firefox", "bing=..."]``-style CLI values into a dict (comma lists for ``format``)."""
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(",") if what == "format" else [item]:
            key, found, value = part.strip().partition(sep)
            if not found or not key or not value:
                raise CrawlConfigError(f"--{what} expects ENGINE{sep}VALUE, got {part!r}")
            out[key.strip()] = value.strip()
    return out
