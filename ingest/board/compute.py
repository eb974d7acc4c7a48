"""What each board panel shows, computed from the store: the board's only heavy work.

A ``Panel`` names one answer (an endpoint and its parameters); panels only read. ``compute`` runs the
panel's statements through a store and turns the rows into the JSON the page draws, with
the same report code as ``auditstream report``. ``in_child`` is the entry point of the
board's compute process (``refresher.BoardRefresher`` runs it there): it keeps one store
and one event loop for the life of the process, and the bootstrap weight cache with them,
so the ingest process itself never spends a moment on a bootstrap.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from analytics.stats.reweight import Targets, read_targets, targets_from_rows
from core.lifetime import exit_with_parent
from core.settings import Settings
from core.store import Store, StoreError, StoreUnavailable, open_store
from ingest.board import panels, queries
from ingest.board.results import Results, data_version
from schemas.experiments import ExperimentConfig
from studies.arrangement.answers import INTERVAL_GUARANTEES, figure3_json
from studies.arrangement.read.markets import run_market_health
from studies.arrangement.read.report import report_json, run_experiment_report
from studies.arrangement.read.timeline import run_timeline_records
from studies.arrangement.selection import ReportQuery, default_preprocessing, parse_moment, parse_window
from studies.arrangement.tables import BOX_BASELINE, BOX_RANKS, LEVEL

log = logging.getLogger(__name__)
T = TypeVar("T")

RESULTS = Results()
"""Reports of the compute process, kept while their study's data stands (``results``)."""
SEED = 0
"""The bootstrap seed of ``auditstream report experiment`` (its default), so the numbers agree."""


@dataclass(frozen=True)
class Panel:
    """One board answer: ``kind`` is the endpoint, ``params`` its validated parameters."""

    kind: str
    params: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str) -> Any:
        return dict(self.params)[name]


class PanelFailed(Exception):
    """The store refused one of the board's own statements (a bug, logged)."""


async def _rows(store: Store, sql: str) -> list[dict[str, Any]]:
    try:
        return (await store.query(sql, read_only=True)).dicts()
    except StoreError as exc:
        raise PanelFailed(str(exc)[:500]) from None


