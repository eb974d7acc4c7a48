"""Errors of the autocomplete collector; each carries a message meant for the operator."""

from __future__ import annotations

from auditstream.errors import AuditstreamError


class CrawlError(AuditstreamError):
    """Root of the collector's errors."""


class CrawlConfigError(CrawlError):
    """A crawl was asked for with parameters that cannot work (unknown engine, bad roots)."""


class CrawlStateError(CrawlError):
    """The saved state of a crawl is missing or does not match what was asked."""


class ArchiveError(CrawlError):
    """An archived response is missing or does not match its address."""
