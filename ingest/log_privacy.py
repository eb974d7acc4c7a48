"""Keep request contents out of the logs.

aiohttp's HTTP parser quotes the start of a line it refuses (an over-long header, a
malformed request line) in its exception, and aiohttp logs that exception: an
over-long ``Authorization`` header would put the first bytes of an API key into the
log. This filter replaces such records with a line that names the problem only.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

_AIOHTTP = ("aiohttp.server", "aiohttp.web_protocol", "aiohttp.access", "aiohttp.web")


class WithholdRequestContent(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(_AIOHTTP):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError) or "Bearer" in str(record.msg):
            kind = type(exc).__name__ if exc is not None else "request"
            record.msg = "refused a malformed HTTP request (%s); its content is not logged"
            record.args = (kind,)
            record.exc_info = None
            record.exc_text = None
        return True


def install() -> None:
    """Add the filter to every handler of the root logger (where aiohttp's records end up),
    and quiet sqlglot, whose warnings quote the start of an analyst's refused statement."""
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, WithholdRequestContent) for f in handler.filters):
            handler.addFilter(WithholdRequestContent())
