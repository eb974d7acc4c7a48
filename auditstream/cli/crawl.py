"""``auditstream crawl``: autocomplete crawls (RAI) and SERP personalization studies.

State (journal per crawl or study) lives under ``<data-dir>/<kind>/state`` and raw
responses under ``<data-dir>/<kind>/archive`` (kind: ``autocomplete`` or ``serp``)
unless given elsewhere.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import statistics
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from auditstream.cli.common import DataDir, base_url, console, fail, load_settings, setup_logging
from auditstream.cli.safe_text import markup_safe, plain
from collectors.common.metrics import serve as serve_metrics

if TYPE_CHECKING:
    from collectors.autocomplete.crawler import CrawlSummary
    from collectors.autocomplete.runner import CrawlHooks, CrawlPlan
    from collectors.autocomplete.state import CrawlJournal, CrawlStore
    from collectors.common.sinks import EventSink
    from collectors.serp.crawler import RoundReport, StudySummary
    from collectors.serp.fetchers import BrowserOptions
    from collectors.serp.study import Study

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
app = typer.Typer(
    help="Autocomplete crawls (RAI) and lock-step SERP studies: run, list and re-parse.",
    no_args_is_help=True,
)

StateDir = Annotated[
    Path | None,
    typer.Option("--state-dir", help="Journals (default DATA_DIR/autocomplete/state, DATA_DIR/serp/state)"),
]
ArchiveDir = Annotated[
    Path | None,
    typer.Option(
        "--archive-dir", help="Raw responses (default DATA_DIR/autocomplete/archive, DATA_DIR/serp/archive)"
    ),
]
Url = Annotated[str, typer.Option(help="Base URL of ingest", callback=base_url)]
ApiKey = Annotated[str | None, typer.Option(help="Ingest key \\[env: AUDITSTREAM_API_KEY]")]


def _reflow(text: str) -> str:
    """Join the lines of each paragraph: typer's help keeps single line breaks."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


def _reflowed(fn: F) -> F:
    """A command whose docstring is its help, reflowed."""
    fn.__doc__ = _reflow(fn.__doc__ or "")
    return fn


def _dirs(
    data_dir: Path | None, state_dir: Path | None, archive_dir: Path | None, kind: str = "autocomplete"
) -> tuple[Path, Path]:
    base = load_settings(data_dir=data_dir).data_dir / kind
    return state_dir or base / "state", archive_dir or base / "archive"


def _setup_logging(level: str) -> None:
    """Log through the rich console, so lines print above the progress bars."""
    setup_logging(level, console)


def _sink(out: Path | None, url: str, api_key: str | None) -> EventSink:
    from collectors.common.sinks import IngestSink, JsonlSink

    if out is not None:
        return JsonlSink(out)
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key (or set AUDITSTREAM_API_KEY), or write events to a file with --out", 2)
    return IngestSink(url, key)


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
                # the description is read as markup ("[bold]{task.description}")
                bars[engine, root] = progress.add_task(markup_safe(f"{engine} {root}"[:48]), total=known)
            progress.update(bars[engine, root], completed=done, total=known)

        yield update


def _print_summary(summary: CrawlSummary) -> None:
    table = Table(title=plain(f"crawl {summary.crawl_id}"), title_justify="left")
    for col in ("engine", "root", "nodes", "edges", "failed", "statuses", "done"):
        table.add_column(col)
    for r in summary.roots:
        statuses = " ".join(f"{k}={v}" for k, v in sorted(r.statuses.items()))
        done = ("yes" + (" (capped)" if r.capped else "")) if r.completed else "no"
        done = "no: fetched nothing" if r.fetched_nothing else done
        table.add_row(*map(plain, (r.engine, r.root, r.n_nodes, r.n_edges, r.n_failed, statuses, done)))
    console.print(table)
    opened = {e: n for e, n in summary.breaker_opened.items() if n}
    if opened:
        console.print(f"[yellow]circuit breaker opened: {markup_safe(opened)}")
    console.print(f"requests: {summary.requests}")
    if (failed := summary.failed_roots) and len(failed) < len(summary.roots):
        names = markup_safe(", ".join(f"{r.engine} {r.root!r}" for r in failed[:10]))
        console.print(
            f"[yellow]{len(failed)} of {len(summary.roots)} roots fetched nothing (their own request "
            f"failed) and are not stored as completed: {names}"
        )


