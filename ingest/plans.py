"""An experiment's pre-registered analysis plan (issue 38): ``PUT``, ``GET``
``/v1/experiments/{experiment_id}/plan``, ``POST .../plan/amendments``, ``POST
.../plan/freeze-quintiles`` and ``GET .../plan/deviations``, over tables ``analysis_plans`` and
``plan_deviations`` (migration 0041).

A plan is registered once (version 1); a second registration is a 409 that says to amend.
Each amendment is a new version with its reason, its canonical JSON and hash, who made it
(the API key's name, never the key) and when. Rows are only added, so the history is the
table. The report (``ingest/reports.py``) follows the latest version and logs departures.

A version whose ``n_candidates`` quintile boundaries differ from the version before it also
adds a row to ``arrangement_quintile_bounds`` (migration 0042): the worker then keys the
experiment's per-install rows by those quintiles and keeps them as named subsets
(``studies/arrangement/quintiles.py``). ``freeze-quintiles`` is the amendment that takes them
from a pilot period's data (kind ``freeze_quintiles``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analytics.stats.arrangement_subsets import subset_names
from core.store import Store, StoreUnavailable
from ingest.app_state import STORE
from ingest.errors import problem
from ingest.experiments import existing
from ingest.handlers import authorize, json_response, read_model, store_unavailable
from schemas.analysis_plan import AnalysisPlan
from schemas.experiments import ExperimentConfig, now_utc
from schemas.sql import quote
from studies.arrangement import quintiles
from studies.arrangement.read.quintile_pilot import PilotCuts, pilot_quintiles

PLANS = "analysis_plans"
DEVIATIONS = "plan_deviations"
WRITING = web.AppKey("plan_writing", asyncio.Lock)
"""Held while a version is numbered and written (one registration or amendment at a time)."""


class PlanAmendment(BaseModel):
    """A new version of the plan and why."""

    model_config = ConfigDict(extra="forbid")

    reason: Annotated[str, Field(min_length=1, max_length=2000)]
    plan: AnalysisPlan


class FreezeQuintiles(BaseModel):
    """Freeze the plan's quintile boundaries from a pilot period's data (whole UTC days,
    both ends included; ``since`` absent: from the first day)."""

    model_config = ConfigDict(extra="forbid")

    until: str
    since: str | None = None
    reason: Annotated[str, Field(max_length=2000)] = ""
    """Added to the logged reason, which states the pilot, the preprocessing and who froze."""
    dry_run: bool = False
    """Compute and answer the boundaries, amend nothing."""


@dataclass(frozen=True)
class StoredPlan:
    plan: AnalysisPlan
    version: int
    sha256: str


def _now() -> str:
    return now_utc().strftime("%Y-%m-%d %H:%M:%S.%f")


async def current_plan(store: Store, experiment_id: str) -> StoredPlan | None:
    """The latest version of the experiment's plan, or None (no plan registered)."""
    rows = (
        await store.query(
            f"SELECT version, plan, sha256 FROM {PLANS} WHERE experiment_id = {quote(experiment_id)} "
            "ORDER BY version DESC LIMIT 1"
        )
    ).rows
    if not rows:
        return None
    version, text, sha = rows[0]
    return StoredPlan(AnalysisPlan.model_validate_json(str(text)), int(version), str(sha))


async def log_deviation(store: Store, stored: StoredPlan, by: str, what: dict[str, Any]) -> str:
    """Append one report's departures from the plan; the time it logged."""
    at = _now()
    row = {
        "experiment_id": stored.plan.experiment_id,
        "plan_sha256": stored.sha256,
        "at": at,
        "by": by,
        "what": orjson.dumps(what, option=orjson.OPT_SORT_KEYS).decode(),
    }
    await store.insert_json_rows(DEVIATIONS, orjson.dumps(row))
    return at


def _check_against(config: ExperimentConfig, plan: AnalysisPlan) -> None:
    if unknown := sorted(plan.subsets_named() - set(subset_names())):
        raise problem(400, "bad_request", f"plan: unknown subsets {unknown}")
    if plan.experiment_id != config.experiment_id:
        raise problem(400, "bad_request", f"plan: experiment_id {plan.experiment_id!r} is not the path's")
    for q in (*plan.primary, *plan.secondary):
        if q.engine not in config.engines:
            raise problem(400, "bad_request", f"plan: engine {q.engine!r} is not one of the experiment's")
        if q.arm not in config.arms_on(q.engine) or plan.baseline not in config.arms_on(q.engine):
            raise problem(400, "bad_request", f"plan: {q.engine} runs no arm {q.arm!r} or {plan.baseline!r}")


