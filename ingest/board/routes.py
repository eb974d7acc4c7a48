"""The board's HTTP edge: the page and its assets (no key needed: they hold no data) and
the JSON endpoints under ``/v1/board`` (``read`` scope, like ``/v1/sql``).

Handlers validate their parameters, name the ``Panel`` they want and answer from the
``BoardRefresher`` (``refresher.py``): one background task keeps every panel someone is
looking at fresh, computing it in the board's own process (``compute.in_child``), so a
request never runs a query or a bootstrap and any number of open boards cost one
computation per panel per interval.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import PurePosixPath
from typing import Any

from aiohttp import web

from core.settings import Settings
from core.store import Store
from ingest import stop_deadline
from ingest.app_state import BOARD_STATE
from ingest.board import compute, looks_job
from ingest.board.compute import Panel
from ingest.board.compute_process import ComputeProcess
from ingest.board.refresher import BoardRefresher, BoardUnavailable
from ingest.errors import problem
from ingest.handlers import authorize, json_response

CONTENT_TYPES = {".js": "text/javascript", ".css": "text/css"}
"""What ``/board/static/{name}`` serves: the files of ``static/`` with these suffixes (the
page's ES modules and its style sheet), by exact name; nothing in a subfolder (the node
tests in ``static/test/``), nothing else."""
PAGE_HEADERS = {
    # The page only talks to this origin; no inline script or style, nothing from elsewhere
    # ('self' also admits the page's ES modules, which the browser fetches from this origin).
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
REFRESH_S = 2.0
SLOWER_REFRESH_S = {"index": 10.0}
"""The board's list of studies changes in what it is for when a study starts, not with
every batch (its click units move with every batch, so backing off would not slow it)."""
QUIET_S = 10.0
"""The longest a panel whose answer stopped changing waits between refreshes (doubling from
its own interval): a board open on a finished study, or on one between batches, cost the
store its version and panel statements every 2 s (CPU taken from the pipeline on the same
cores; bench/README.md, "Figures behind the code"). A live study's answers change every
refresh and keep the 2 s; a quiet one that starts again shows it within 10 s."""
FIGURE3_RANKS = compute.FIGURE3_RANKS
SEED = compute.SEED


@dataclass(frozen=True)
class Assets:
    page: bytes
    files: dict[str, bytes]


REFRESHER = web.AppKey("board_refresher", BoardRefresher)
ASSET_FILES = web.AppKey("board_assets", Assets)


def load_assets() -> Assets:
    folder = resources.files("ingest.board") / "static"
    return Assets(
        page=(folder / "index.html").read_bytes(),
        files={
            entry.name: entry.read_bytes()
            for entry in folder.iterdir()
            if entry.is_file() and PurePosixPath(entry.name).suffix in CONTENT_TYPES
        },
    )


async def _answer(request: web.Request, panel: Panel) -> web.Response:
    try:
        body = await request.app[REFRESHER].get(panel)
    except BoardUnavailable as exc:
        if exc.store_down:
            raise problem(503, "store_unavailable", str(exc), {"Retry-After": "5"}) from None
        raise problem(503, "board_unavailable", str(exc), {"Retry-After": "5"}) from None
    return json_response(body, headers={"Cache-Control": "no-store"})


def _intervals_param(request: web.Request) -> str:
    """sequential (default: a board is watched, so its intervals must hold at every look) or
    bootstrap (the one-look interval of ``report experiment``)."""
    value = request.query.get("intervals", compute.BOARD_INTERVALS)
    if value not in ("sequential", "bootstrap"):
        raise problem(400, "bad_request", "intervals must be sequential or bootstrap")
    return value


BOARD_CORRECTION = "holm"
"""The board's correction of its family's tests unless asked otherwise (``compute._experiment``
takes the same default): its family is every arm's gap at every rank shown, read all at once."""
CORRECTIONS = ("holm", "bh", "bonferroni", "none")


def _correction_param(request: web.Request) -> str:
    """holm (default), bh, bonferroni or none: how the family's tests are corrected."""
    value = request.query.get("correction", BOARD_CORRECTION)
    if value not in CORRECTIONS:
        raise problem(400, "bad_request", "correction must be holm, bh, bonferroni or none")
    return value


def _flag_param(request: web.Request, name: str) -> bool:
    """0 (default) or 1."""
    value = request.query.get(name, "0")
    if value not in ("0", "1"):
        raise problem(400, "bad_request", f"{name} must be 0 or 1")
    return value == "1"


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


async def to_board(request: web.Request) -> web.Response:
    """``/`` is the address a person types: the board is what there is to see (it answered a
    JSON 404). Answered, not raised: the error middleware turns a raised one into JSON."""
    return web.Response(status=302, headers={"Location": "/board"})


async def page(request: web.Request) -> web.Response:
    return web.Response(
        body=request.app[ASSET_FILES].page, content_type="text/html", charset="utf-8", headers=PAGE_HEADERS
    )