def _describe(journal: CrawlJournal) -> str:
    done = sum(1 for _ in journal.of("node"))
    crawl, started = markup_safe(journal.params.crawl_id), markup_safe(journal.params.created_at)
    return f"crawl {crawl} (started {started}, {done} nodes done)"


RootsOpt = Annotated[
    Path | None,
    typer.Option(exists=True, dir_okay=False, help="File of root queries, one per line (# comments allowed)"),
]
FormatOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--format",
        help="Response format per engine, e.g. google:firefox or bing:osjson (defaults: google:psy-ab, "
        "bing:as); repeatable or comma-separated",
    ),
]
EndpointOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Base URL override, ENGINE[:FORMAT]=URL (a URL without path keeps the real path); repeatable"
    ),
]
ScheduleOpt = Annotated[
    str | None, typer.Option(help="Run a round at these UTC times of day, e.g. 09:00,18:00, until stopped")
]
OutOpt = Annotated[
    Path | None, typer.Option(help="Append events to this JSON Lines file instead of posting them")
]
FreshOpt = Annotated[
    bool, typer.Option(help="Start a new crawl even if one with the same roots/engines is unfinished")
]
CrawlIdOpt = Annotated[str | None, typer.Option(help="Id of the new crawl (default ac-<UTC time>-<hex>)")]
TrimOpt = Annotated[
    str,
    typer.Option(help="Trimming rule named in crawl_completed: first_last_word, all_words, any_word, none"),
]
BreakerOpt = Annotated[int, typer.Option(help="Consecutive blocked answers that pause an engine")]
StudyOpt = Annotated[
    str,
    typer.Option(
        help="Name new crawl ids <study>-<UTC time>-<hex>, so `report autocomplete --study <study>-` selects "
        "them (also with --schedule)"
    ),
]
MetricsPortOpt = Annotated[
    int, typer.Option(help="Serve the crawler's Prometheus metrics on this port while it runs (0 = off)")
]
LogLevelOpt = Annotated[str, typer.Option(help="DEBUG, INFO, WARNING or ERROR")]


def _crawler_dirs(
    kind: str,
    log_level: str,
    metrics_port: int,
    data_dir: Path | None,
    state_dir: Path | None,
    archive_dir: Path | None,
) -> tuple[Path, Path]:
    """Logging and metrics set up for a crawl; its state and archive folders."""
    _setup_logging(log_level)
    serve_metrics(metrics_port)
    return _dirs(data_dir, state_dir, archive_dir, kind)


def _run_interruptible(work: Coroutine[Any, Any, R], interrupted: Callable[[], str]) -> R:
    """Run a crawl; Ctrl-C exits 130 saying how to resume, a crawl error exits 1."""
    from collectors.common.exceptions import CrawlError

    try:
        return asyncio.run(work)
    except KeyboardInterrupt:
        console.print(f"[yellow]interrupted; state saved{markup_safe(interrupted())}")
        raise typer.Exit(130) from None
    except CrawlError as exc:
        raise fail(str(exc)) from None


