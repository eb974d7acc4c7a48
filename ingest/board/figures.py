"""``GET /v1/board/figures/{paper}/{figure}``: one of the papers' figures as SVG, for the
board's "Figures" section (``read`` scope).

The figure is drawn by the ``figures`` package from the same answers ``auditstream figures``
reads: reports computed where the board computes (``reports.experiment_report``, so the
compute process's cache serves repeated looks) and the report commands' statements on the
store. Only the answers that figure needs are asked; matplotlib draws in a worker thread,
so the event loop never waits on a drawing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from pydantic import ValidationError

from core.store import StoreError, StoreUnavailable
from figures import autocomplete, personalization, powermeter, sources
from figures.render import Figure, svg_bytes
from ingest import experiments
from ingest.app_state import STORE
from ingest.errors import problem
from ingest.handlers import authorize, store_unavailable
from ingest.reports import check_report_request, experiment_report

TABLE_PAPERS = {"personalization": personalization, "autocomplete": autocomplete}
"""The papers drawn from a study's report tables (``study``: the study id or crawl prefix)."""


async def figure(request: web.Request) -> web.Response:
    authorize(request, "read")
    paper, name = request.match_info["paper"], request.match_info["figure"]
    if paper == "powermeter":
        drawn = await _powermeter(request, name)
    elif paper in TABLE_PAPERS:
        drawn = await _table_figure(request, paper, name)
    else:
        raise problem(404, "not_found", f"no paper {paper!r}: powermeter, personalization or autocomplete")
    body = await asyncio.to_thread(svg_bytes, drawn)
    return web.Response(body=body, content_type="image/svg+xml", headers={"Cache-Control": "no-store"})


async def _powermeter(request: web.Request, name: str) -> Figure:
    experiment_id = request.query.get("experiment", "")
    try:
        config = await experiments.load(request.app[STORE], experiment_id)
    except StoreUnavailable as exc:
        raise store_unavailable(request, exc) from None
    # unregistered (the board lists experiments with data): drawn from its reports' arms
    registered = powermeter.unregistered(experiment_id) if config is None else config.model_dump(mode="json")
    keys = powermeter.needed(name, registered)
    if keys is None:
        raise problem(
            404, "not_found", f"no figure {name!r}; the experiment's: {powermeter.names(registered)}"
        )
    needs = [n for n in sources.powermeter(registered) if n.key in keys]
    answers = await _gather(request, needs)
    return await asyncio.to_thread(powermeter.draw_one, name, registered, answers)


async def _table_figure(request: web.Request, paper: str, name: str) -> Figure:
    module = TABLE_PAPERS[paper]
    draw = module.FIGURES.get(name)
    if draw is None:
        raise problem(404, "not_found", f"no figure {name!r}; the paper's: {sorted(module.FIGURES)}")
    study = request.query.get("study", "")  # none: an empty study, drawn as such (as its panel)
    needs = sources.personalization(study) if paper == "personalization" else sources.autocomplete(study)
    answers = await _gather(request, needs)
    return await asyncio.to_thread(draw, study, answers)


async def _gather(request: web.Request, needs: list[sources.Need]) -> dict[str, Any]:
    async def ask(path: str, body: dict[str, Any]) -> Any:
        if path == sources.SQL:
            try:
                return (await request.app[STORE].query(body["sql"], read_only=True)).to_json()
            except StoreUnavailable as exc:
                raise store_unavailable(request, exc) from None
            except StoreError as exc:
                raise problem(503, "report_failed", str(exc)[:500]) from None
        try:
            asked = check_report_request(body)
        except (ValidationError, ValueError) as exc:
            raise sources.Refused(400, str(exc)[:500]) from None
        try:
            return await experiment_report(request, asked)
        except web.HTTPNotFound as exc:
            raise sources.Refused(404, str(exc.text)) from None

    return await sources.agather(needs, ask)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/board/figures/{paper}/{figure}", figure)
