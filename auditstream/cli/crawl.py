"""``auditstream crawl``: autocomplete crawls (RAI): run, list and re-parse.

State (journal per crawl) lives under ``<data-dir>/autocomplete/state`` and raw
responses under ``<data-dir>/autocomplete/archive`` unless given elsewhere.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from auditstream.cli.common import DataDir, console, fail, load_settings

if TYPE_CHECKING:
    from collectors.autocomplete.crawler import CrawlSummary
    from collectors.autocomplete.engines import EngineAdapter
    from collectors.autocomplete.politeness import Politeness
    from collectors.autocomplete.sinks import EventSink
    from collectors.autocomplete.state import CrawlJournal

F = TypeVar("F", bound=Callable[..., Any])
app = typer.Typer(help="Autocomplete crawls (RAI): run, list and re-parse.", no_args_is_help=True)

StateDir = Annotated[
    Path | None, typer.Option("--state-dir", help="Crawl journals (default DATA_DIR/autocomplete/state)")
]
ArchiveDir = Annotated[
    Path | None,
    typer.Option("--archive-dir", help="Raw responses (default DATA_DIR/autocomplete/archive)"),
]
Url = Annotated[str, typer.Option(help="Base URL of ingest")]
ApiKey = Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")]


def _reflowed(fn: F) -> F:
    """Join the lines of each docstring paragraph: typer's help keeps single line breaks."""
    paragraphs = inspect.cleandoc(fn.__doc__ or "").split("\n\n")
    fn.__doc__ = "\n\n".join(" ".join(p.split()) for p in paragraphs)
    return fn


def _dirs(data_dir: Path | None, state_dir: Path | None, archive_dir: Path | None) -> tuple[Path, Path]:
    base = load_settings(data_dir=data_dir).data_dir / "autocomplete"
    return state_dir or base / "state", archive_dir or base / "archive"


def _setup_logging(level: str) -> None:
    """Log through the rich console, so lines print above the progress bars."""
    from rich.logging import RichHandler

    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.WARNING),
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False)],
    )


def _sink(out: Path | None, url: str, api_key: str | None) -> EventSink:
    from collectors.autocomplete.sinks import IngestSink, JsonlSink

    if out is not None:
        return JsonlSink(out)
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key (or set AUDITSTREAM_API_KEY), or write events to a file with --out", 2)
    return IngestSink(url, key)


def new_crawl_id(now: datetime | None = None) -> str:
    """``ac-<UTC time>-<4 hex>``: one id for every root and engine of a round."""
    return f"ac-{(now or datetime.now(UTC)):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, str, int, int], None] | None]:
    """A rich progress bar per (engine, root); its total grows as the crawl discovers nodes."""
    if not enabled:
        yield None
        return
    bars: dict[tuple[str, str], TaskID] = {}
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as progress:

        def update(engine: str, root: str, done: int, known: int) -> None:
            if (engine, root) not in bars:
                bars[engine, root] = progress.add_task(f"{engine} {root}"[:48], total=known)
            progress.update(bars[engine, root], completed=done, total=known)

        yield update


def _print_summary(summary: CrawlSummary) -> None:
    table = Table(title=f"crawl {summary.crawl_id}", title_justify="left")
    for col in ("engine", "root", "nodes", "edges", "failed", "statuses", "done"):
        table.add_column(col)
    for r in summary.roots:
        statuses = " ".join(f"{k}={v}" for k, v in sorted(r.statuses.items()))
        done = ("yes" + (" (capped)" if r.capped else "")) if r.completed else "no"
        table.add_row(r.engine, r.root, str(r.n_nodes), str(r.n_edges), str(r.n_failed), statuses, done)
    console.print(table)
    opened = {e: n for e, n in summary.breaker_opened.items() if n}
    if opened:
        console.print(f"[yellow]circuit breaker opened: {opened}")
    console.print(f"requests: {summary.requests}")


