"""Keep request contents out of the logs.

aiohttp's HTTP parser quotes the start of a line it refuses (an over-long header, a
malformed request line) in its exception, and aiohttp logs that exception: an
over-long ``Authorization`` header would put the first bytes of an API key into the
log. This filter replaces such records with a line that names the problem only.

A body that is not what its headers say (``Content-Encoding: gzip`` on plain bytes) is
answered with a JSON 4xx; aiohttp then drains the rest of it and logs the same decoding
error again as an "Unhandled exception" with a 30-line traceback, which anyone could
repeat without a key to fill the disk. Such records become the same one line, at most
one a minute, with the count of those withheld in between.
"""

from __future__ import annotations

import logging
import time

from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError

_AIOHTTP = ("aiohttp.server", "aiohttp.web_protocol", "aiohttp.access", "aiohttp.web")


class WithholdRequestContent(logging.Filter):
    EVERY_S = 60.0
    """At most one line per this many seconds for malformed requests."""

    def __init__(self) -> None:
        super().__init__()
        self._last_line = -float("inf")
        self._withheld = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(_AIOHTTP):
            return True
        if getattr(record, "withheld_content", False):
            return True  # rewritten by the filter of another handler already
        exc = record.exc_info[1] if record.exc_info else None
        if not (_malformed_request(exc) or "Bearer" in str(record.msg)):
            return True
        now = time.monotonic()
        if now - self._last_line < self.EVERY_S:
            self._withheld += 1
            return False
        kind = type(exc).__name__ if exc is not None else "request"
        record.msg = "refused a malformed HTTP request (%s); its content is not logged%s"
        record.args = (kind, f" ({self._withheld} more since the last such line)" if self._withheld else "")
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = None
        record.exc_text = None
        record.withheld_content = True
        self._last_line, self._withheld = now, 0
        return True


def _malformed_request(exc: BaseException | None) -> bool:
    """The request itself was malformed: aiohttp's parser refused it, or its body could not
    be read as its headers said (directly or as the cause of what was raised)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, HttpProcessingError | RequestPayloadError):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def install() -> None:
    """Add the filter to every handler of the root logger (where aiohttp's records end up),
    and quiet sqlglot, whose warnings quote the start of an analyst's refused statement."""
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, WithholdRequestContent) for f in handler.filters):
            handler.addFilter(WithholdRequestContent())
