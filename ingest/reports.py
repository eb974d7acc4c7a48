"""``POST /v1/reports/experiment``: the experiment report, computed by the service.

``auditstream report experiment`` asks here rather than fetching per-install rows through
``/v1/sql``: with 100k installs those rows are 600k, more than an analyst's query may
return and slow to ship as JSON. The service reads them in columns (Arrow) and computes
the report where the board computes its panels (``ingest/board/compute.py``), with the
same functions, so the CLI, the board and the views agree number for number.
"""

from __future__ import annotations

from typing import Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from analytics.reports.experiment import ReportQuery, parse_moment
from core.store import StoreUnavailable
from ingest.board.compute import Panel, PanelFailed
from ingest.board.routes import COMPUTE
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_json, store_unavailable


class ExperimentReportRequest(BaseModel):
    """The options of ``auditstream report experiment``."""

    model_config = ConfigDict(extra="forbid")
    experiment_id: str = Field(min_length=1, max_length=200)
    engine: str = Field("google", max_length=50)
    subset: str = "all"
    burn_in_days: int = Field(4, ge=0, le=3650)
    include_unidentified: bool = False
    since: str | None = None
    until: str | None = None
    ranks: int = Field(6, ge=1, le=10)
    unit_mode: Literal["click", "impression"] = "click"
    seed: int = Field(0, ge=0, le=2**32 - 1)
    baseline: str = Field("control", max_length=100)


async def post_experiment_report(request: web.Request) -> web.Response:
    authorize(request, "read")
    try:
        asked = ExperimentReportRequest.model_validate(await read_json(request))
        ReportQuery(  # checks the subset and the moments before any work
            asked.experiment_id,
            asked.engine,
            subset=asked.subset,
            since=parse_moment(asked.since) if asked.since else None,
            until=parse_moment(asked.until) if asked.until else None,
        )._subset_condition(True)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        raise problem(400, "bad_request", f"{where}: {first['msg']}") from None
    except ValueError as exc:
        raise problem(400, "bad_request", str(exc)[:500]) from None
    try:
        doc = await request.app[COMPUTE](Panel("report", tuple(asked.model_dump().items())))
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    except PanelFailed as exc:
        raise problem(503, "report_failed", str(exc)) from None
    if not doc["arms"]:
        raise problem(
            404, "no_units", f"no units for {asked.experiment_id} on {asked.engine} after preprocessing"
        )
    return json_response(doc)


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v1/reports/experiment", post_experiment_report)
