"""A simulated study's planted values (issue 37): ``PUT`` and ``GET
/v1/experiments/{experiment_id}/planted``, over table ``planted_values`` (migration 0038).

``auditstream simulate extension`` knows the exact expectation of every estimate it plants and
stores it here, so the report can print each planted value beside its estimate. A ``PUT``
replaces the experiment's rows: the old ones are deleted first (a key of an earlier simulation
that the new one lacks must not survive), then the new ones are written with a fresh
``recorded_at``. A real study has no rows.
"""

from __future__ import annotations

import asyncio
import math
from typing import Annotated, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from analytics.stats.arrangement_subsets import subset_names
from core.store import StoreUnavailable
from ingest.app_state import STORE
from ingest.errors import problem
from ingest.experiments import existing
from ingest.handlers import authorize, json_response, read_model, store_unavailable
from schemas.events import Engine, Ident
from schemas.experiments import now_utc
from schemas.sql import quote

TABLE = "planted_values"
MAX_VALUES = 20_000
"""Rows one PUT may carry (the seven-arm study plants about 400)."""
WRITING = web.AppKey("planted_writing", asyncio.Lock)
"""Held while an experiment's rows are deleted and written (one PUT at a time per process)."""


class PlantedValue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: Engine
    subset: Annotated[str, Field(max_length=64, json_schema_extra={"enum": subset_names()})]
    baseline: Ident
    arm: Ident
    quantity: Literal["ctr", "delta", "beta"]
    rank: Annotated[StrictInt, Field(ge=1, le=10)]
    value: Annotated[float, Field(allow_inf_nan=False)]


class PlantedIn(BaseModel):
    """What a simulator planted: the exact expectation of each estimate."""

    model_config = ConfigDict(extra="forbid")

    seed: Annotated[StrictInt, Field(ge=0, le=2**64 - 1)]
    model: Annotated[str, Field(min_length=1, max_length=200, description="The click model and its version.")]
    values: Annotated[list[PlantedValue], Field(max_length=MAX_VALUES)]

    @model_validator(mode="after")
    def _once_each(self) -> PlantedIn:
        keys = {(v.engine, v.subset, v.baseline, v.arm, v.quantity, v.rank) for v in self.values}
        if len(keys) != len(self.values):
            raise ValueError("each (engine, subset, baseline, arm, quantity, rank) at most once")
        if unknown := sorted({v.subset for v in self.values} - set(subset_names())):
            raise ValueError(f"unknown subsets: {unknown}")
        return self


async def put_planted(request: web.Request) -> web.Response:
    authorize(request, "admin")
    config = await existing(request)
    body = await read_model(request, PlantedIn)
    for v in body.values:
        if v.engine not in config.engines:
            raise problem(400, "bad_request", f"values: engine {v.engine!r} is not one of the experiment's")
        arms = config.arms_on(v.engine)
        for name in (v.arm, v.baseline):
            if name not in arms:
                raise problem(400, "bad_request", f"values: {v.engine} runs no arm {name!r}")
    store = request.app[STORE]
    recorded_at = now_utc().strftime("%Y-%m-%d %H:%M:%S.%f")
    experiment = quote(config.experiment_id)
    common = {"experiment_id": config.experiment_id, "seed": body.seed, "model": body.model}
    lines = b"\n".join(
        orjson.dumps({**v.model_dump(), **common, "recorded_at": recorded_at}) for v in body.values
    )
    try:
        async with request.app[WRITING]:
            count = (
                await store.query(f"SELECT count() FROM {TABLE} WHERE experiment_id = {experiment}")
            ).rows
            if int(count[0][0]):
                await store.execute(f"DELETE FROM {TABLE} WHERE experiment_id = {experiment}")
            if lines:
                await store.insert_json_rows(TABLE, lines)
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    return json_response(await _read(request, config.experiment_id))


async def get_planted(request: web.Request) -> web.Response:
    authorize(request, "read")
    config = await existing(request)
    try:
        return json_response(await _read(request, config.experiment_id))
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None


async def _read(request: web.Request, experiment_id: str) -> dict[str, object]:
    result = await request.app[STORE].query(
        "SELECT engine, subset, baseline, arm, quantity, toUInt8(rank), value, seed, model, "
        "toString(recorded_at) "
        f"FROM {TABLE} FINAL WHERE experiment_id = {quote(experiment_id)} "
        "ORDER BY engine, subset, baseline, arm, quantity, rank"
    )
    names = ("engine", "subset", "baseline", "arm", "quantity", "rank", "value")
    values = [
        dict(zip(names, (*row[:5], int(row[5]), float(row[6])), strict=True))
        for row in result.rows
        if math.isfinite(float(row[6]))
    ]
    first = result.rows[0] if result.rows else None
    return {
        "experiment_id": experiment_id,
        "seed": int(first[7]) if first else None,
        "model": str(first[8]) if first else None,
        "recorded_at": str(first[9]) if first else None,
        "values": values,
    }


def add_routes(app: web.Application) -> None:
    app[WRITING] = asyncio.Lock()
    app.router.add_put("/v1/experiments/{experiment_id}/planted", put_planted)
    app.router.add_get("/v1/experiments/{experiment_id}/planted", get_planted)