async def _write(
    request: web.Request, by: str, plan: AnalysisPlan, kind: str, reason: str, based_on: str | None = None
) -> dict[str, Any]:
    """Store ``plan`` as the next version (``based_on``: only if the current version still
    has that hash), and its quintile boundaries when they changed."""
    store = request.app[STORE]
    async with request.app[WRITING]:
        stored = await current_plan(store, plan.experiment_id)
        if kind == "registration" and stored is not None:
            raise problem(
                409, "plan_exists", "a plan is registered: amend it (POST .../plan/amendments) with a reason"
            )
        if kind != "registration" and stored is None:
            raise problem(404, "no_plan", "no plan registered: register one first (PUT .../plan)")
        if based_on is not None and stored is not None and stored.sha256 != based_on:
            raise problem(409, "plan_changed", "the plan was amended meanwhile: run the command again")
        if stored is not None and stored.sha256 == plan.sha256():
            raise problem(409, "plan_unchanged", "the amendment is the current plan")
        version = stored.version + 1 if stored else 1
        row = {
            "experiment_id": plan.experiment_id,
            "version": version,
            "plan": plan.canonical_json().decode(),
            "sha256": plan.sha256(),
            "registered_at": _now(),
            "registered_by": by,
            "kind": kind,
            "reason": reason,
        }
        await store.insert_json_rows(PLANS, orjson.dumps(row))
        if plan.quintiles != (stored.plan.quintiles if stored else {}):
            cuts: dict[str, list[int]] = {str(f): b.kept for f, b in plan.quintiles.items()}
            await store.execute(
                quintiles.row_sql(plan.experiment_id, version, plan.sha256(), cuts, ready=False)
            )
    return await read_plan(store, plan.experiment_id)


async def put_plan(request: web.Request) -> web.Response:
    key = authorize(request, "admin")
    config = await existing(request)
    plan = await read_model(request, AnalysisPlan)
    _check_against(config, plan)
    try:
        return json_response(await _write(request, key.name, plan, "registration", ""))
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None


async def post_amendment(request: web.Request) -> web.Response:
    key = authorize(request, "admin")
    config = await existing(request)
    body = await read_model(request, PlanAmendment)
    _check_against(config, body.plan)
    try:
        return json_response(await _write(request, key.name, body.plan, "amendment", body.reason))
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None


def _pilot_days(body: FreezeQuintiles) -> tuple[date | None, date]:
    try:
        since = date.fromisoformat(body.since) if body.since is not None else None
        until = date.fromisoformat(body.until)
    except ValueError as exc:
        raise problem(400, "bad_request", f"since and until are days, YYYY-MM-DD: {exc}") from None
    if since is not None and since > until:
        raise problem(400, "bad_request", "since is after until")
    return since, until


def _frozen(plan: AnalysisPlan, cuts: dict[str, PilotCuts]) -> AnalysisPlan:
    """The plan with the pilot's cut points as its quintiles (409 if they are no cut points)."""
    try:
        return AnalysisPlan.model_validate(
            {
                **plan.model_dump(mode="json"),
                "quintiles": {f: {"kept": list(c.kept)} for f, c in cuts.items()},
            }
        )
    except ValidationError as exc:
        raise problem(409, "no_pilot_data", f"the pilot's cut points cannot be frozen: {exc}"[:500]) from None


def _frozen_reason(pilot: dict[str, Any], reason: str, by: str) -> str:
    """The logged reason: the pilot window, its preprocessing and units, who; the caller's."""
    units = ", ".join(f"{family} {c['units']} units" for family, c in pilot["quintiles"].items())
    stated = (
        "n_candidates quintile boundaries frozen from the pilot "
        f"{pilot['since'] or 'start'}..{pilot['until']} "
        f"({pilot['engine']}, burn-in {pilot['burn_in_days']} days, identified installs; {units}) by {by}"
    )
    return f"{stated}: {reason}" if reason else stated


