"""``POST /v1/experiments/{experiment_id}/pilot-world``: an experiment's data so far, as the
world the study planner scales (issue 38; ``auditstream plan size --pilot``).

The selection is an engine and optionally whole days; the preprocessing is the one a report of
the experiment follows by default: its analysis plan's burn-in and unit mode, else its
registration's. The arm, its baseline and the rank default to the plan's first primary
quantity of another arm than its baseline (else ``swap_1_2`` against ``control`` at c1). The
answer is ``studies/arrangement/read/pilot.py``'s reading of the per-install counts, summed
up by ``planner.world_from_pilot``: the pilot's size, the arms' registered weights and the
estimated ``World``. It only reads (the read scope).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from core.store import StoreError, StoreUnavailable
from ingest.app_state import STORE
from ingest.errors import problem
from ingest.experiments import existing
from ingest.handlers import authorize, json_response, read_model, store_unavailable
from ingest.plans import StoredPlan, current_plan
from schemas.events import Engine, Ident
from schemas.experiments import ExperimentConfig
from studies.arrangement.read.pilot import PilotCounts, pilot_world, read_pilot
from studies.arrangement.selection import ReportQuery

DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
YEARS = (1970, 2105)
"""The years a day may lie in (``selection.parse_moment``'s: the slices' ``DateTime``)."""
DEFAULT_ARM, DEFAULT_BASELINE, DEFAULT_RANK = "swap_1_2", "control", 1


class PilotWorldRequest(BaseModel):
    """The pilot's selection and what to plan for; unset fields follow the analysis plan."""

    model_config = ConfigDict(extra="forbid")

    engine: Engine | None = None
    """None: the plan's engine, else google."""
    since: Annotated[str, Field(max_length=10)] | None = None
    """First day, YYYY-MM-DD (inclusive); None: the first day with units."""
    until: Annotated[str, Field(max_length=10)] | None = None
    """Last day, YYYY-MM-DD (inclusive); None: the last day with units."""
    arm: Ident | None = None
    baseline: Ident | None = None
    rank: Annotated[StrictInt, Field(ge=1, le=10)] | None = None
    model: Literal["proportional", "additive"] = "proportional"
    """How installs' CTRs under the arm follow their control CTR (``planner.World.model``)."""


class PlannerWorld(BaseModel):
    """``analytics/stats/planner.World``: what the planner assumes, as the pilot estimates it."""

    installs: int
    days: float
    clicks_per_day: float
    ctr: float
    delta: float
    ctr_sd: float
    arm_weight: float
    baseline_weight: float
    total_weight: float
    activity_cv: float
    pooled_factor: float
    model: str


class PilotWorld(BaseModel):
    """A pilot's selection, its size and the world the planner estimates from it."""

    experiment_id: str
    engine: str
    arm: str
    baseline: str
    rank: int
    burn_in_days: int
    unit_mode: str
    preprocessing_from: Literal["plan", "registration"]
    first_day: str
    last_day: str
    days: int
    installs: int
    units: int
    arm_weights: dict[str, float]
    world: PlannerWorld


def parse_day(text: str | None, name: str) -> date | None:
    """A whole day YYYY-MM-DD in ``YEARS``, or a 400 naming the field."""
    if text is None:
        return None
    try:
        if not DAY.fullmatch(text):
            raise ValueError
        day = date.fromisoformat(text)
    except ValueError:
        raise problem(400, "bad_request", f"{name}: a day is YYYY-MM-DD") from None
    if not YEARS[0] <= day.year <= YEARS[1]:
        raise problem(400, "bad_request", f"{name}: the day lies outside {YEARS[0]}-{YEARS[1]}")
    return day


def _choices(
    asked: PilotWorldRequest, config: ExperimentConfig, plan: StoredPlan | None
) -> tuple[str, str, str, int]:
    """(engine, arm, baseline, rank): as asked, else the plan's, else the defaults; 400 when
    the engine is not the experiment's or it runs no such arm."""
    engine = asked.engine or (plan.plan.engine if plan else "google")
    baseline = asked.baseline or (plan.plan.baseline if plan else DEFAULT_BASELINE)
    primary = [q for q in plan.plan.primary if q.arm != baseline and q.engine == engine] if plan else []
    arm = asked.arm or (primary[0].arm if primary else DEFAULT_ARM)
    rank = asked.rank or (primary[0].rank if primary and not asked.arm else DEFAULT_RANK)
    if engine not in config.engines:
        raise problem(400, "bad_request", f"engine {engine!r} is not one of the experiment's")
    arms = config.arms_on(engine)
    for name in (arm, baseline):
        if name not in arms:
            raise problem(400, "bad_request", f"{engine} runs no arm {name!r}")
    if arm == baseline:
        raise problem(400, "bad_request", f"the arm {arm!r} is the baseline: plan against another arm")
    return engine, arm, baseline, rank


def _answer(
    query: ReportQuery,
    counts: PilotCounts,
    weights: dict[str, float],
    chosen: tuple[str, str, str, int],
    asked: PilotWorldRequest,
    plan: StoredPlan | None,
) -> PilotWorld:
    """The answer, or 404 ``no_units`` when the arm or its baseline has no units."""
    engine, arm, baseline, rank = chosen
    for name in (arm, baseline):
        if counts.arm_units(name) <= 0:
            raise problem(404, "no_units", f"no units of {name} on {engine} in the pilot after preprocessing")
    world = vars(pilot_world(counts, weights, arm, baseline, rank, asked.model))
    return PilotWorld(
        experiment_id=query.experiment_id,
        engine=engine,
        arm=arm,
        baseline=baseline,
        rank=rank,
        burn_in_days=query.burn_in_days,
        unit_mode=query.unit_mode,
        preprocessing_from="plan" if plan else "registration",
        first_day=str(counts.first_day),
        last_day=str(counts.last_day),
        days=counts.days,
        installs=counts.installs,
        units=int(counts.units.sum()),
        arm_weights=weights,
        world=PlannerWorld.model_validate({k: v for k, v in world.items() if k in PlannerWorld.model_fields}),
    )


async def post_pilot_world(request: web.Request) -> web.Response:
    authorize(request, "read")
    config = await existing(request)
    asked = await read_model(request, PilotWorldRequest)
    since, until = parse_day(asked.since, "since"), parse_day(asked.until, "until")
    if since is not None and until is not None and since > until:
        raise problem(400, "bad_request", "since is after until")
    store = request.app[STORE]
    try:
        plan = await current_plan(store, config.experiment_id)
        chosen = _choices(asked, config, plan)
        burn_in, unit_mode = (
            (plan.plan.burn_in_days, plan.plan.unit_mode) if plan else (config.burn_in_days, config.unit_mode)
        )
        query = ReportQuery(
            config.experiment_id, chosen[0], burn_in, since=since, until=until, unit_mode=unit_mode
        )
        weights = config.arms_on(chosen[0])
        counts = await read_pilot(store, query, list(weights), chosen[3])
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except StoreError as exc:
        raise problem(503, "store_refused", str(exc)[:500]) from None
    if counts.installs == 0:
        what = f"no units for {config.experiment_id} on {chosen[0]} after preprocessing"
        raise problem(404, "no_units", what + (" in those days" if since or until else ""))
    return json_response(_answer(query, counts, weights, chosen, asked, plan).model_dump(mode="json"))


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/experiments/{experiment_id}/pilot-world", post_pilot_world)