AUTOCOMPLETE_HELP = """Breadth-first crawl of autocomplete suggestions from each root (RAI).

Each suggestion is submitted as the next query up to --max-depth, never twice in a
crawl; one autocomplete_node event per submitted node, between crawl_started and
crawl_completed markers per (engine, root). All roots and engines of one run share
one crawl id. Every answer is archived for `auditstream crawl reparse`.

A root whose own request failed (offline, blocked) has nothing to crawl: it sends no
events and is not stored as completed, so reports and the board do not count it. If
no root fetched anything the command exits 1; if some did, it names the others and
exits 0 (their data is stored as completed). Run the command again for a new crawl.
Nodes that fail further down count as n_failed in their root's crawl_completed.

A crash or Ctrl-C keeps the journal: run the same command again (an unfinished
crawl of the same roots and engines resumes automatically) or pass --resume ID.
Nodes done before the interruption are not sent again, so resume with the same
--out or --url (`auditstream crawl reparse` can re-send a whole crawl).
"""


@app.command(help=_reflow(AUTOCOMPLETE_HELP))
def autocomplete(
    ctx: typer.Context,
    roots: RootsOpt = None,
    engine: Annotated[str, typer.Option(help="Engines, comma-separated: google, bing")] = "google,bing",
    format_: FormatOpt = None,
    max_depth: Annotated[int, typer.Option(help="Deepest level submitted (root = 0, max 16)")] = 8,
    node_cap: Annotated[int, typer.Option(help="Most nodes submitted per root (0 = no cap)")] = 2000,
    schedule: ScheduleOpt = None,
    endpoint: EndpointOpt = None,
    out: OutOpt = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKey = None,
    resume: Annotated[str | None, typer.Option(help="Resume this crawl id from its saved state")] = None,
    fresh: FreshOpt = False,
    crawl_id: CrawlIdOpt = None,
    lang: Annotated[str, typer.Option(help="Google hl= language")] = "en",
    market: Annotated[str, typer.Option(help="Bing mkt= market")] = "en-US",
    trimming_rule: TrimOpt = "first_last_word",
    rate: Annotated[float, typer.Option(help="Requests per second per engine (0 = unlimited)")] = 1.0,
    jitter: Annotated[float, typer.Option(help="Extra random gap, as a fraction of 1/rate")] = 0.5,
    concurrency: Annotated[int, typer.Option(help="Requests in flight per engine")] = 2,
    retries: Annotated[int, typer.Option(help="Retries of 429/5xx/timeouts per node")] = 4,
    backoff: Annotated[float, typer.Option(help="First retry delay in seconds (doubles each retry)")] = 1.0,
    backoff_max: Annotated[float, typer.Option(help="Longest retry delay in seconds")] = 60.0,
    timeout: Annotated[float, typer.Option(help="Seconds per request")] = 10.0,
    breaker_threshold: BreakerOpt = 5,
    breaker_cooldown: Annotated[float, typer.Option(help="Seconds an engine pauses when blocked")] = 300.0,
    seed: Annotated[int | None, typer.Option(help="Seed of the timing jitter")] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar per root")] = True,
    data_dir: DataDir = None,
    state_dir: StateDir = None,
    archive_dir: ArchiveDir = None,
    study: StudyOpt = "ac",
    metrics_port: MetricsPortOpt = 0,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Crawl autocomplete suggestions (the help is ``AUTOCOMPLETE_HELP``)."""
    from collectors.autocomplete import runner

    states, archive = _crawler_dirs("autocomplete", log_level, metrics_port, data_dir, state_dir, archive_dir)
    store, sink = runner.CrawlStore(states), _sink(out, url, api_key)
    plan = _plan_crawl(ctx.params, store)
    current = {"id": plan.first.params.crawl_id if plan.first else ""}
    limits, hooks = runner.politeness_of(ctx.params), _crawl_hooks(current, progress)
    work = runner.run_planned(plan, store, sink=sink, politeness=limits, archive_dir=archive, hooks=hooks)
    _run_interruptible(work, lambda: f": resume with --resume {current['id']}" if current["id"] else "")
    if current.get("fetched_nothing"):
        raise fail(_NOTHING_FETCHED.format(crawl=current["fetched_nothing"]))


def _plan_crawl(options: dict[str, Any], store: CrawlStore) -> CrawlPlan:
    """The crawl the options ask for; a mistake in them exits 2 before anything is sent."""
    from collectors.autocomplete.runner import CrawlRequest, plan_crawl
    from collectors.common.exceptions import CrawlError

    try:
        return plan_crawl(CrawlRequest.of(options), store)
    except CrawlError as exc:
        raise fail(str(exc), 2) from None


_NOTHING_FETCHED = (
    "crawl {crawl} fetched nothing: every request failed, so it is not stored as completed and "
    "reports will not count it. Is this machine online and the engine reachable (see the statuses "
    "above)? Run the command again for a new crawl."
)


def _crawl_hooks(current: dict[str, str], progress: bool) -> CrawlHooks:
    """What a terminal shows of a crawl run: start and end lines, tables, progress bars;
    ``current["fetched_nothing"]`` names the last crawl in which no root fetched anything."""
    from collectors.autocomplete.runner import CrawlHooks

    def started(journal: CrawlJournal) -> None:
        current["id"] = journal.params.crawl_id
        console.print(f"crawling: {_describe(journal)}")

    def already_done(journal: CrawlJournal) -> None:
        current["id"] = journal.params.crawl_id
        console.print(f"{_describe(journal)} is already finished")

    def finished(summary: CrawlSummary) -> None:
        _print_summary(summary)
        if len(summary.failed_roots) == len(summary.roots):
            current["fetched_nothing"] = summary.crawl_id
        else:
            current.pop("fetched_nothing", None)

    return CrawlHooks(
        started=started,
        finished=finished,
        already_done=already_done,
        progress=(lambda: _progress(True)) if progress else None,
        notify=lambda message: console.print(f"[yellow]{markup_safe(message)}"),
    )


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
        cells = (
            p.crawl_id,
            p.created_at[:19],
            (info.finished_at or "")[:19],
            ",".join(f"{e}:{f}" for e, f in p.engines),
            len(p.roots),
            kinds["node"],
            f"{kinds['completed']}/{len(p.roots) * len(p.engines)}"
            + (f" ({kinds['failed']} fetched nothing)" if kinds["failed"] else ""),
        )
        table.add_row(*map(plain, cells))
    console.print(table)


@app.command()
@_reflowed
def reparse(
    crawl_id: Annotated[
        str | None, typer.Option("--crawl-id", help="The saved autocomplete crawl to re-parse")
    ] = None,
    study: Annotated[
        str | None, typer.Option("--study", help="The saved SERP study (its id) to re-parse")
    ] = None,
    out: Annotated[str, typer.Option(help="Write corrected events as JSON Lines here (- = stdout)")] = "-",
    post: Annotated[bool, typer.Option(help="Post the events to ingest instead of writing them")] = False,
    as_crawl_id: Annotated[
        str | None,
        typer.Option(
            help="Emit under this new crawl (or study) id, so new event ids, instead of the original"
        ),
    ] = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKey = None,
    data_dir: DataDir = None,
    state_dir: StateDir = None,
    archive_dir: ArchiveDir = None,
) -> None:
    """Rebuild a crawl's events by re-parsing its archived responses with today's parsers.

    Autocomplete (--crawl-id): the crawled tree (queries, parents, depths) stays as
    crawled; each node's suggestions and status, and the markers' counts, are
    recomputed. SERP study (--study): the rounds, profiles and send times stay as
    crawled; each snapshot's status, result estimate and results are recomputed with
    the current rules files.

    Events keep their original event ids, so by default they are written as JSON Lines
    (to compare, or to load in place of the old rows). Posted with --post under the
    same ids, ingest keeps the first copy it stored, so that only fills in events that
    never arrived; to store corrected events, post them with --as-crawl-id NEW_ID (a
    new crawl or study with its own ids).
    """
    from collectors.common.archive import Archive
    from collectors.common.exceptions import CrawlError

    if (crawl_id is None) == (study is None):
        raise fail("pass exactly one of --crawl-id (autocomplete) or --study (SERP)", 2)
    states, archive_path = _dirs(data_dir, state_dir, archive_dir, "serp" if study else "autocomplete")
    try:
        if study is not None:
            summary, events = _reparse_serp(study, states, Archive(archive_path), as_crawl_id)
        else:
            assert crawl_id is not None
            summary, events = _reparse_autocomplete(crawl_id, states, Archive(archive_path), as_crawl_id)
        _deliver(events, post, out, url, api_key)
    except CrawlError as exc:
        raise fail(str(exc), 2) from None
    console.print(f"{markup_safe(summary)}; {len(events)} events {'posted' if post else 'written'}")


def _deliver(events: list[dict[str, Any]], post: bool, out: str, url: str, api_key: str | None) -> None:
    """Post re-parsed events to ingest (500 per request), or write them as JSON Lines."""
    from collectors.common.sinks import IngestSink, JsonlSink

    if not post:
        JsonlSink(out).write(events)
        return
    sink = _sink(None, url, api_key)
    assert isinstance(sink, IngestSink)

    async def send() -> None:
        for i in range(0, len(events), 500):
            await sink.emit(events[i : i + 500])

    asyncio.run(send())


def _reparse_autocomplete(
    crawl_id: str, states: Path, archive: Any, as_crawl_id: str | None
) -> tuple[str, list[dict[str, Any]]]:
    from collectors.autocomplete.reparse import ReparseStats, reparse_events
    from collectors.autocomplete.state import CrawlStore

    stats = ReparseStats()
    with CrawlStore(states).open(crawl_id) as journal:
        events = list(reparse_events(journal, archive, stats, as_crawl_id=as_crawl_id))
    for problem in stats.problems[:10]:
        console.print(f"[yellow]{markup_safe(problem)}")
    summary = (
        f"re-parsed {stats.nodes} nodes: {stats.changed} changed, {stats.unarchived} kept as recorded "
        "(no archived answer)"
    )
    return summary, events


def _reparse_serp(
    study_id: str, states: Path, archive: Any, as_study_id: str | None
) -> tuple[str, list[dict[str, Any]]]:
    from pydantic import ValidationError

    from collectors.common.exceptions import CrawlConfigError
    from collectors.serp.reparse import ReparseStats, reparse_events
    from collectors.serp.state import StudyStore

    stats = ReparseStats()
    with StudyStore(states).open_saved(study_id) as journal:
        try:
            events = list(reparse_events(journal, archive, stats, as_study_id=as_study_id))
        except ValidationError as exc:  # only a bad --as-crawl-id can make the recorded rounds invalid
            first = exc.errors(include_input=False)[0]
            raise CrawlConfigError(
                f"--as-crawl-id {as_study_id!r}: {first['loc'][0]}: {first['msg']}"
            ) from None
    for problem in stats.problems[:10]:
        console.print(f"[yellow]{markup_safe(problem)}")
    summary = (
        f"re-parsed {stats.snapshots} snapshots of {stats.rounds} rounds: {stats.changed} changed, "
        f"{stats.unarchived} kept as recorded (no archived page)"
    )
    return summary, events


def _print_round(report: RoundReport) -> None:
    statuses = Counter(report.statuses.values())
    text = markup_safe(" ".join(f"{k}={v}" for k, v in sorted(statuses.items())))
    colour = "" if set(statuses) == {"ok"} and not report.over_tolerance else "[yellow]"
    loaded = f", loaded within {report.load_skew_ms:.0f} ms" if report.load_skew_ms is not None else ""
    round_id, query = markup_safe(report.round_id), markup_safe(repr(report.query))
    console.print(
        f"{colour}{round_id} {query}: skew {report.skew_ms:.0f} ms{loaded} "
        f"(launch {report.launch_skew_ms:.1f} ms, {report.late_ms:+.1f} ms after the slot) {text}"
    )


def _print_study(summary: StudySummary) -> None:
    statuses = summary.statuses()
    columns = sorted({s for c in statuses.values() for s in c})
    table = Table(title=plain(f"study {summary.study_id}: rounds per status"), title_justify="left")
    for col in ("profile", *columns):
        table.add_column(plain(col))
    for profile, counts in statuses.items():
        table.add_row(plain(profile), *(str(counts[c]) for c in columns))
    if statuses:
        console.print(table)
    done = len(summary.rounds)
    skew = (
        f"skew median {summary.median_skew_ms:.0f} ms, max {summary.max_skew_ms:.0f} ms"
        if summary.rounds
        else "no rounds yet"
    )
    console.print(
        f"rounds: {done} recorded, {len(summary.missed)} missed, {len(summary.undelivered)} undelivered "
        f"of {summary.total_rounds}; {skew} (max sent_at - min sent_at per round)"
    )
    _print_pages(summary)
    console.print("finished" if summary.finished else "not finished: run the same command to resume")


def _print_pages(summary: StudySummary) -> None:
    """Load skew, consent walls, blocks and unknown layouts: what the operator should know."""
    if loads := summary.load_skews_ms:
        console.print(
            f"load skew median {statistics.median(loads):.0f} ms, max {max(loads):.0f} ms "
            "(when each profile's page had finished loading)"
        )
    if late := summary.over_tolerance:
        rounds = markup_safe(", ".join(late[:10]))
        console.print(f"[yellow]{len(late)} rounds over the study's skew tolerance: {rounds}")
    for profile, outcomes in sorted(summary.consent().items()):
        text = markup_safe(", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items())))
        console.print(f"consent walls met by {markup_safe(profile)}: {text}")
    for profile, steps in sorted(summary.history().items()):
        text = markup_safe(", ".join(f"{n} {status}" for status, n in sorted(steps.items())))
        colour = "" if set(steps) == {"ok"} else "[yellow]"
        console.print(f"{colour}history steps of {markup_safe(profile)}: {text}")
    blocks = {p: c["captcha"] + c["blocked"] for p, c in summary.statuses().items()}
    if blocks := {p: n for p, n in blocks.items() if n}:
        console.print(
            f"[yellow]CAPTCHA or block pages (not retried within their round): "
            f"{markup_safe(', '.join(f'{p} {n}' for p, n in sorted(blocks.items())))}"
        )
    if summary.unknown_layouts:
        console.print(
            f"[yellow]{summary.unknown_layouts} pages had a layout the SERP rules do not know "
            "(coverage below 0.8): their results may be incomplete. Fix collectors/serp/rules/ "
            "and re-parse the archived pages with `auditstream crawl reparse`."
        )


SERP_HELP = """Run a personalization study: every profile sends the same query at the same moment.

The study file declares the engine, the queries (run in order, one per round,
spaced by `spacing`, default 11 minutes), the profiles (one control, one
control_twin configured identically to measure noise, and treatments such as
logged_in or location=Boston, each with its own cookies, User-Agent, language and
proxy) and how long to run (days and/or rounds). Its format is documented in
collectors/serp/study.py; collectors/serp/examples/study.toml is an example.

Rounds sit on a fixed clock grid from the study's start: a slow profile fails
alone at the round deadline and never shifts the others or the next round. Each
round emits one serp_snapshot per profile with a shared round_id; sent_at is the
profile's request start, so max - min sent_at per round is the lock-step skew,
printed per round with the load skew (max - min of when each page had finished
loading) and summarized at the end; rounds over the study's skew_tolerance are
flagged. Pages are archived for `auditstream crawl reparse --study ID`.

Browser: with fetcher = "browser" in the study (pip install 'auditstream\\[browser]'),
each profile is a persistent Chromium profile under STATE_DIR/STUDY/browser/PROFILE
(cookies, user agent, language, viewport, time zone, proxy), kept between rounds and
runs. It drives /usr/bin/chromium (apt-get install chromium; nothing is downloaded);
--chromium or AUDITSTREAM_CHROMIUM names another Chromium. The page is archived as
rendered (after its scripts ran). A consent wall is accepted, rejected or left as
the study's consent says; CAPTCHA and block pages are found in the rendered page,
counted, and not asked again within their round. The end of the run says how many.

History: a profile's [[profiles.history]] steps (search, search and click a
result, visit a page, wait) run in its own session before each pass through the
queries, timed to end before the pass's first slot; a profile with
carry_over_wait searches each round's pair (the query's preceded_by) that long
before the slot: the carry-over experiment (examples/carry-over.toml). Steps never
move a slot; each is archived and journaled, and --check shows their plan.

