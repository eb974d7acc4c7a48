"""Errors of the collectors; each carries a message meant for the operator."""

from __future__ import annotations

from collections.abc import Iterator

from core.errors import AuditstreamError


class CrawlError(AuditstreamError):
    """Root of the collectors' errors."""


class CrawlConfigError(CrawlError):
    """A crawl was asked for with parameters that cannot work (unknown engine, bad roots, bad study)."""


class CrawlStateError(CrawlError):
    """The saved state of a crawl is missing or does not match what was asked."""


class ArchiveError(CrawlError):
    """An archived response is missing or does not match its address."""


def _leaves(group: BaseExceptionGroup) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def unwrap_group(group: BaseExceptionGroup) -> BaseException:
    """The operator's error (e.g. ingest unreachable) rather than a nest of task groups."""
    leaves = list(_leaves(group))
    return next((e for e in leaves if isinstance(e, CrawlError)), leaves[0] if len(leaves) == 1 else group)
