"""``auditstream participants``: what an operator does for a volunteer (erase their data)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import orjson
import typer
from rich.progress import Progress
from rich.table import Table

from auditstream.cli.common import console, result_console
from auditstream.cli.data import AdminKeyOpt, Url, call_api
from auditstream.cli.safe_text import json_safe

app = typer.Typer(help="Volunteers' installs: erase what an install sent.", no_args_is_help=True)


@app.command()
def erase(
    install_id: Annotated[list[str], typer.Argument(help="Install ids to erase (the popup shows its own)")],
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the receipts as JSON")] = False,
) -> None:
    """Erase installs: every row of each goes from every raw and derived table, what sums over
    it is recomputed, and its later events are never stored. Prints a receipt per install
    (its id's SHA-256, when, rows removed per table), also kept in the erasure_log table.
    Needs a key with the admin scope. Each install takes seconds."""
    receipts: list[dict[str, Any]] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("erasing", total=len(install_id))
        for one in dict.fromkeys(install_id):
            answer = call_api(url, api_key, "POST", "/v1/participants/erase", {"install_ids": [one]})
            receipts.extend(answer["receipts"])
            progress.advance(task)
    if as_json:
        sys.stdout.write(json_safe(orjson.dumps(receipts, option=orjson.OPT_INDENT_2).decode()) + "\n")
        return
    table = Table("install (SHA-256)", "erasure", "finished", "rows removed", "by table")
    for r in receipts:
        by_table = ", ".join(f"{t} {n}" for t, n in r["rows_removed"].items() if n)
        table.add_row(
            r["install_hash"][:16] + "…",
            r["erasure_id"],
            r["finished_at"],
            str(r["total_rows_removed"]),
            by_table or "nothing was stored",
        )
    result_console().print(table)