async def _run_one(
    journal: CrawlJournal,
    adapters: list[EngineAdapter],
    archive_dir: Path,
    sink: EventSink,
    politeness: Politeness,
    show_progress: bool,
) -> CrawlSummary:
    from collectors.autocomplete.archive import Archive
    from collectors.autocomplete.crawler import run_crawl

    def notify(message: str) -> None:
        console.print(f"[yellow]{message}")

    with _progress(show_progress) as on_progress:
        return await run_crawl(
            journal,
            adapters,
            archive=Archive(archive_dir),
            sink=sink,
            politeness=politeness,
            on_progress=on_progress,
            notify=notify,
        )


def _adapters(journal: CrawlJournal, endpoints: dict[str, str]) -> list[EngineAdapter]:
    from collectors.autocomplete.engines import resolve

    p = journal.params
    return resolve(
        [e for e, _ in p.engines],
        dict(p.engines),
        endpoints,
        lang=p.lang,
        market=p.market,
        crawl_id=p.crawl_id,
    )


def _describe(journal: CrawlJournal) -> str:
    done = sum(1 for _ in journal.of("node"))
    return f"crawl {journal.params.crawl_id} (started {journal.params.created_at}, {done} nodes done)"


@app.command()
@_reflowed
def autocomplete(
    roots: Annotated[
        Path | None,
        typer.Option(
            exists=True, dir_okay=False, help="File of root queries, one per line (# comments allowed)"
        ),
    ] = None,
    engine: Annotated[str, typer.Option(help="Engines, comma-separated: google, bing")] = "google,bing",
    format_: Annotated[
        list[str] | None,
        typer.Option(
            "--format",
            help="Response format per engine, e.g. google:firefox or bing:osjson "
            "(defaults: google:psy-ab, bing:as); repeatable or comma-separated",
        ),
    ] = None,
    max_depth: Annotated[int, typer.Option(help="Deepest level submitted (root = 0, max 16)")] = 8,
    node_cap: Annotated[int, typer.Option(help="Most nodes submitted per root (0 = no cap)")] = 2000,
    schedule: Annotated[
        str | None,
        typer.Option(help="Run a round at these UTC times of day, e.g. 09:00,18:00, until stopped"),
    ] = None,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(
            help="Base URL override, ENGINE[:FORMAT]=URL (a URL without path keeps the real path); repeatable"
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Append events to this JSON Lines file instead of posting them")
    ] = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKey = None,
    resume: Annotated[str | None, typer.Option(help="Resume this crawl id from its saved state")] = None,
    fresh: Annotated[
        bool, typer.Option(help="Start a new crawl even if one with the same roots/engines is unfinished")
    ] = False,
    crawl_id: Annotated[
        str | None, typer.Option(help="Id of the new crawl (default ac-<UTC time>-<hex>)")
    ] = None,
    lang: Annotated[str, typer.Option(help="Google hl= language")] = "en",
    market: Annotated[str, typer.Option(help="Bing mkt= market")] = "en-US",
    trimming_rule: Annotated[
        str, typer.Option(help="Trimming rule named in crawl_completed (applied downstream)")
    ] = "first_last_word",
    rate: Annotated[float, typer.Option(help="Requests per second per engine (0 = unlimited)")] = 1.0,
    jitter: Annotated[float, typer.Option(help="Extra random gap, as a fraction of 1/rate")] = 0.5,
    concurrency: Annotated[int, typer.Option(help="Requests in flight per engine")] = 2,
    retries: Annotated[int, typer.Option(help="Retries of 429/5xx/timeouts per node")] = 4,
    backoff: Annotated[float, typer.Option(help="First retry delay in seconds (doubles each retry)")] = 1.0,
    backoff_max: Annotated[float, typer.Option(help="Longest retry delay in seconds")] = 60.0,
    timeout: Annotated[float, typer.Option(help="Seconds per request")] = 10.0,
    breaker_threshold: Annotated[
        int, typer.Option(help="Consecutive blocked answers that pause an engine")
    ] = 5,
    breaker_cooldown: Annotated[float, typer.Option(help="Seconds an engine pauses when blocked")] = 300.0,
    seed: Annotated[int | None, typer.Option(help="Seed of the timing jitter")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar per root")] = True,
    data_dir: DataDir = None,
    state_dir: StateDir = None,
    archive_dir: ArchiveDir = None,
    log_level: Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR")] = "WARNING",
) -> None:
    """Breadth-first crawl of autocomplete suggestions from each root (RAI).

    Each suggestion is submitted as the next query up to --max-depth, never twice in a
    crawl; one autocomplete_node event per submitted node, between crawl_started and
    crawl_completed markers per (engine, root). All roots and engines of one run share
    one crawl id. Every answer is archived for `auditstream crawl reparse`.

    A crash or Ctrl-C keeps the journal: run the same command again (an unfinished
    crawl of the same roots and engines resumes automatically) or pass --resume ID.
    Nodes done before the interruption are not sent again, so resume with the same
    --out or --url (`auditstream crawl reparse` can re-send a whole crawl).
    """
    from collectors.autocomplete.crawler import check_params
    from collectors.autocomplete.engines import parse_pairs, resolve
    from collectors.autocomplete.exceptions import CrawlError
    from collectors.autocomplete.politeness import Politeness
    from collectors.autocomplete.schedule import parse_schedule, run_on_schedule
    from collectors.autocomplete.state import CrawlParams, CrawlStore, read_roots

    _setup_logging(log_level)
    states, archive_path = _dirs(data_dir, state_dir, archive_dir)
    store = CrawlStore(states)
    politeness = Politeness(
        rate=rate,
        jitter=jitter,
        concurrency=concurrency,
        max_retries=retries,
        backoff_base=backoff,
        backoff_max=backoff_max,
        timeout_s=timeout,
        breaker_threshold=breaker_threshold,
        breaker_cooldown_s=breaker_cooldown,
        breaker_max_cooldown_s=max(breaker_cooldown * 8, breaker_cooldown),
        seed=seed,
    )
    sink = _sink(out, url, api_key)
    try:
        endpoints = parse_pairs(endpoint or [], "endpoint", "=")
        times = parse_schedule(schedule) if schedule else None
        if times and (crawl_id or resume):
            raise fail("--schedule starts a new crawl id every round: drop --crawl-id/--resume", 2)
        first: CrawlJournal | None
        if resume:
            first = store.open(resume)
            template = first.params
        else:
            if roots is None:
                raise fail("pass --roots FILE (or --resume CRAWL_ID)", 2)
            engines = [e.strip() for e in engine.split(",") if e.strip()]
            formats = parse_pairs(format_ or [], "format", ":")
            chosen = resolve(engines, formats, endpoints)
            template = CrawlParams(
                crawl_id=crawl_id or new_crawl_id(),
                roots=read_roots(roots.read_text(encoding="utf-8").splitlines()),
                engines=tuple((a.engine, a.format) for a in chosen),
                max_depth=max_depth,
                node_cap=node_cap or None,
                trimming_rule=trimming_rule,
                lang=lang,
                market=market,
            )
            check_params(template)
            unfinished = None if fresh else store.find_unfinished(template.fingerprint)
            first = store.open(unfinished.params.crawl_id) if unfinished else None
            if first is None and not times:
                first = store.create(template)
        if first is not None:
            _adapters(first, endpoints)  # a bad --endpoint fails now, not mid-crawl
    except CrawlError as exc:
        raise fail(str(exc), 2) from None

    current = {"id": first.params.crawl_id if first else ""}

    async def run(journal: CrawlJournal) -> None:
        current["id"] = journal.params.crawl_id
        with journal:
            if journal.finished_at:
                console.print(f"{_describe(journal)} is already finished")
                return
            console.print(f"crawling: {_describe(journal)}")
            summary = await _run_one(
                journal, _adapters(journal, endpoints), archive_path, sink, politeness, progress
            )
        _print_summary(summary)

    async def main() -> None:
        try:
            if first is not None:
                await run(first)
            if times:

                async def job(at: datetime) -> None:
                    now = datetime.now(UTC)
                    params = replace(template, crawl_id=new_crawl_id(now), created_at=now.isoformat())
                    await run(store.create(params))

                await run_on_schedule(times, job, notify=lambda m: console.print(m))
        finally:
            await sink.aclose()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        where = f": resume with --resume {current['id']}" if current["id"] else ""
        console.print(f"[yellow]interrupted; state saved{where}")
        raise typer.Exit(130) from None
    except CrawlError as exc:
        raise fail(str(exc)) from None


@app.command("list")
def list_(
    data_dir: DataDir = None,
    state_dir: StateDir = None,
) -> None:
    """Saved crawls, oldest first, with their progress."""
    from collectors.autocomplete.state import CrawlStore

    states, _ = _dirs(data_dir, state_dir, None)
    table = Table()
    for col in ("crawl id", "created", "finished", "engines", "roots", "nodes", "completed roots"):
        table.add_column(col)
    for info in CrawlStore(states).list():
        kinds = Counter(r["kind"] for r in info.records())
        p = info.params
        table.add_row(
            p.crawl_id,
            p.created_at[:19],
            (info.finished_at or "")[:19],
            ",".join(f"{e}:{f}" for e, f in p.engines),
            str(len(p.roots)),
            str(kinds["node"]),
            f"{kinds['completed']}/{len(p.roots) * len(p.engines)}",
        )
    console.print(table)


@app.command()
@_reflowed
def reparse(
    crawl_id: Annotated[str, typer.Option("--crawl-id", help="The saved crawl to re-parse")],
    out: Annotated[str, typer.Option(help="Write corrected events as JSON Lines here (- = stdout)")] = "-",
    post: Annotated[bool, typer.Option(help="Post the events to ingest instead of writing them")] = False,
    as_crawl_id: Annotated[
        str | None,
        typer.Option(help="Emit under this new crawl id (new event ids) instead of the original"),
    ] = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKey = None,
    data_dir: DataDir = None,
    state_dir: StateDir = None,
    archive_dir: ArchiveDir = None,
) -> None:
    """Rebuild a crawl's events by re-parsing its archived responses with today's parsers.

    The crawled tree (queries, parents, depths) stays as crawled; each node's
    suggestions and status, and the markers' counts, are recomputed. Events keep their
    original event ids, so by default they are written as JSON Lines (to compare, or
    to load in place of the old rows). Posted with --post under the same ids, ingest
    keeps the first copy it stored, so that only fills in events that never arrived;
    to store corrected events, post them with --as-crawl-id NEW_ID (a new crawl with
    its own ids and markers).
    """
    from collectors.autocomplete.archive import Archive
    from collectors.autocomplete.exceptions import CrawlError
    from collectors.autocomplete.reparse import ReparseStats, reparse_events
    from collectors.autocomplete.sinks import IngestSink, JsonlSink
    from collectors.autocomplete.state import CrawlStore

    states, archive_path = _dirs(data_dir, state_dir, archive_dir)
    stats = ReparseStats()
    try:
        with CrawlStore(states).open(crawl_id) as journal:
            events = list(reparse_events(journal, Archive(archive_path), stats, as_crawl_id=as_crawl_id))
        if post:
            sink = _sink(None, url, api_key)
            assert isinstance(sink, IngestSink)

            async def send() -> None:
                for i in range(0, len(events), 500):
                    await sink.emit(events[i : i + 500])

            asyncio.run(send())
        else:
            JsonlSink(out).write(events)
    except CrawlError as exc:
        raise fail(str(exc), 2) from None
    for problem in stats.problems[:10]:
        console.print(f"[yellow]{problem}")
    console.print(
        f"re-parsed {stats.nodes} nodes: {stats.changed} changed, {stats.unarchived} kept as recorded "
        f"(no archived answer); {len(events)} events {'posted' if post else 'written'}"
    )
