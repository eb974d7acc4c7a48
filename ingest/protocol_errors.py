"""Requests aiohttp refuses before any handler runs, answered as JSON that quotes nothing.

aiohttp's HTTP parser refuses a malformed request (an unknown method, a header over
8190 bytes, a NUL in a header, bad chunking, Content-Length with Transfer-Encoding)
with a ``text/plain`` 400 whose body quotes the offending bytes: an over-long
``Authorization`` header came back, key and all, to the sender and to anything that
logs answers. No middleware sees these requests and aiohttp offers no hook for the
page, so ``install`` replaces ``RequestHandler.handle_error`` for the process, with
the same contract (an answer that closes the connection; the log line goes through
``log_privacy``).
"""

from __future__ import annotations

from http import HTTPStatus

import orjson
from aiohttp import web, web_protocol
from aiohttp.web_request import BaseRequest


def _handle_error(
    self: web_protocol.RequestHandler,
    request: BaseRequest,
    status: int = 500,
    exc: BaseException | None = None,
    message: str | None = None,
) -> web.StreamResponse:
    kind = type(exc).__name__ if exc is not None else "request"
    if status >= 500:
        self.log_exception("Error handling request from %s", request.remote, exc_info=exc)
    else:  # a client's mistake: one line, without its content
        self.logger.debug("refused a malformed HTTP request (%s)", kind)
    if request.writer.output_size > 0:  # part of an answer went out: nothing more can
        raise ConnectionError("Response is sent already, cannot send another response with the error message")
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Error"
    text = (
        "unexpected error; nothing was accepted"
        if status >= 500
        else f"the request could not be read as HTTP/1.1 ({kind}); nothing was accepted"
    )
    body = {"error": phrase.lower().replace(" ", "_").replace("-", "_"), "message": text}
    response = web.Response(status=status, body=orjson.dumps(body), content_type="application/json")
    response.force_close()
    return response


def install() -> None:
    """Answer refused requests with ``_handle_error`` in this process (idempotent)."""
    web_protocol.RequestHandler.handle_error = _handle_error  # type: ignore[method-assign]