Logged-in profiles: sign in to the account in an ordinary browser (a fresh browser
profile per account, best through the proxy the study profile will use), export
its cookies as a Netscape cookies.txt (with a cookies.txt export extension),
save it next to the study and set cookies_file = "cookies/NAME.txt" in the profile.
The file is checked when the study loads (a bad line is named, values are never
shown) and imported once, when the profile first runs; from then on the profile
keeps the cookies the engine rotates. The file is the account's login: keep it
private (chmod 600).

Proxies: proxy = "http://host:port" per profile (also https:// and socks5://;
"http://user:password@host:port" for a proxy with a login). Give the control and
its twin different addresses in the same subnet, as Hannak et al. did, and check a
profile's exit address before the study. --check fails while a proxy is a placeholder:
a name reserved for examples (*.example, *.test, *.invalid, example.com), a documentation
address (192.0.2.0/24, ...) or an address an example file gives (10.0.0.2:3128, ...); or
while a logged_in profile has no cookies_file. --chromium-arg passes a switch to Chromium,
e.g. --chromium-arg="--host-resolver-rules=MAP www.google.com 142.250.1.1" pins the
engine to one address (the paper's static DNS entry).

Killed or interrupted, the study resumes when the same command runs again: done
rounds are skipped, a round cut off mid-way or whose slot has passed is recorded
as missed, and the crawl continues at the next slot. Re-sent rounds keep their
event ids, so ingest stores each snapshot once.
"""
ChromiumOpt = Annotated[
    str,
    typer.Option(envvar="AUDITSTREAM_CHROMIUM", help="Chromium for fetcher = 'browser' (no download)"),
]
ChromiumArgOpt = Annotated[
    list[str] | None,
    typer.Option("--chromium-arg", help="Extra Chromium command-line switch (repeatable)"),
]


@app.command(help=_reflow(SERP_HELP))
def serp(
    study: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="The study file (TOML)")],
    out: OutOpt = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKey = None,
    endpoint: Annotated[
        list[str] | None,
        typer.Option(help="Engine origin override, ENGINE=URL (e.g. google=http://127.0.0.1:8765)"),
    ] = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Validate the study and show its first slots; fetch nothing. Exits 1 naming "
            "placeholder proxies and logged_in profiles without cookies_file",
        ),
    ] = False,
    chromium: ChromiumOpt = "/usr/bin/chromium",
    chromium_arg: ChromiumArgOpt = None,
    data_dir: DataDir = None,
    state_dir: StateDir = None,
    archive_dir: ArchiveDir = None,
    metrics_port: MetricsPortOpt = 0,
    log_level: LogLevelOpt = "WARNING",
) -> None:
    """Run a personalization study (the help is ``SERP_HELP``)."""
    from collectors.common.endpoints import parse_pairs
    from collectors.common.exceptions import CrawlError
    from collectors.serp.fetchers import BrowserOptions
    from collectors.serp.study import load_study

    try:
        spec = load_study(study)
        endpoints = parse_pairs(endpoint or [], "endpoint", "=")
    except CrawlError as exc:
        raise fail(str(exc), 2) from None
    if set(endpoints) - {spec.study.engine}:
        raise fail(f"--endpoint for {sorted(set(endpoints))}, but the study runs {spec.study.engine}", 2)
    states, archive = _crawler_dirs("serp", log_level, metrics_port, data_dir, state_dir, archive_dir)
    if check:
        _print_study_plan(spec)
    _placeholders(spec, refuse=check)
    if check:
        return
    browser = BrowserOptions(chromium, tuple(chromium_arg or ()))
    sink, engine_url = _sink(out, url, api_key), endpoints.get(spec.study.engine)
    work = _run_study(spec, states, archive, sink, engine_url, browser)
    _print_study(_run_interruptible(work, lambda: f": run the same command to resume study {spec.id}"))


async def _run_study(
    spec: Study, states: Path, archive: Path, sink: EventSink, endpoint: str | None, browser: BrowserOptions
) -> StudySummary:
    from collectors.serp.runner import crawl_study

    try:
        return await crawl_study(
            spec,
            state_dir=states,
            archive_dir=archive,
            sink=sink,
            endpoint=endpoint,
            browser=browser,
            notify=lambda m: console.print(f"[yellow]{markup_safe(m)}"),
            on_round=_print_round,
            on_open=_print_opened,
        )
    finally:
        await sink.aclose()


def _print_opened(summary: StudySummary) -> None:
    finished = " (finished)" if summary.finished else ""
    console.print(
        f"study {markup_safe(summary.study_id)}: {len(summary.rounds)} of {summary.total_rounds} rounds "
        f"recorded, {len(summary.missed)} missed{finished}"
    )


def _placeholders(spec: Study, refuse: bool) -> None:
    """What the study still has of the examples (``readiness``): named one per line; with
    --check they fail it (exit 1), before a run they are warnings."""
    from collectors.serp.readiness import example_proxies, study_problems

    problems = study_problems(spec, example_proxies())
    for problem in problems:
        console.print(f"{'[red]' if refuse else '[yellow]'}{markup_safe(problem)}")
    if problems and refuse:
        raise fail(f"{len(problems)} setting(s) of the study to fix before it runs (listed above)")


def _print_study_plan(spec: Study) -> None:
    """``crawl serp --check``: the study as understood, and its first slots."""
    from collectors.serp.schedule import Grid

    grid = Grid.of(spec, spec.study.start or datetime.now(UTC) + timedelta(seconds=spec.lead(0)))
    roles = ", ".join(f"{p.id} ({p.role}{': ' + p.treatment if p.treatment else ''})" for p in spec.profiles)
    study = markup_safe(f"study {spec.id} on {spec.study.engine}")
    console.print(f"{study}: {len(spec.queries)} queries, profiles {markup_safe(roles)}")
    when = "" if spec.study.start else " if it started now"
    console.print(
        f"{spec.total_rounds} rounds, spacing {spec.study.spacing:g}s, round deadline "
        f"{spec.round_timeout:g}s, last slot {grid.end.isoformat()}{when}"
    )
    for k in range(min(spec.total_rounds, 5)):
        query = markup_safe(repr(spec.queries[grid.query_index(k)].text))
        console.print(f"  {markup_safe(grid.round_id(k))} at {grid.slot(k).isoformat()}: {query}")
    _print_history_plan(spec)


def _print_history_plan(spec: Study) -> None:
    """What each profile does before round 0's query, timed from its slot."""
    for profile in spec.profiles:
        steps = spec.steps(profile, 0)
        if not steps:
            continue
        if profile.carry_over_wait is not None:
            console.print(
                f"{markup_safe(f'{profile.id} ({profile.treatment})')} searches each pair's first query "
                f"{profile.carry_over_wait:g}s before the slot"
            )
            continue
        console.print(f"{markup_safe(profile.id)} before each pass (seconds before its first slot):")
        for step in steps:
            click = f", then clicks result {step.click!r}" if step.click is not None else ""
            console.print(f"  {-step.at:g}s: {markup_safe(f'{step.kind} {step.target!r}{click}')}")
