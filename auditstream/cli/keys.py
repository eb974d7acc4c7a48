"""``auditstream keys``: create, list and revoke API keys (stored hashed)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from auditstream.cli.common import DataDir, console, fail, load_settings, result_console
from ingest.api_keys import SCOPES, KeyError_, KeyFile

app = typer.Typer(help="Manage API keys. Keys are shown once, at creation.", no_args_is_help=True)


def _file(data_dir: DataDir) -> KeyFile:
    return KeyFile(load_settings(data_dir=data_dir).resolved_keys_file)


@app.command()
def create(
    name: Annotated[str, typer.Option(help="Who or what the key is for")],
    scope: Annotated[
        list[str] | None,
        typer.Option(help=f"Repeatable; one of {', '.join(SCOPES)} (default: ingest)"),
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Create a key and print it once.

    Scopes: ingest posts the extension's events (the key an extension ships), crawler posts
    crawl events (autocomplete and SERP crawls), read runs SQL, reports and the board, admin
    manages experiments and imports, metrics scrapes /metrics.
    """
    try:
        key, secret = _file(data_dir).create(name, tuple(scope or ("ingest",)))
    except KeyError_ as exc:
        raise fail(str(exc), 2) from None
    console.print(f"created {key.id} ({', '.join(key.scopes)}) for {key.name}; store it now:")
    typer.echo(secret)


@app.command("list")
def list_(data_dir: DataDir = None) -> None:
    """List keys (ids and hashes only; secrets are never stored)."""
    table = Table("id", "name", "scopes", "created", "revoked")
    for k in _file(data_dir).load():
        table.add_row(k.id, k.name, ",".join(k.scopes), k.created_at, k.revoked_at or "")
    result_console().print(table)


@app.command()
def revoke(
    key_id: Annotated[str, typer.Argument(help="The key id, e.g. k_1a2b3c4d5e")],
    data_dir: DataDir = None,
) -> None:
    """Revoke a key; running ingest processes refuse it on their next request."""
    try:
        key = _file(data_dir).revoke(key_id)
    except KeyError_ as exc:
        raise fail(str(exc), 2) from None
    console.print(f"revoked {key.id} ({key.name}) at {key.revoked_at}")
