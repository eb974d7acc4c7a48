"""``POST /v1/participants/erase``: erase volunteers' installs (operator, admin scope).

Each install's rows go from every raw and derived table and what sums over it is recomputed
(``streams/erasure.py``); the answer is a receipt per install (its id's hash, when, rows
removed per table), also kept in ``erasure_log``. Erasing takes seconds per install (each
day it had events on is recomputed, then the worker is given time to settle), so a request
names at most ``MAX_INSTALLS``. An install erased twice is erased again (nothing left to
remove: a receipt of zeros).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.store import StoreError, StoreUnavailable
from ingest.app_state import ERASED, STORE
from ingest.board.compute import Panel, PanelFailed
from ingest.board.routes import COMPUTE
from ingest.erased_installs import ErasedInstalls
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_json, store_unavailable
from schemas.events import InstallId
from streams.erasure import Eraser

log = logging.getLogger(__name__)

MAX_INSTALLS = 20
ERASER = web.AppKey("eraser", Eraser)


class EraseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    install_ids: list[InstallId] = Field(min_length=1, max_length=MAX_INSTALLS)


async def post_erase(request: web.Request) -> web.Response:
    """Erase the named installs; 200 with a receipt each."""
    authorize(request, "admin")
    try:
        asked = EraseIn.model_validate(await read_json(request))
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise problem(400, "bad_request", f"{where}: {first['msg']}") from None
    app = request.app
    receipts = []
    try:
        for install_id in dict.fromkeys(asked.install_ids):
            receipt = await app[ERASER].erase(install_id, "operator")
            app[ERASED].note([receipt.install_hash])
            removed = sum(receipt.rows_removed.values())
            log.info("erased an install (%s): %d rows", receipt.erasure_id, removed)
            receipts.append(receipt.to_json())
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except (StoreError, PanelFailed) as exc:
        log.warning("erasure stopped: %s", str(exc)[:500])
        raise problem(
            503,
            "erasure_incomplete",
            "the store refused a step; send the same request again (erasing is idempotent)",
            {"Retry-After": "5"},
        ) from None
    return json_response({"receipts": receipts})


def add_routes(app: web.Application) -> None:
    app[ERASED] = ErasedInstalls(app[STORE])

    async def restore_looks(experiment_id: str, engine: str) -> None:
        look = (("experiment_id", experiment_id), ("engine", engine))
        await app[COMPUTE](Panel("restore_looks", look))

    app[ERASER] = Eraser(app[STORE], restore_looks)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        app[ERASED].start()
        yield
        await app[ERASED].close()

    app.cleanup_ctx.append(lifetime)
    app.router.add_post("/v1/participants/erase", post_erase)
