"""The ``auditstream`` command line. Each sub-command lives in its own module."""

from __future__ import annotations

import typer

from auditstream.cli import (
    crawl,
    data,
    experiment,
    export,
    extension,
    figures,
    importing,
    keys,
    parse,
    participants,
    plan,
    report,
    rules,
    services,
    simulate,
    up,
)
from auditstream.cli.common import fail

app = typer.Typer(
    name="auditstream",
    help="Live measurement for search-engine audits: ingest, stream, store, report.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("up")(up.up)
app.command("ingest")(services.ingest)
app.command("worker")(services.worker)
app.command("store")(services.store)
app.command("sql")(data.sql)
app.command("import")(importing.import_events)
app.command("export")(export.export)
app.command("figures")(figures.figures)
app.add_typer(report.app, name="report")
app.add_typer(experiment.app, name="experiment")
app.add_typer(keys.app, name="keys")
app.add_typer(data.db_app, name="db")
app.add_typer(data.schema_app, name="schema")
app.add_typer(simulate.app, name="simulate")
app.add_typer(plan.app, name="plan")
app.add_typer(crawl.app, name="crawl")
app.add_typer(parse.app, name="parse")
app.add_typer(rules.app, name="rules")
app.add_typer(extension.app, name="extension")
app.add_typer(participants.app, name="participants")


def main() -> None:
    try:
        app()
    except OSError as exc:  # a path the command cannot use (a file where a folder goes, say)
        where = f": {exc.filename}" if exc.filename else ""
        fail(f"{exc.strerror or exc}{where}")
        raise SystemExit(1) from None