async def asset(request: web.Request) -> web.Response:
    """A file of ``static/`` by its exact name, read once at start: a path (``..``, ``/``,
    their encodings) is no file's name, so it is a 404 like any other unknown name."""
    name = request.match_info["name"]
    body = request.app[ASSET_FILES].files.get(name)
    if body is None:
        raise problem(404, "not_found", "no such file")
    return web.Response(
        body=body,
        content_type=CONTENT_TYPES[PurePosixPath(name).suffix],
        charset="utf-8",
        headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
    )


async def index(request: web.Request) -> web.Response:
    """What there is to show: experiments, autocomplete studies, personalization studies."""
    authorize(request, "read")
    return await _answer(request, Panel("index"))


async def experiment(request: web.Request) -> web.Response:
    """Figure 3 with CIs and gaps, element shares, the box subset, SRM, the drops, the
    family's corrected tests and (asked for) the variance-reduced estimates."""
    authorize(request, "read")
    panel = compute.experiment_panel(
        request.match_info["experiment_id"],
        request.query.get("engine", "google"),
        _int_param(request, "ranks", FIGURE3_RANKS, 1, 10),
        _intervals_param(request),
    )
    # named only when not the defaults: the default panel is the one the warm-up computed
    correction, reduced = _correction_param(request), _flag_param(request, "variance_reduction")
    extra: tuple[tuple[str, Any], ...] = (
        (("correction", correction),) if correction != BOARD_CORRECTION else ()
    )
    extra += (("variance_reduction", True),) if reduced else ()
    if extra:
        panel = Panel(panel.kind, panel.params + extra)
    return await _answer(request, panel)


async def autocomplete(request: web.Request) -> web.Response:
    """Churn by rank x depth and the nmi timeline with shocks, for a crawl id prefix ('' = all)."""
    authorize(request, "read")
    params = (("study", request.query.get("study", "")), ("engine", request.query.get("engine", "")))
    return await _answer(request, Panel("autocomplete", params))


async def personalization(request: web.Request) -> web.Response:
    """Per-rank change against the noise floor for one study."""
    authorize(request, "read")
    return await _answer(request, Panel("personalization", (("study_id", request.match_info["study_id"]),)))


async def alerts(request: web.Request) -> web.Response:
    """The newest alerts first."""
    authorize(request, "read")
    return await _answer(request, Panel("alerts", (("limit", _int_param(request, "limit", 50, 1, 500)),)))


ComputeFn = Callable[[Panel], Awaitable[Any]]
COMPUTE: web.AppKey[ComputeFn] = web.AppKey("board_compute")
"""Computes any panel where the board computes (``POST /v1/reports/experiment`` uses it too)."""
RestoreFn = Callable[[str, str], Awaitable[None]]
RESTORE_LOOKS: web.AppKey[RestoreFn] = web.AppKey("restore_looks")
"""Stores a study's decision-line looks anew where the board computes (``looks_job``): the
import and erasure call it after they wrote past days."""


def _refresher(
    settings: Settings, store: Store, in_process: bool
) -> tuple[ComputeFn, Callable[[], str], ComputeProcess | None]:
    """How panels are computed: in a child process (or here, for a store given in code);
    then whether that process has started and warmed up, and the process itself."""
    if in_process:
        compute.use_targets(settings)

        async def here(panel: Panel) -> Any:
            return await compute.compute(store, panel)

        return here, lambda: "ready", None
    child = ComputeProcess(settings)
    return child, child.state, child


def _restorer(store: Store, child: ComputeProcess | None) -> RestoreFn:
    """``looks_job.restore`` in the compute process, or here when panels are computed here."""

    async def restore(experiment_id: str, engine: str) -> None:
        if child is None:
            await looks_job.restore(store, experiment_id, engine)
        else:
            await child.run(looks_job.restore_in_child, experiment_id, engine)

    return restore


def add_routes(app: web.Application, settings: Settings, store: Store, in_process: bool) -> None:
    """The board's routes; ``in_process`` computes panels in this process (a store given in
    code, which a child process could not reach), otherwise in a child process."""
    app[COMPUTE], app[BOARD_STATE], child = _refresher(settings, store, in_process)
    app[RESTORE_LOOKS] = _restorer(store, child)
    app[REFRESHER] = BoardRefresher(app[COMPUTE], REFRESH_S, slower=SLOWER_REFRESH_S, quiet_s=QUIET_S)
    app[ASSET_FILES] = load_assets()

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        yield
        await stop_deadline.stage("board refresher", app[REFRESHER].close)
        if child is not None:
            await stop_deadline.stage("board's compute process", child.shutdown)

    app.cleanup_ctx.append(lifetime)
    app.router.add_get("/", to_board)
    app.router.add_get("/board", page)
    app.router.add_get("/board/static/{name}", asset)
    app.router.add_get("/v1/board/index", index)
    app.router.add_get("/v1/board/experiments/{experiment_id}", experiment)
    app.router.add_get("/v1/board/autocomplete", autocomplete)
    app.router.add_get("/v1/board/personalization/{study_id}", personalization)
    app.router.add_get("/v1/board/alerts", alerts)
