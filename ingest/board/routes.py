"""The board's HTTP edge: the page and its assets (no key needed: they hold no data) and
the JSON endpoints under ``/v1/board`` (``read`` scope, like ``/v1/sql``).

Handlers run the statements of ``ingest.board.queries`` through the store and hand the
rows to the pure functions of ``ingest.board.panels``. Answers are kept for a couple of
seconds, so any number of open boards costs one computation per panel per interval; the
bootstrap runs in a thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from aiohttp import web

from analytics.reports.experiment import BOX_BASELINE, BOX_RANKS, ReportQuery, experiment_report
from ingest.board import panels, queries
from ingest.errors import problem
from ingest.handlers import authorize, json_response, read_query

log = logging.getLogger(__name__)

ASSETS = {
    "board.js": "text/javascript",
    "board.css": "text/css",
}
PAGE_HEADERS = {
    # The page only talks to this origin; no inline script or style, nothing from elsewhere.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
SEED = 0
"""The bootstrap seed of ``auditstream report experiment`` (its default), so the numbers agree."""
CACHE_TTL_S = 2.0
FIGURE3_RANKS = 6


@dataclass
class TtlCache:
    """Answers by key, reused for ``ttl_s`` seconds; at most ``max_entries`` kept."""

    ttl_s: float = CACHE_TTL_S
    max_entries: int = 256
    clock: Callable[[], float] = time.monotonic
    _entries: dict[tuple[str, ...], tuple[float, Any]] = field(default_factory=dict)

    async def get(self, key: tuple[str, ...], compute: Callable[[], Awaitable[Any]]) -> Any:
        now = self.clock()
        hit = self._entries.get(key)
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        value = await compute()
        if len(self._entries) >= self.max_entries:
            for stale in [k for k, (t, _) in self._entries.items() if now - t >= self.ttl_s]:
                del self._entries[stale]
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
        self._entries[key] = (self.clock(), value)
        return value


@dataclass(frozen=True)
class Assets:
    page: bytes
    files: dict[str, bytes]


CACHE = web.AppKey("board_cache", TtlCache)
ASSET_FILES = web.AppKey("board_assets", Assets)


def load_assets() -> Assets:
    folder = resources.files("ingest.board") / "static"
    return Assets(
        page=(folder / "index.html").read_bytes(),
        files={name: (folder / name).read_bytes() for name in ASSETS},
    )


async def _rows(request: web.Request, sql: str) -> list[dict[str, Any]]:
    """The board's own statements: a refusal is a bug here (500), not the caller's."""
    return (await read_query(request, sql, failed_status=500)).dicts()


async def _named(request: web.Request, statements: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    results = await asyncio.gather(*(_rows(request, sql) for sql in statements.values()))
    return dict(zip(statements, results, strict=True))


async def _cached(request: web.Request, compute: Callable[[], Awaitable[Any]]) -> web.Response:
    key = (request.path, *sorted(f"{k}={v}" for k, v in request.query.items()))
    body = await request.app[CACHE].get(key, compute)
    return json_response(body, headers={"Cache-Control": "no-store"})


def _int_param(request: web.Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise problem(400, "bad_request", f"{name} must be an integer") from None
    if not low <= value <= high:
        raise problem(400, "bad_request", f"{name} must be between {low} and {high}")
    return value


async def page(request: web.Request) -> web.Response:
    return web.Response(
        body=request.app[ASSET_FILES].page, content_type="text/html", charset="utf-8", headers=PAGE_HEADERS
    )


async def asset(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in ASSETS:
        raise problem(404, "not_found", "no such file")
    return web.Response(
        body=request.app[ASSET_FILES].files[name],
        content_type=ASSETS[name],
        charset="utf-8",
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )


async def index(request: web.Request) -> web.Response:
    """What there is to show: experiments, autocomplete studies, personalization studies."""
    authorize(request, "read")

    async def compute() -> dict[str, Any]:
        got = await _named(
            request,
            {
                "activity": queries.EXPERIMENT_ACTIVITY_SQL,
                "registry": queries.REGISTRY_SQL,
                "crawls": queries.AUTOCOMPLETE_CRAWLS_SQL,
                "personalization": queries.PERSONALIZATION_STUDIES_SQL,
            },
        )
        return {
            "experiments": panels.experiment_index(got["activity"], got["registry"]),
            "autocomplete_studies": panels.autocomplete_index(got["crawls"]),
            "personalization_studies": panels.personalization_index(got["personalization"]),
        }

    return await _cached(request, compute)


async def experiment(request: web.Request) -> web.Response:
    """Figure 3 with CIs and gaps, element shares, the box subset, SRM and the drops."""
    authorize(request, "read")
    experiment_id = request.match_info["experiment_id"]
    engine = request.query.get("engine", "google")
    ranks = _int_param(request, "ranks", FIGURE3_RANKS, 1, 10)

    async def compute() -> dict[str, Any]:
        registry = await _rows(request, queries.registry_sql(experiment_id))
        config = registry[0] if registry else None
        query = ReportQuery(
            experiment_id,
            engine,
            burn_in_days=int(config["burn_in_days"]) if config else 4,
            unit_mode=str(config["unit_mode"] or "click") if config else "click",
        )
        got = await _named(request, queries.experiment_sql(query))
        report = await asyncio.to_thread(experiment_report, got, ranks, SEED, "control")
        figure3 = panels.figure3_json(report.figure3, ranks, "control")
        box = panels.figure3_json(report.box, BOX_RANKS, BOX_BASELINE)
        drops = panels.drops_panel(report.drops)
        allocation = {str(a): float(w) for a, w in config["arms"].items()} if config else None
        return {
            "experiment_id": experiment_id,
            "engine": engine,
            "burn_in_days": query.burn_in_days,
            "unit_mode": query.unit_mode,
            "seed": SEED,
            "registry_status": config["status"] if config else None,
            "figure3": figure3,
            "element_shares": panels.shares_json(report.shares),
            "box_subset": box,
            "drops": drops,
            "srm": panels.srm_panel(drops, allocation, got["srm_alerts"]),
        }

    return await _cached(request, compute)


async def autocomplete(request: web.Request) -> web.Response:
    """Churn by rank x depth and the nmi timeline with shocks, for a crawl id prefix ('' = all)."""
    authorize(request, "read")
    study = request.query.get("study", "")
    engine = request.query.get("engine", "")

    async def compute() -> dict[str, Any]:
        got = await _named(request, queries.autocomplete_sql(study, engine))
        return {
            "study": study,
            "engine": engine,
            "churn": panels.churn_panel(got["churn"]),
            "nmi": panels.nmi_panel(got["nmi"]),
        }

    return await _cached(request, compute)


async def personalization(request: web.Request) -> web.Response:
    """Per-rank change against the noise floor for one study."""
    authorize(request, "read")
    study_id = request.match_info["study_id"]

    async def compute() -> dict[str, Any]:
        got = await _named(request, queries.personalization_sql(study_id))
        return {"study_id": study_id, **panels.personalization_panel(got["by_rank"], got["rounds"])}

    return await _cached(request, compute)


async def alerts(request: web.Request) -> web.Response:
    """The newest alerts first."""
    authorize(request, "read")
    limit = _int_param(request, "limit", 50, 1, 500)

    async def compute() -> dict[str, Any]:
        return {"alerts": panels.alerts_panel(await _rows(request, queries.alerts_sql(limit)))}

    return await _cached(request, compute)


def add_routes(app: web.Application) -> None:
    app[CACHE] = TtlCache()
    app[ASSET_FILES] = load_assets()
    app.router.add_get("/board", page)
    app.router.add_get("/board/static/{name}", asset)
    app.router.add_get("/v1/board/index", index)
    app.router.add_get("/v1/board/experiments/{experiment_id}", experiment)
    app.router.add_get("/v1/board/autocomplete", autocomplete)
    app.router.add_get("/v1/board/personalization/{study_id}", personalization)
    app.router.add_get("/v1/board/alerts", alerts)