async def post_freeze_quintiles(request: web.Request) -> web.Response:
    """Compute both families' quintile cut points over a pilot period with the plan's
    preprocessing and amend the plan with them (kind ``freeze_quintiles``)."""
    key = authorize(request, "admin")
    config = await existing(request)
    body = await read_model(request, FreezeQuintiles)
    since, until = _pilot_days(body)
    store = request.app[STORE]
    try:
        stored = await current_plan(store, config.experiment_id)
        if stored is None:
            raise problem(404, "no_plan", "no plan registered: register one first (PUT .../plan)")
        if frozen := sorted(stored.plan.quintiles):
            raise problem(
                409,
                "quintiles_frozen",
                f"the plan already fixes the boundaries of {frozen}: amend the plan explicitly "
                "(POST .../plan/amendments) to change them",
            )
        plan = stored.plan
        cuts = await pilot_quintiles(store, plan.experiment_id, plan.engine, plan.burn_in_days, since, until)
        if empty := sorted(family for family, c in cuts.items() if c.units == 0):
            raise problem(
                409, "no_pilot_data", f"the pilot {since or 'start'}..{until} has no kept units of {empty}"
            )
        pilot = {
            "since": since.isoformat() if since else None,
            "until": until.isoformat(),
            "engine": plan.engine,
            "burn_in_days": plan.burn_in_days,
            "quintiles": {family: {"kept": list(c.kept), "units": c.units} for family, c in cuts.items()},
        }
        frozen_plan = _frozen(plan, cuts)
        if body.dry_run:
            return json_response(
                {"experiment_id": plan.experiment_id, "dry_run": True, "pilot": pilot, "plan": None}
            )
        reason = _frozen_reason(pilot, body.reason, key.name)
        answer = await _write(
            request, key.name, frozen_plan, "freeze_quintiles", reason, based_on=stored.sha256
        )
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    return json_response(
        {"experiment_id": plan.experiment_id, "dry_run": False, "pilot": pilot, "plan": answer}
    )


async def get_plan(request: web.Request) -> web.Response:
    authorize(request, "read")
    config = await existing(request)
    try:
        answer = await read_plan(request.app[STORE], config.experiment_id)
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    if answer["plan"] is None:
        raise problem(404, "no_plan", f"experiment {config.experiment_id!r} has no analysis plan")
    return json_response(answer)


async def get_deviations(request: web.Request) -> web.Response:
    authorize(request, "read")
    config = await existing(request)
    try:
        rows = (
            await request.app[STORE].query(
                "SELECT plan_sha256, toString(at), by, what FROM "
                f"{DEVIATIONS} WHERE experiment_id = {quote(config.experiment_id)} ORDER BY at",
                read_only=True,
            )
        ).rows
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    deviations = [
        {"plan_sha256": str(sha), "at": str(at), "by": str(by), "what": orjson.loads(str(what))}
        for sha, at, by, what in rows
    ]
    return json_response({"experiment_id": config.experiment_id, "deviations": deviations})


async def read_plan(store: Store, experiment_id: str) -> dict[str, Any]:
    """The plan as GET .../plan answers it (``plan`` None without one): also an export's."""
    rows = (
        await store.query(
            "SELECT version, plan, sha256, toString(registered_at), registered_by, kind, reason "
            f"FROM {PLANS} WHERE experiment_id = {quote(experiment_id)} ORDER BY version",
            read_only=True,
        )
    ).rows
    names = ("version", "sha256", "registered_at", "registered_by", "kind", "reason")
    history = [dict(zip(names, (int(r[0]), *(str(v) for v in r[2:])), strict=True)) for r in rows]
    latest = rows[-1] if rows else None
    _, frozen = await quintiles.read_frozen(store, [experiment_id])
    bounds = frozen.get(experiment_id)
    return {
        "experiment_id": experiment_id,
        "version": history[-1]["version"] if history else None,
        "sha256": history[-1]["sha256"] if history else None,
        "plan": orjson.loads(str(latest[1])) if latest else None,
        "history": history,
        "quintiles_stored": bounds.ready if bounds is not None and bounds.frozen else None,
    }


def add_routes(app: web.Application) -> None:
    app[WRITING] = asyncio.Lock()
    app.router.add_put("/v1/experiments/{experiment_id}/plan", put_plan)
    app.router.add_get("/v1/experiments/{experiment_id}/plan", get_plan)
    app.router.add_post("/v1/experiments/{experiment_id}/plan/amendments", post_amendment)
    app.router.add_post("/v1/experiments/{experiment_id}/plan/freeze-quintiles", post_freeze_quintiles)
    app.router.add_get("/v1/experiments/{experiment_id}/plan/deviations", get_deviations)
