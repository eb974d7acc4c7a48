"""Where crawl events go: ingest over HTTP, or a JSON Lines file when offline.

``emit`` returns only once the events are durable (a line written and flushed, or
ingest's 202), and the crawler journals a node only after that. So a crash can
re-send a node, never lose one; the re-sent copy has the same event id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from collectors.common.exceptions import CrawlError
from collectors.simulate.poster import post_batches

log = logging.getLogger(__name__)


class EventSink(Protocol):
    async def emit(self, events: Sequence[dict[str, Any]]) -> None: ...

    async def aclose(self) -> None: ...


class JsonlSink:
    """Appends events to a file (``-`` = stdout), one JSON object per line."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._fh: IO[bytes] | None = None
        self.count = 0

    def _open(self) -> IO[bytes]:
        if self._fh is None:
            if self.path == "-":
                import sys

                self._fh = sys.stdout.buffer
            else:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                self._fh = open(self.path, "ab")  # noqa: SIM115  # closed in aclose()
        return self._fh

    def write(self, events: Sequence[dict[str, Any]]) -> None:
        fh = self._open()
        fh.write(b"".join(orjson.dumps(e) + b"\n" for e in events))
        fh.flush()
        self.count += len(events)

    async def emit(self, events: Sequence[dict[str, Any]]) -> None:
        await asyncio.to_thread(self.write, events)

    async def aclose(self) -> None:
        if self._fh is not None and self.path != "-":
            self._fh.close()
        self._fh = None


class IngestSink:
    """Posts events to ``POST /v1/events`` with ``collectors.simulate.poster`` (its retries)."""

    def __init__(self, url: str, api_key: str, *, max_retry_s: float = 120.0) -> None:
        self.url = url
        self.api_key = api_key
        self.max_retry_s = max_retry_s
        self.accepted = 0
        self.rejected = 0

    async def emit(self, events: Sequence[dict[str, Any]]) -> None:
        if not events:
            return
        try:
            stats = await post_batches(
                self.url, self.api_key, [list(events)], concurrency=1, max_retry_s=self.max_retry_s
            )
        except RuntimeError as exc:  # post_batches' "ingest answered <status>"
            raise CrawlError(f"could not post crawl events: {exc}") from exc
        self.accepted += stats.accepted
        self.rejected += stats.rejected
        if stats.rejected:
            log.error("ingest rejected %d of %d crawl events", stats.rejected, len(events))

    async def aclose(self) -> None:
        return None
