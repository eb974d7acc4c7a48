"""``auditstream export``: a study's raw events and result tables, with a datasheet, to publish."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from auditstream.cli.common import console, fail, result_console
from auditstream.cli.data import AdminKeyOpt, Url
from auditstream.cli.safe_text import markup_safe, plain

KINDS = ("arrangement", "autocomplete", "personalization")


def export(
    kind: Annotated[str, typer.Argument(help="arrangement, autocomplete or personalization")],
    study: Annotated[
        str,
        typer.Argument(
            help="The experiment id (arrangement), the crawl id prefix (autocomplete, as report "
            "autocomplete --study; '' = every crawl) or the study id (personalization)"
        ),
    ],
    out: Annotated[Path, typer.Option(help="A new or empty folder for the export")],
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
    events_format: Annotated[str, typer.Option(help="jsonl (gzipped JSON lines) or parquet")] = "jsonl",
    tables_format: Annotated[str, typer.Option(help="parquet or csv")] = "parquet",
    page_rows: Annotated[int, typer.Option(min=1, max=100_000, help="Rows per request")] = 10_000,
) -> None:
    """Export a study: its raw events, as `auditstream import` reads them, its result tables and
    a datasheet (README.md: the study, its registration and plan, every table and column).

    The study is what the family's report selects. Every table is read a page at a time, each
    page written before the next is asked for, so neither side holds the study in memory and
    no row cap applies. Needs a key with the admin scope. Importing the events into another
    service recomputes every result table; the reports then give what this service gives.
    """
    from collectors.export_download import ExportFailed, Formats, finish, http_get

    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    if kind not in KINDS:
        raise fail(f"the kind is one of {', '.join(KINDS)}", 2)
    if events_format not in ("jsonl", "parquet") or tables_format not in ("parquet", "csv"):
        raise fail("--events-format is jsonl or parquet, --tables-format parquet or csv", 2)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise fail(f"{out} is not an empty folder; name a new one", 2)
    get = http_get(url, key)
    try:
        manifest = get(f"/v1/export/{kind}", {"study": study})
        if not any(t["rows"] for t in manifest["tables"] if t["events"]):
            raise fail(f"the {kind} study {study!r} has no events in {url}", 1)
        out.mkdir(parents=True, exist_ok=True)
        tables = _write_tables(get, manifest, out, Formats(events_format, tables_format), page_rows)
    except ExportFailed as exc:
        raise fail(f"the export stopped: {exc}") from None
    options = ["--url", url, "--events-format", events_format, "--tables-format", tables_format]
    command = shlex.join(["auditstream", "export", kind, study, "--out", str(out), *options])
    _print_summary(finish(out, manifest, tables, command), out)


def _write_tables(
    get: Any, manifest: dict[str, Any], out: Path, formats: Any, limit: int
) -> list[dict[str, Any]]:
    from collectors.export_download import export_table

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    written = []
    with Progress(*columns, console=console) as progress:
        for table in manifest["tables"]:
            task = progress.add_task(markup_safe(table["name"]), total=table["rows"] or None)

            def advance(rows: int, task: TaskID = task) -> None:
                progress.advance(task, rows)

            entry = export_table(get, manifest, table, out, formats, limit, advance)
            progress.update(task, total=entry["written"], completed=entry["written"])
            written.append(entry)
    return written


def _print_summary(manifest: dict[str, Any], out: Path) -> None:
    table = Table(title=plain(f"export of {manifest['kind']} study {manifest['study']!r}"))
    table.add_column("file")
    table.add_column("rows", justify="right")
    for entry in manifest["tables"]:
        table.add_row(plain(entry["file"]), f"{entry['written']:,}")
    result_console().print(table)
    for entry in manifest["tables"]:
        if entry["refused"]:
            first = entry["refused_first"][0]
            console.print(
                f"[yellow]{entry['refused']:,} stored rows of {markup_safe(entry['name'])} are no "
                f"valid event now and were left out (first: {markup_safe(first)})[/]"
            )
    console.print(f"wrote {markup_safe(out)}/README.md, the datasheet")
