"""The experiment registry endpoints: create, list, show, stop, and the public config."""

from __future__ import annotations

import asyncio

import orjson
from aiohttp import web
from pydantic import ValidationError

from core.store import Store, StoreUnavailable
from ingest.app_state import ARMS, STORE
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_json, store_unavailable
from schemas.experiments import ExperimentConfig, now_utc
from schemas.sql import quote

CREATING = web.AppKey("experiments_creating", asyncio.Lock)
"""Held while an experiment is checked for and written (``create``)."""


async def load(store: Store, experiment_id: str) -> ExperimentConfig | None:
    result = await store.query(f"SELECT config FROM experiments WHERE experiment_id = {quote(experiment_id)}")
    return ExperimentConfig.model_validate_json(result.rows[0][0]) if result.rows else None


async def save(store: Store, config: ExperimentConfig) -> None:
    row = {
        "experiment_id": config.experiment_id,
        "updated_at": now_utc().strftime("%Y-%m-%d %H:%M:%S.%f"),
        "status": config.status,
        "config": config.model_dump_json(),
    }
    await store.insert_json_rows("experiments_log", orjson.dumps(row))


async def existing(request: web.Request) -> ExperimentConfig:
    """The experiment the path names; 404 ``not_found`` without one."""
    try:
        config = await load(request.app[STORE], request.match_info["experiment_id"])
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    if config is None:
        raise problem(404, "not_found", "no such experiment")
    return config


def exists_message(old: ExperimentConfig) -> str:
    """The 409 of a create whose id is taken, saying what to do: a stopped experiment keeps
    its id (its events, reports and SRM alerts are filed under it) and there is no archive
    or rename, so a new run needs a new id. ("stop it or pick a new id" sent people to stop
    it, after which the same create was refused again.)"""
    new_id = f"{old.experiment_id}-2" if len(old.experiment_id) <= 62 else "another id"
    if old.status == "stopped":
        state = f"exists (stopped, end {old.end})"
        hint = ""
    else:
        state = f"exists and is {old.status}"
        hint = f"; `auditstream experiment stop {old.experiment_id}` ends it, its id stays taken"
    return (
        f"experiment {old.experiment_id} {state}: an id is never reused, since its data and "
        f"reports keep it; register under a new id (e.g. {new_id}){hint}"
    )


async def create(request: web.Request) -> web.Response:
    authorize(request, "admin")
    doc = await read_json(request)
    try:
        config = ExperimentConfig.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise problem(422, "invalid_experiment", f"{field}: {first['msg']}") from None
    # The check and the write as one step: six concurrent creates of one id all answered 201
    # and the last write won, so five clients held arms the registry did not. (Intake
    # processes sharing a port each have their own lock; the embedded default runs one.)
    async with request.app[CREATING]:
        if (old := await load(request.app[STORE], config.experiment_id)) is not None:
            raise problem(409, "exists", exists_message(old))
        await save(request.app[STORE], config)
    request.app[ARMS].note(config)  # its events are checked from now in this process
    return json_response(config.model_dump(mode="json"), status=201)


async def stop(request: web.Request) -> web.Response:
    authorize(request, "admin")
    config = await existing(request)
    if config.status == "stopped":
        return json_response(config.model_dump(mode="json"))
    # an experiment stopped before its start day ends on it: its window cannot end first
    end = config.end or max(now_utc().date(), config.start)
    stopped = ExperimentConfig.model_validate({**config.model_dump(), "status": "stopped", "end": end})
    await save(request.app[STORE], stopped)
    return json_response(stopped.model_dump(mode="json"))


async def show(request: web.Request) -> web.Response:
    authorize(request, "read")
    return json_response((await existing(request)).model_dump(mode="json"))


async def listing(request: web.Request) -> web.Response:
    authorize(request, "read")
    result = await request.app[STORE].query("SELECT config FROM experiments ORDER BY experiment_id")
    return json_response([orjson.loads(r[0]) for r in result.rows])


async def public_config(request: web.Request) -> web.Response:
    """What extensions fetch: arms with normalised weights and the salt."""
    authorize(request, "ingest")
    return json_response((await existing(request)).public())


def add_routes(app: web.Application) -> None:
    app[CREATING] = asyncio.Lock()
    app.router.add_post("/v1/experiments", create)
    app.router.add_get("/v1/experiments", listing)
    app.router.add_get("/v1/experiments/{experiment_id}", show)
    app.router.add_get("/v1/experiments/{experiment_id}/config", public_config)
    app.router.add_post("/v1/experiments/{experiment_id}/stop", stop)
