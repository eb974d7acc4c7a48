"""Run autocomplete crawls as ``crawl autocomplete`` does: plan, then one crawl or a schedule of them.

The command line only parses options and prints; deciding which crawl to run (a new one,
an unfinished one of the same roots and engines, or ``--resume``) and running it, once
or on a schedule, happens here, where it can be tested without a terminal.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, time
from pathlib import Path
from typing import Any

from collectors.autocomplete import schedule
from collectors.autocomplete.crawler import CrawlSummary, ProgressHook, check_params, run_crawl
from collectors.autocomplete.engines import EngineAdapter, resolve
from collectors.autocomplete.politeness import Politeness
from collectors.autocomplete.state import CrawlJournal, CrawlParams, CrawlStore, read_roots
from collectors.common.archive import Archive
from collectors.common.endpoints import parse_pairs
from collectors.common.exceptions import CrawlConfigError
from collectors.common.sinks import EventSink

_STUDY = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,40}")


def new_crawl_id(now: datetime | None = None, study: str = "ac") -> str:
    """``<study>-<UTC time>-<4 hex>``: one id for every root and engine of a round."""
    return f"{study}-{(now or datetime.now(UTC)):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


@dataclass(frozen=True)
class CrawlRequest:
    """What the person asked for (the command's options, by the same names)."""

    roots: Path | None = None
    engine: str = "google,bing"
    format_: Sequence[str] = ()
    max_depth: int = 8
    node_cap: int = 2000
    schedule: str | None = None
    endpoint: Sequence[str] = ()
    resume: str | None = None
    fresh: bool = False
    crawl_id: str | None = None
    lang: str = "en"
    market: str = "en-US"
    trimming_rule: str = "first_last_word"
    study: str = "ac"

    @classmethod
    def of(cls, options: Mapping[str, Any]) -> CrawlRequest:
        """From the command's options (others are ignored; None lists become empty)."""
        given = {f.name: options[f.name] for f in fields(cls) if f.name in options}
        for name in ("format_", "endpoint"):
            given[name] = tuple(given.get(name) or ())
        return cls(**given)


def politeness_of(options: Mapping[str, Any]) -> Politeness:
    """The crawl's limits from the command's options."""
    cooldown = float(options["breaker_cooldown"])
    return Politeness(
        rate=options["rate"],
        jitter=options["jitter"],
        concurrency=options["concurrency"],
        max_retries=options["retries"],
        backoff_base=options["backoff"],
        backoff_max=options["backoff_max"],
        timeout_s=options["timeout"],
        breaker_threshold=options["breaker_threshold"],
        breaker_cooldown_s=cooldown,
        breaker_max_cooldown_s=max(cooldown * 8, cooldown),
        seed=options["seed"],
    )


@dataclass
class CrawlPlan:
    """The crawl to run now (None: only scheduled ones), the template of scheduled crawls,
    the schedule, and the endpoint overrides."""

    first: CrawlJournal | None
    template: CrawlParams
    times: tuple[time, ...] | None
    endpoints: dict[str, str]


def plan_crawl(request: CrawlRequest, store: CrawlStore) -> CrawlPlan:
    """Decide what to run; every mistake in the request is a ``CrawlConfigError`` here,
    before any request is sent (a bad endpoint too)."""
    if not _STUDY.fullmatch(request.study):
        raise CrawlConfigError(
            "--study: letters, digits, '_', '.', '-' (at most 41), starting with a letter or digit"
        )
    endpoints = parse_pairs(list(request.endpoint), "endpoint", "=")
    times = schedule.parse_schedule(request.schedule) if request.schedule else None
    if times and (request.crawl_id or request.resume):
        raise CrawlConfigError("--schedule starts a new crawl id every round: drop --crawl-id/--resume")
    if request.resume:
        first: CrawlJournal | None = store.open(request.resume)
        assert first is not None
        template = first.params
    else:
        if request.roots is None:
            raise CrawlConfigError("pass --roots FILE (or --resume CRAWL_ID)")
        engines = [e.strip() for e in request.engine.split(",") if e.strip()]
        chosen = resolve(engines, parse_pairs(list(request.format_), "format", ":"), endpoints)
        template = CrawlParams(
            crawl_id=request.crawl_id or new_crawl_id(study=request.study),
            roots=read_roots(request.roots.read_text(encoding="utf-8").splitlines()),
            engines=tuple((a.engine, a.format) for a in chosen),
            max_depth=request.max_depth,
            node_cap=request.node_cap or None,
            trimming_rule=request.trimming_rule,
            lang=request.lang,
            market=request.market,
            study=request.study,
        )
        check_params(template)
        unfinished = None if request.fresh else store.find_unfinished(template.fingerprint)
        first = store.open(unfinished.params.crawl_id) if unfinished else None
        if first is None and not times:
            first = store.create(template)
    if first is not None:
        adapters_for(first, endpoints)  # a bad --endpoint fails now, not mid-crawl
    return CrawlPlan(first, template, times, endpoints)


def adapters_for(journal: CrawlJournal, endpoints: dict[str, str]) -> list[EngineAdapter]:
    p = journal.params
    return resolve(
        [e for e, _ in p.engines],
        dict(p.engines),
        endpoints,
        lang=p.lang,
        market=p.market,
        crawl_id=p.crawl_id,
    )


@dataclass
class CrawlHooks:
    """What the caller sees of a run: each crawl as it starts and ends, progress, notes."""

    started: Callable[[CrawlJournal], None] = lambda journal: None
    finished: Callable[[CrawlSummary], None] = lambda summary: None
    already_done: Callable[[CrawlJournal], None] = lambda journal: None
    progress: Callable[[], Any] | None = None
    """A context manager factory yielding a progress callback (or None)."""
    notify: Callable[[str], None] = lambda message: None


async def run_planned(
    plan: CrawlPlan,
    store: CrawlStore,
    *,
    sink: EventSink,
    politeness: Politeness,
    archive_dir: Path,
    hooks: CrawlHooks,
) -> None:
    """Run the planned crawl, then (with a schedule) a new crawl at every scheduled time until
    cancelled. The sink is closed at the end."""

    async def one(journal: CrawlJournal) -> None:
        with journal:
            if journal.finished_at:
                hooks.already_done(journal)
                return
            hooks.started(journal)
            summary = await _crawl(
                journal, adapters_for(journal, plan.endpoints), archive_dir, sink, politeness, hooks
            )
        hooks.finished(summary)

    try:
        if plan.first is not None:
            await one(plan.first)
        if plan.times:

            async def job(at: datetime) -> None:
                now = datetime.now(UTC)
                params = replace(
                    plan.template, crawl_id=new_crawl_id(now, plan.template.study), created_at=now.isoformat()
                )
                await one(store.create(params))

            await schedule.run_on_schedule(plan.times, job, notify=hooks.notify)
    finally:
        await sink.aclose()


async def _crawl(
    journal: CrawlJournal,
    adapters: list[EngineAdapter],
    archive_dir: Path,
    sink: EventSink,
    politeness: Politeness,
    hooks: CrawlHooks,
) -> CrawlSummary:
    async def run(on_progress: ProgressHook | None) -> CrawlSummary:
        return await run_crawl(
            journal,
            adapters,
            archive=Archive(archive_dir),
            sink=sink,
            politeness=politeness,
            on_progress=on_progress,
            notify=hooks.notify,
        )

    if hooks.progress is None:
        return await run(None)
    with hooks.progress() as on_progress:
        return await run(on_progress)
