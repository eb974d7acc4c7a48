"""``GET /v1/keys/self``: what the caller's own key may do (its id, name and scopes).

Tools check a key before they ship it: ``auditstream extension build`` refuses a key with any
scope beyond ``ingest``, since anyone who installs the extension can read the key.
"""

from __future__ import annotations

from aiohttp import web

from ingest.api_keys import SCOPES
from ingest.handlers import authorize, json_response


async def own_key(request: web.Request) -> web.Response:
    key = authorize(request, SCOPES)
    return json_response({"id": key.id, "name": key.name, "scopes": list(key.scopes)})


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/keys/self", own_key)
