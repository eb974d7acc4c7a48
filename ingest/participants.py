"""Erasing volunteers' installs: ``POST /v1/participants/erase`` (the operator, admin scope)
and ``POST /v1/participants/erase-own`` (the volunteer's extension, with the public ingest
key and the install's own secret).

Each install's rows go from every raw and derived table and what sums over it is recomputed
(``streams/erasure.py``); the answer is a receipt per install (its id's hash, when, rows
removed per table), also kept in ``erasure_log``. Erasing takes seconds per install (each
day it had events on is recomputed, then the worker is given time to settle), so a request
names at most ``MAX_INSTALLS``. An install erased twice is erased again (nothing left to
remove: a receipt of zeros).

A volunteer proves the install is theirs with the secret their extension made at
installation: its SHA-256 came with the onboarding answers (``erasure_key_sha256``), so
nobody holding only the public key and an install id can erase someone else's data. Once
erased, the answers are gone with the rest, but the erasure's row of ``erasure_log`` keeps
their key hashes: the same request again (an answer lost on the way), or one after the
operator erased the install, is answered with that receipt.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from core.store import StoreError, StoreUnavailable
from ingest.app_state import ERASED, STORE
from ingest.board.compute import PanelFailed
from ingest.board.routes import RESTORE_LOOKS
from ingest.erased_installs import ErasedInstalls
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_model, store_unavailable
from schemas.erased_installs import TABLE as ERASED_TABLE
from schemas.erased_installs import install_hash
from schemas.events import InstallId
from schemas.sql import quote
from streams.erasure import LOG_TABLE, Eraser

log = logging.getLogger(__name__)

MAX_INSTALLS = 20
ERASER = web.AppKey("eraser", Eraser)


INCOMPLETE = "the store refused a step; send the same request again (erasing is idempotent)"


class EraseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    install_ids: list[InstallId] = Field(min_length=1, max_length=MAX_INSTALLS)


async def post_erase(request: web.Request) -> web.Response:
    """Erase the named installs; 200 with a receipt each."""
    authorize(request, "admin")
    asked = await read_model(request, EraseIn)
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
        raise problem(503, "erasure_incomplete", INCOMPLETE, {"Retry-After": "5"}) from None
    return json_response({"receipts": receipts})


class EraseOwnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    install_id: InstallId
    erasure_key: str = Field(
        pattern=r"^[0-9a-f]{64}$", description="The secret the extension made (hex), never its hash."
    )


NOT_STORED_YET = (
    "this install's onboarding answers, which hold its erasure key, are not stored yet; "
    "send the same request again after Retry-After seconds"
)
NOT_OWNER = (
    "this install's data can be erased only with the key its extension made at installation; "
    "ask the study's operator"
)


async def post_erase_own(request: web.Request) -> web.Response:
    """A volunteer's extension erases its own install: 200 with the receipt."""
    authorize(request, "ingest")
    asked = await read_model(request, EraseOwnIn)
    app, store = request.app, request.app[STORE]
    given = hashlib.sha256(asked.erasure_key.encode()).hexdigest()
    try:
        stored = await store.query(
            "SELECT DISTINCT erasure_key_sha256 FROM raw_install_profiles "
            f"WHERE install_id = {quote(asked.install_id)} AND erasure_key_sha256 != ''",
            read_only=True,
        )
        if not any(hmac.compare_digest(given, str(row[0])) for row in stored.rows):
            earlier = await _earlier_receipt(request, asked.install_id, given)
            if earlier is not None:
                return json_response({"receipts": [earlier]})
            if not stored.rows and await _not_stored_yet(request, asked.install_id):
                raise problem(409, "not_stored_yet", NOT_STORED_YET, {"Retry-After": "5"})
            raise problem(403, "not_owner", NOT_OWNER)
        receipt = await app[ERASER].erase(asked.install_id, "volunteer")
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except (StoreError, PanelFailed) as exc:
        log.warning("erasure stopped: %s", str(exc)[:500])
        raise problem(503, "erasure_incomplete", INCOMPLETE, {"Retry-After": "5"}) from None
    app[ERASED].note([receipt.install_hash])
    log.info("a volunteer erased their install (%s)", receipt.erasure_id)
    return json_response({"receipts": [receipt.to_json()]})


async def _not_stored_yet(request: web.Request, install_id: str) -> bool:
    """Whether the install has no onboarding answers stored and was never erased (its answers,
    with their key, may still be on their way)."""
    found = await request.app[STORE].query(
        f"SELECT (SELECT count() FROM raw_install_profiles WHERE install_id = {quote(install_id)}) "
        f"+ (SELECT count() FROM {ERASED_TABLE} WHERE install_hash = {quote(install_hash(install_id))})",
        read_only=True,
    )
    return int(found.rows[0][0]) == 0


async def _earlier_receipt(request: web.Request, install_id: str, key_hash: str) -> dict[str, Any] | None:
    """The newest receipt of the install's erasure, if its erasure key hashes hold ``key_hash``
    (None: never erased, or not with this key)."""
    hashed = install_hash(install_id)
    result = await request.app[STORE].query(
        "SELECT toString(erasure_id), install_hash, requested_by, toString(started_at), "
        f"toString(finished_at), rows_removed FROM {LOG_TABLE} WHERE install_hash = {quote(hashed)} "
        f"AND has(erasure_keys_sha256, {quote(key_hash)}) ORDER BY finished_at DESC LIMIT 1",
        read_only=True,
    )
    if not result.rows:
        return None
    erasure_id, hashed, by, started, finished, removed = result.rows[0]
    rows = {str(k): int(v) for k, v in dict(removed).items()}
    return {
        "erasure_id": erasure_id,
        "install_hash": hashed,
        "requested_by": by,
        "started_at": str(started).replace(" ", "T") + "Z",
        "finished_at": str(finished).replace(" ", "T") + "Z",
        "rows_removed": dict(sorted(rows.items())),
        "total_rows_removed": sum(rows.values()),
    }


def add_routes(app: web.Application) -> None:
    app[ERASED] = ErasedInstalls(app[STORE])

    app[ERASER] = Eraser(app[STORE], app[RESTORE_LOOKS])

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        app[ERASED].start()
        yield
        await app[ERASED].close()

    app.cleanup_ctx.append(lifetime)
    app.router.add_post("/v1/participants/erase", post_erase)
    app.router.add_post("/v1/participants/erase-own", post_erase_own)
