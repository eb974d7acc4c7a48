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

RUN = "Run the service"
COLLECT = "Collect data"
ANALYSE = "Analyse"
MANAGE = "Manage"
"""The help's panels, by what a person wants to do; every command is in one
(``tests/test_cli/test_issue40_cli.py`` checks)."""

app = typer.Typer(
    name="auditstream",
    help="Live measurement for search-engine audits: ingest, stream, store, report. "
    "New here? `auditstream up --demo`, then open the board it names.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("up", rich_help_panel=RUN)(up.up)
app.command("ingest", rich_help_panel=RUN)(services.ingest)
app.command("worker", rich_help_panel=RUN)(services.worker)
app.command("store", rich_help_panel=RUN)(services.store)
app.add_typer(crawl.app, name="crawl", rich_help_panel=COLLECT)
app.add_typer(simulate.app, name="simulate", rich_help_panel=COLLECT)
app.command("import", rich_help_panel=COLLECT)(importing.import_events)
app.add_typer(extension.app, name="extension", rich_help_panel=COLLECT)
app.add_typer(parse.app, name="parse", rich_help_panel=COLLECT)
app.add_typer(rules.app, name="rules", rich_help_panel=COLLECT)
app.add_typer(report.app, name="report", rich_help_panel=ANALYSE)
app.command("sql", rich_help_panel=ANALYSE)(data.sql)
app.command("figures", rich_help_panel=ANALYSE)(figures.figures)
app.add_typer(plan.app, name="plan", rich_help_panel=ANALYSE)
app.command("export", rich_help_panel=ANALYSE)(export.export)
app.add_typer(experiment.app, name="experiment", rich_help_panel=MANAGE)
app.add_typer(keys.app, name="keys", rich_help_panel=MANAGE)
app.add_typer(participants.app, name="participants", rich_help_panel=MANAGE)
app.add_typer(data.db_app, name="db", rich_help_panel=MANAGE)
app.add_typer(data.schema_app, name="schema", rich_help_panel=MANAGE)


def main() -> None:
    try:
        app()
    except OSError as exc:  # a path the command cannot use (a file where a folder goes, say)
        where = f": {exc.filename}" if exc.filename else ""
        fail(f"{exc.strerror or exc}{where}")
        raise SystemExit(1) from None