async def _named(store: Store, statements: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    results = await asyncio.gather(*(_rows(store, sql) for sql in statements.values()))
    return dict(zip(statements, results, strict=True))


async def _index(store: Store, panel: Panel) -> dict[str, Any]:
    got = await _named(
        store,
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


async def _preprocessing(store: Store, p: dict[str, Any]) -> tuple[int, str]:
    """The burn-in and units of a report: as asked, else ``default_preprocessing`` (the
    registry is read only when one is unset), so the board and ``report experiment`` agree."""
    burn_in_days, unit_mode = p["burn_in_days"], p["unit_mode"]
    if burn_in_days is None or unit_mode is None:
        registry = await _rows(store, queries.registry_sql(p["experiment_id"]))
        burn, unit = default_preprocessing(registry[0] if registry else None)
        burn_in_days = burn if burn_in_days is None else burn_in_days
        unit_mode = unit if unit_mode is None else unit_mode
    return burn_in_days, unit_mode


async def _experiment(store: Store, panel: Panel) -> dict[str, Any]:
    experiment_id, engine, ranks = panel.get("experiment_id"), panel.get("engine"), panel.get("ranks")
    intervals = panel.get("intervals")
    # the family's correction (Holm unless asked otherwise: the board shows every arm's gap
    # at every rank, all at once) and the variance-reduced estimates (asked for only); the
    # route names them only when they are not these defaults, so the warm-up's panel is
    # the board's first view
    asked = dict(panel.params)
    correction = asked.get("correction", "holm")
    variance_reduction = bool(asked.get("variance_reduction", False))
    registry = await _rows(store, queries.registry_sql(experiment_id))
    config = registry[0] if registry else None
    burn_in_days, unit_mode = default_preprocessing(config)
    query = ReportQuery(experiment_id, engine, burn_in_days=burn_in_days, unit_mode=unit_mode)
    statements = queries.experiment_sql(query)
    targets = TARGETS["board"]
    try:
        report = await RESULTS.get(
            ("experiment", query, ranks, intervals, repr(targets), correction, variance_reduction),
            lambda: data_version(
                store, experiment_id, engine, targets is not None, intervals == "sequential", planted=True
            ),
            lambda: run_experiment_report(
                store,
                query,
                ranks,
                SEED,
                "control",
                intervals,
                targets,
                LEVEL,
                correction,
                None,  # the default family: delta of every arm at every rank shown
                variance_reduction,
            ),
        )
    except StoreError as exc:
        raise PanelFailed(str(exc)[:500]) from None
    decisions = report.decisions if intervals == "sequential" and report.figure3 else None
    srm_alerts = await _rows(store, statements["srm_alerts"])
    drops = panels.drops_panel(report.drops)
    # the arms this engine runs (an experiment may run fewer on some engines)
    allocation = ExperimentConfig.model_validate_json(config["config"]).arms_on(engine) if config else None
    return {
        "experiment_id": experiment_id,
        "engine": engine,
        "burn_in_days": query.burn_in_days,
        "unit_mode": query.unit_mode,
        "seed": SEED,
        "registry_status": config["status"] if config else None,
        "figure3": figure3_json(report.unweighted or report.figure3, ranks, "control"),
        "weighted": (
            {"figure3": figure3_json(report.figure3, ranks, "control"), **(report.reweighting or {})}
            if report.reweighting is not None
            else None
        ),
        "intervals": intervals,
        "interval_guarantee": INTERVAL_GUARANTEES[intervals],
        "decisions": decisions,
        "correction": correction,
        "corrections": report.corrections,
        "variance_reduction": report.variance_reduction,
        "element_shares": panels.shares_json(report.shares),
        "box_subset": figure3_json(report.box, BOX_RANKS, BOX_BASELINE),
        "drops": drops,
        "srm": panels.srm_panel(drops, allocation, srm_alerts),
        "markets": await _markets_panel(store, query),
        "warnings": report.warnings,
    }


async def _autocomplete(store: Store, panel: Panel) -> dict[str, Any]:
    study, engine = panel.get("study"), panel.get("engine")
    got = await _named(store, queries.autocomplete_sql(study, engine))
    return {
        "study": study,
        "engine": engine,
        "churn": panels.churn_panel(got["churn"]),
        "nmi": panels.nmi_panel(got["nmi"]),
    }


async def _personalization(store: Store, panel: Panel) -> dict[str, Any]:
    study_id = panel.get("study_id")
    got = await _named(store, queries.personalization_sql(study_id))
    return {"study_id": study_id, **panels.personalization_panel(got["by_rank"], got["rounds"])}


async def _alerts(store: Store, panel: Panel) -> dict[str, Any]:
    return {"alerts": panels.alerts_panel(await _rows(store, queries.alerts_sql(panel.get("limit"))))}


async def _report(store: Store, panel: Panel) -> dict[str, Any]:
    """``report experiment``: one report for the selection in ``panel`` (see ingest/reports.py)."""
    p = dict(panel.params)
    p["burn_in_days"], p["unit_mode"] = await _preprocessing(store, p)
    query = ReportQuery(
        p["experiment_id"],
        p["engine"],
        p["burn_in_days"],
        not p["include_unidentified"],
        p["subset"],
        parse_moment(p["since"]) if p["since"] else None,
        parse_moment(p["until"]) if p["until"] else None,
        p["unit_mode"],
    )
    intervals = p.get("intervals", "bootstrap")
    try:
        targets = targets_from_rows([dict(t) for t in p["targets"]]) if p.get("targets") else None
        return await RESULTS.get(
            ("report", repr(sorted(p.items()))),
            lambda: data_version(
                store,
                query.experiment_id,
                query.engine,
                bool(targets),
                intervals == "sequential",
                planted=True,
            ),
            lambda: _report_json(store, query, p, intervals, targets),
        )
    except StoreError as exc:
        raise PanelFailed(str(exc)[:500]) from None


async def _report_json(
    store: Store, query: ReportQuery, p: dict[str, Any], intervals: str, targets: Targets | None
) -> dict[str, Any]:
    report = await run_experiment_report(
        store,
        query,
        p["ranks"],
        p["seed"],
        p["baseline"],
        intervals,
        targets,
        p.get("level", LEVEL),
        p.get("correction", "none"),
        p.get("family"),
        bool(p.get("variance_reduction")),
    )
    if p.get("by_market"):
        window = query.window()
        report = replace(report, markets=await run_market_health(store, *_study(query), window))
    return {
        **report_json(report),
        "engine": query.engine,
        "subset": query.subset,
        "burn_in_days": query.burn_in_days,
        "unit_mode": query.unit_mode,
    }


def _study(query: ReportQuery) -> tuple[str, str, int]:
    return query.experiment_id, query.engine, query.burn_in_days


MARKETS_EVERY_S = 60.0
"""The board's per-market panel reads the study's raw events: at most once a minute."""
_markets: dict[tuple[str, str, int], tuple[float, list[dict[str, Any]]]] = {}


async def _markets_panel(store: Store, query: ReportQuery) -> list[dict[str, Any]]:
    key = _study(query)
    now = time.monotonic()
    cached = _markets.get(key)
    if cached is None or now - cached[0] > MARKETS_EVERY_S:
        rows = panels.clean_rows(await run_market_health(store, *key, (None, None)))
        cached = _markets[key] = (now, rows)
    return cached[1]


async def _timeline(store: Store, panel: Panel) -> dict[str, Any]:
    """``report timeline``: one table per window (see ingest/reports.py)."""
    p = dict(panel.params)
    p["burn_in_days"], p["unit_mode"] = await _preprocessing(store, p)
    query = ReportQuery(
        p["experiment_id"],
        p["engine"],
        p["burn_in_days"],
        True,
        p["subset"],
        parse_moment(p["since"]) if p["since"] else None,
        parse_moment(p["until"]) if p["until"] else None,
        p["unit_mode"],
    )
    window_s = parse_window(p["window"])

    async def document() -> dict[str, Any]:
        # the finished document is what is kept: at 720 windows, building it took longer
        # than reading the cached tables
        windows = await run_timeline_records(store, query, window_s, p["seed"], p["baseline"])
        return {
            "window_seconds": window_s,
            "baseline": p["baseline"],
            "burn_in_days": query.burn_in_days,
            "unit_mode": query.unit_mode,
            "windows": [
                {"window_start": datetime.fromtimestamp(start, UTC).isoformat(), "arms": records}
                for start, records in windows
            ],
        }

    try:
        return await RESULTS.get(
            ("timeline", repr(sorted(p.items()))),
            lambda: data_version(store, query.experiment_id, query.engine, False, False, hours=True),
            document,
        )
    except StoreError as exc:
        raise PanelFailed(str(exc)[:500]) from None


KINDS = {
    "report": _report,
    "timeline": _timeline,
    "index": _index,
    "experiment": _experiment,
    "autocomplete": _autocomplete,
    "personalization": _personalization,
    "alerts": _alerts,
}


async def compute(store: Store, panel: Panel) -> dict[str, Any]:
    """The JSON of one panel (``StoreUnavailable`` and ``PanelFailed`` propagate)."""
    return await KINDS[panel.kind](store, panel)


_CHILD: dict[str, Any] = {}


STORE_FIELDS = ("clickhouse_url", "store_url", "data_dir", "targets_file")


def store_settings(settings: Settings) -> dict[str, Any]:
    """What the compute process needs to reach the same store (the token in clear: it
    travels to a child process, never to a log or a file)."""
    return {
        **settings.model_dump(include=set(STORE_FIELDS)),
        "store_token": settings.store_token.get_secret_value(),
    }


def child_init(store_fields: dict[str, Any]) -> None:
    """Start of the compute process: its own loop and store, kept for its life (which ends
    with the ingest process that started it)."""
    exit_with_parent()
    _no_huge_pages()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    _CHILD["loop"] = loop
    settings = Settings(**store_fields)
    _CHILD["store"] = open_store(settings)
    use_targets(settings)


def _no_huge_pages() -> None:
    """Stop numpy asking the kernel for transparent huge pages for its large arrays (what
    ``NUMPY_MADVISE_HUGEPAGE=0`` does at import; this process imported numpy already).

    With the kernel's THP defrag set to ``madvise`` (Debian's default), each first touch of
    such an array may wait for the kernel to compact memory: after a start, the first
    report of a large study was slower in-process with them than without, and later reports
    and timelines were no slower without (bench/README.md, "Figures behind the code")."""
    import numpy as np

    setter = getattr(getattr(np, "_core", None), "multiarray", None)
    if setter is not None and hasattr(setter, "_set_madvise_hugepage"):
        setter._set_madvise_hugepage(False)


TARGETS: dict[str, Targets | None] = {"board": None}
"""The target population the board reweights to (``AUDITSTREAM_TARGETS_FILE``), if any."""


def use_targets(settings: Settings) -> None:
    """Read the configured target file once (a bad file is logged and ignored: the board
    still shows the panel's own numbers)."""
    if settings.targets_file is None:
        return
    try:
        TARGETS["board"] = read_targets(settings.targets_file.read_text())
    except (OSError, ValueError) as exc:
        log.error("targets file %s not used: %s", settings.targets_file, exc)


def ready() -> bool:
    """Nothing: submitted once so that the compute process starts (``child_init``) early."""
    return True


WARM_INSTALLS = 1_000_000
"""At most this many installs get their bootstrap weights computed at start (the cache's size)."""
FIGURE3_RANKS = 6
"""The board's experiment panel shows Figure 3 for this many positions unless asked otherwise."""
BOARD_INTERVALS = "sequential"
"""The board's intervals unless asked otherwise: it is watched, so they must hold at every look."""
WARM_PANELS = 3
"""The experiment panels (experiment x engine, most recently active first) computed at start."""


def warm_up() -> int:
    """Submitted after ``ready``: the bootstrap weights of the installs the store holds, the
    first Arrow read through the store, then the board's experiment panel of the most
    recently active studies, done before anyone asks. After a restart the first report of a
    large study spent seconds on the weights, and the first report after them still took
    longer than the next (the store's and numpy's first touch of the study's rows;
    bench/README.md, "Figures behind the code"); the panels also leave the board's first
    view cached. Returns the installs warmed; a store that does not answer yet is not an
    error (nothing is warmed)."""
    loop: asyncio.AbstractEventLoop = _CHILD["loop"]
    try:
        warmed = loop.run_until_complete(_warm(_CHILD["store"]))
        panels = loop.run_until_complete(_warm_panels(_CHILD["store"]))
    except (StoreError, StoreUnavailable, PanelFailed) as exc:
        log.info("compute process: nothing warmed (%s)", str(exc)[:200])
        return 0
    log.info("compute process: bootstrap weights of %d installs and %d panels ready", warmed, panels)
    return warmed


def experiment_panel(
    experiment_id: str, engine: str, ranks: int = FIGURE3_RANKS, intervals: str = BOARD_INTERVALS
) -> Panel:
    """The board's experiment panel, named alike by its route and by the warm-up."""
    params = {"experiment_id": experiment_id, "engine": engine, "ranks": ranks, "intervals": intervals}
    return Panel("experiment", tuple(params.items()))


async def _warm_panels(store: Store) -> int:
    """The board's experiment panel (its defaults) for the ``WARM_PANELS`` most recently
    active experiment and engine pairs; returns how many were computed."""
    activity = await _rows(store, queries.EXPERIMENT_ACTIVITY_SQL)
    recent = sorted(activity, key=lambda r: (str(r["last_day"]), str(r["experiment_id"])), reverse=True)
    pairs = [(str(r["experiment_id"]), str(g)) for r in recent for g in r["engines"]][:WARM_PANELS]
    done = 0
    for experiment_id, engine in pairs:
        try:
            await compute(store, experiment_panel(experiment_id, engine))
        except PanelFailed as exc:
            log.warning("compute process: panel of %s/%s not warmed: %s", experiment_id, engine, exc)
            continue
        done += 1
    return done


async def _warm(store: Store) -> int:
    import pyarrow.compute  # noqa: F401  (the reports' first use)

    from analytics.stats.bootstrap import install_key_sql, weights_for_keys
    from studies.arrangement.tables import REPLICATES

    table = await store.query_arrow(
        f"SELECT DISTINCT {install_key_sql('install_id', SEED)} AS install_key "
        f"FROM agg_arrangement_install LIMIT {WARM_INSTALLS}"
    )
    keys = table.column("install_key").to_numpy()
    weights_for_keys(keys, REPLICATES, SEED)
    return int(keys.size)


def in_child(panel: Panel) -> dict[str, Any]:
    """One panel, computed in the compute process."""
    return run_in_child(compute, panel)


def run_in_child(work: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``work(store, *args)`` on the compute process's own loop and store."""
    loop: asyncio.AbstractEventLoop = _CHILD["loop"]
    return loop.run_until_complete(work(_CHILD["store"], *args))
