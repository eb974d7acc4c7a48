"""``auditstream import``: bring an earlier study's events into a running service."""

from __future__ import annotations

import asyncio
import os
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from auditstream.cli.common import console, fail, result_console
from auditstream.cli.data import AdminKeyOpt, Url
from auditstream.cli.safe_text import markup_safe, plain
from collectors.common.http import ServiceUnreachable
from collectors.import_upload import (
    ImportFailed,
    ImportStats,
    UnreadableFile,
    chunks,
    file_size,
    read_lines,
    recompute,
    send_all,
)

Files = Annotated[
    list[str],
    typer.Argument(
        help="JSON-lines files (.jsonl, .ndjson, .gz for gzipped), Parquet files (.parquet) or - "
        "for JSON lines on standard input",
        show_default=False,
    ),
]


def import_events(
    files: Files,
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
    chunk_lines: Annotated[int, typer.Option(min=1, max=200_000, help="Events per request")] = 50_000,
) -> None:
    """Import events in bulk: validated like POST /v1/events, stored once per event_id.

    Each line is one event as POST /v1/events takes it, optionally with its original received_at.

    An export of the raw tables has received_at; without it the event's sent_at is used, so a
    re-import stores the same rows. Importing the same file twice changes nothing.

    Needs a key with the admin scope. The derived tables are recomputed in bulk at the end (and
    for what was stored, when a file breaks part-way); an import that was stopped is finished
    by running it again. A line over 1 MiB is rejected, not sent.
    """
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    missing = [f for f in files if f != "-" and not os.path.isfile(f)]
    if missing:
        raise fail(f"no such file: {missing[0]}", 2)
    stats = ImportStats()
    try:
        _send_files(files, url, key, chunk_lines, stats)
    except (ImportFailed, UnreadableFile, ServiceUnreachable, OSError) as exc:
        # what was stored before the failure is counted now: the derived tables never lag
        # the raw rows, whether or not this file can ever be imported to its end
        _recompute_stored(url, key, stats)
        if isinstance(exc, ServiceUnreachable):
            raise fail(str(exc)) from None
        if isinstance(exc, ImportFailed):
            raise fail(f"the service refused the import: {exc}") from None
        if isinstance(exc, UnreadableFile):
            stored = f"the {stats.accepted:,} events before it are stored"
            raise fail(f"stopped reading: {exc}; {stored}") from None
        raise fail(f"cannot reach {url} or read a file: {exc}") from None
    try:
        _recompute(url, key, stats)
    except (ImportFailed, OSError) as exc:
        raise fail(f"the events are stored but their tables were not recomputed ({exc}); run the "
                   "same import again to finish") from None  # fmt: skip
    _print_summary(stats)
    if stats.accepted == 0:
        raise typer.Exit(1)


def _send_files(files: list[str], url: str, key: str, chunk_lines: int, stats: ImportStats) -> None:
    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, TextColumn("{task.fields[events]} events"), console=console) as progress:
        total = sum(file_size(f) for f in files) or None
        task = progress.add_task("importing", total=total, events=0)

        def lines():
            for name in files:
                yield from read_lines(name, lambda n: progress.advance(task, n))

        def on_chunk() -> None:
            progress.update(task, events=f"{stats.accepted:,}")

        def too_long(number: int) -> None:
            stats.lines += 1
            stats.rejected["line_too_long"] += 1
            if len(stats.examples) < 20:
                stats.examples.append({"line": number, "reason": "line_too_long", "field": None})

        bodies = chunks(lines(), chunk_lines, max_bytes=48 * 1024 * 1024, on_too_long=too_long)
        asyncio.run(send_all(url, key, bodies, stats, on_chunk))


def _recompute_stored(url: str, key: str, stats: ImportStats) -> None:
    """After a failure: recompute the days already stored, if the service still answers
    (three tries a request, not the minutes of retries a running import allows)."""
    if not stats.recompute_steps:
        return
    try:
        _recompute(url, key, stats, tries=3)
    except (ImportFailed, OSError) as exc:
        console.print(
            f"[yellow]the stored events' tables were not recomputed ({markup_safe(exc)}); import again[/]"
        )


def _recompute(url: str, key: str, stats: ImportStats, tries: int = 30) -> None:
    steps = stats.recompute_steps
    if not steps:
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  console=console) as progress:  # fmt: skip
        task = progress.add_task("recomputing days, installs and studies", total=steps)
        studies = (stats.crawl_studies, stats.serp_studies)
        asyncio.run(recompute(url, key, stats.spans, lambda: progress.advance(task), tries, *studies))


def _print_summary(stats: ImportStats) -> None:
    table = Table(title="import", show_header=False)
    for name, value in (
        ("lines read", stats.lines),
        ("valid events", stats.accepted),
        ("stored (new)", stats.inserted),
        ("already stored", stats.duplicates),
        ("kept in dead_letters", stats.dead_letters),
        ("rejected", sum(stats.rejected.values())),
        ("days recomputed", len(stats.spans)),
    ):
        table.add_row(name, f"{value:,}")
    for reason, n in sorted(stats.rejected.items()):
        table.add_row(plain(f"  rejected: {reason}"), f"{n:,}")
    result_console().print(table)
    for example in stats.examples[:10]:
        line, reason, field = example["line"], example["reason"], example["field"] or "-"
        console.print(f"line {markup_safe(line)}: {markup_safe(reason)} ({markup_safe(field)})")
