"""Errors as JSON problem answers: ``{"error": code, "message": text}``."""

from __future__ import annotations

import orjson
from aiohttp import web


def problem(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.HTTPException:
    """An aiohttp HTTP exception with a JSON body, to raise from a handler."""
    cls: type[web.HTTPException] = web.HTTPException
    for candidate in (
        web.HTTPBadRequest,
        web.HTTPUnauthorized,
        web.HTTPForbidden,
        web.HTTPRequestEntityTooLarge,
        web.HTTPUnsupportedMediaType,
        web.HTTPUnprocessableEntity,
        web.HTTPTooManyRequests,
        web.HTTPServiceUnavailable,
        web.HTTPNotFound,
        web.HTTPMethodNotAllowed,
        web.HTTPInternalServerError,
    ):
        if candidate.status_code == status:
            cls = candidate
            break
    kwargs = {"max_size": 0, "actual_size": 0} if cls is web.HTTPRequestEntityTooLarge else {}
    exc = cls(
        text=orjson.dumps({"error": code, "message": message}).decode(),
        content_type="application/json",
        headers=headers,
        **kwargs,  # type: ignore[arg-type]
    )
    return exc
