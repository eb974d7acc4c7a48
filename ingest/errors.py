"""Errors as JSON problem answers: ``{"error": code, "message": text}``."""

from __future__ import annotations

import orjson
from aiohttp import web

_BY_STATUS: dict[int, type[web.HTTPException]] = {
    obj.status_code: obj
    for obj in vars(web).values()
    if isinstance(obj, type) and issubclass(obj, web.HTTPException) and obj.status_code > 0
}


def problem(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.HTTPException:
    """An aiohttp HTTP exception with a JSON body, to raise from a handler."""
    cls = _BY_STATUS.get(status, web.HTTPInternalServerError)
    kwargs = {"max_size": 0, "actual_size": 0} if cls is web.HTTPRequestEntityTooLarge else {}
    exc = cls(
        text=orjson.dumps({"error": code, "message": message}).decode(),
        content_type="application/json",
        headers=headers,
        **kwargs,  # type: ignore[arg-type]
    )
    return exc
