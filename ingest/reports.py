"""``POST /v1/reports/experiment`` and ``/v1/reports/timeline``: reports the service computes.

``auditstream report experiment`` asks here rather than fetching per-install rows through
``/v1/sql``: with 100k installs those rows are 600k, more than an analyst's query may
return and slow to ship as JSON. The service reads them in columns (Arrow) and computes
the report where the board computes its panels (``ingest/board/compute.py``), with the
same functions, so the CLI, the board and the views agree number for number.
"""

from __future__ import annotations

from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from analytics.stats.reweight import targets_from_rows
from core.process_pool import PoolUnavailable
from core.store import StoreUnavailable
from ingest.app_state import STORE
from ingest.board.compute import Panel, PanelFailed
from ingest.board.routes import COMPUTE
from ingest.errors import problem
from ingest.handlers import authorize, bad_request, json_response, read_json, store_unavailable
from ingest.plans import StoredPlan, current_plan, log_deviation
from studies.arrangement.plan_settings import correction_family, follow
from studies.arrangement.selection import ReportQuery, parse_moment, parse_window


class TargetMargin(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dimension: str = Field(max_length=50)
    bin: str = Field(max_length=100)
    share: float = Field(ge=0, le=1)


class ExperimentReportRequest(BaseModel):
    """The options of ``auditstream report experiment``."""

    model_config = ConfigDict(extra="forbid")
    experiment_id: str = Field(min_length=1, max_length=200)
    engine: str = Field("google", max_length=50)
    subset: str = "all"
    burn_in_days: StrictInt | None = Field(None, ge=0, le=3650)
    """None: as the experiment was registered, else 4 (the board's choice too)."""
    include_unidentified: StrictBool = False
    since: str | None = None
    until: str | None = None
    ranks: StrictInt = Field(6, ge=1, le=10)
    unit_mode: Literal["click", "impression"] | None = None
    """None: as the experiment was registered, else click."""
    seed: StrictInt = Field(0, ge=0, le=2**32 - 1)
    baseline: str = Field("control", max_length=100)
    intervals: Literal["bootstrap", "sequential"] = "bootstrap"
    level: float = Field(0.95, gt=0.5, lt=1, allow_inf_nan=False)
    """The intervals' confidence level (the plan's, when the experiment has one)."""
    correction: Literal["holm", "bh", "bonferroni", "none"] = "none"
    """Multiple-comparison correction over the family (the plan's, when it has one)."""
    variance_reduction: StrictBool = False
    """Also the variance-reduced estimates (``docs/variance-reduction.md``) beside the plain."""
    targets: list[TargetMargin] | None = Field(None, max_length=500)
    """Reweighting: the target population's margins (``docs/reweighting.md``)."""
    by_market: StrictBool = False
    """Identification and SRM per engine market (a read of the study's raw events)."""


class TimelineRequest(BaseModel):
    """The options of ``auditstream report timeline``."""

    model_config = ConfigDict(extra="forbid")
    experiment_id: str = Field(min_length=1, max_length=200)
    window: str = Field("1h", max_length=20)
    engine: str = Field("google", max_length=50)
    subset: str = "all"
    burn_in_days: StrictInt | None = Field(None, ge=0, le=3650)
    since: str | None = None
    until: str | None = None
    unit_mode: Literal["click", "impression"] | None = None
    seed: StrictInt = Field(0, ge=0, le=2**32 - 1)
    baseline: str = Field("control", max_length=100)


async def post_timeline(request: web.Request) -> web.Response:
    """CTR, gaps and distortions per arm in consecutive windows, each with its own CI."""
    authorize(request, "read")
    try:
        asked = TimelineRequest.model_validate(await read_json(request))
        parse_window(asked.window)
        _check_selection(asked.experiment_id, asked.engine, asked.subset, asked.since, asked.until)
    except ValidationError as exc:
        raise bad_request(exc) from None
    except ValueError as exc:
        raise problem(400, "bad_request", str(exc)[:500]) from None
    doc = await _compute(request, Panel("timeline", tuple(asked.model_dump().items())))
    if not doc["windows"]:
        what = f"no units for {asked.experiment_id} on {asked.engine} in that range after preprocessing"
        raise problem(404, "no_units", what)
    return json_response(doc)


def _check_selection(
    experiment_id: str, engine: str, subset: str, since: str | None, until: str | None
) -> None:
    """The subset and moments of a selection, checked before any work (ValueError)."""
    ReportQuery(
        experiment_id,
        engine,
        subset=subset,
        since=parse_moment(since) if since else None,
        until=parse_moment(until) if until else None,
    ).subset_condition(True)


async def _compute(request: web.Request, panel: Panel) -> Any:
    try:
        return await request.app[COMPUTE](panel)
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except PanelFailed as exc:
        raise problem(503, "report_failed", str(exc)) from None
    except PoolUnavailable as exc:
        raise problem(503, "compute_unavailable", str(exc), {"Retry-After": "5"}) from None


async def post_experiment_report(request: web.Request) -> web.Response:
    key = authorize(request, "read")
    try:
        asked = ExperimentReportRequest.model_validate(await read_json(request))
        _check_selection(asked.experiment_id, asked.engine, asked.subset, asked.since, asked.until)
        if asked.targets:
            targets_from_rows([t.model_dump() for t in asked.targets])
    except ValidationError as exc:
        raise bad_request(exc) from None
    except ValueError as exc:
        raise problem(400, "bad_request", str(exc)[:500]) from None
    return json_response(await experiment_report(request, asked, by=key.name))


async def experiment_report(
    request: web.Request, asked: ExperimentReportRequest, by: str | None = None
) -> Any:
    """The report of a checked request, computed where the board computes (404 ``no_units``
    for a selection without units); ``ingest/board/figures.py`` asks its figures' reports here.

    With an analysis plan, unset settings are the plan's, and the answer's ``plan`` says
    which settings departed from it; ``by`` (the caller's key name): log those departures
    (``plan_deviations``) once the report is computed, so the log holds what was looked at."""
    try:
        stored = await current_plan(request.app[STORE], asked.experiment_id)
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    followed = None
    if stored is not None:
        followed = follow(asked.model_dump(), asked.model_fields_set, stored.plan)
        asked = asked.model_copy(update=followed.settings)
    params = asked.model_dump()
    family = (
        None
        if stored is None
        else correction_family(stored.plan, asked.engine, asked.subset, asked.baseline, None, asked.ranks)
    )
    params["family"] = None if family is None else tuple(family)
    params["targets"] = tuple(params["targets"] or ())  # Panel parameters are hashable
    params["targets"] = tuple(tuple(sorted(t.items())) for t in params["targets"])
    doc = await _compute(request, Panel("report", tuple(params.items())))
    if not doc["arms"]:
        raise problem(
            404, "no_units", f"no units for {asked.experiment_id} on {asked.engine} after preprocessing"
        )
    if stored is None or followed is None:
        return {**doc, "plan": None}
    logged_at = None
    if by is not None and followed.departures:
        try:
            logged_at = await log_deviation(request.app[STORE], stored, by, followed.departures)
        except StoreUnavailable as exc:
            raise store_unavailable(request, exc) from None
    return {**doc, "plan": plan_json(stored, followed.departures, logged_at)}


def plan_json(stored: StoredPlan, departures: dict[str, Any], logged_at: str | None) -> dict[str, Any]:
    """``ExperimentReport.plan``: which plan version the report followed, and where not."""
    return {
        "version": stored.version,
        "sha256": stored.sha256,
        "followed": not departures,
        "departures": departures,
        "logged_at": logged_at,
    }


def check_report_request(body: dict[str, Any]) -> ExperimentReportRequest:
    """A report request checked as ``POST /v1/reports/experiment`` checks it (ValueError,
    pydantic's ValidationError)."""
    asked = ExperimentReportRequest.model_validate(body)
    _check_selection(asked.experiment_id, asked.engine, asked.subset, asked.since, asked.until)
    return asked


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/reports/experiment", post_experiment_report)
    app.router.add_post("/v1/reports/timeline", post_timeline)
