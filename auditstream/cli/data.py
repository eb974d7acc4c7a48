"""Read and manage the data: ``sql``, ``report``, ``db migrate``, ``schema export``."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.table import Table

from auditstream.cli.common import (
    DataDir,
    ServiceUrl,
    console,
    data_dir_held,
    fail,
    load_settings,
    result_console,
)
from auditstream.cli.safe_text import json_safe, markup_safe, plain

if TYPE_CHECKING:
    from core.settings import Settings

db_app = typer.Typer(help="Manage the ClickHouse schema.", no_args_is_help=True)
schema_app = typer.Typer(help="Event schemas for client authors.", no_args_is_help=True)

Url = ServiceUrl
ApiKeyOpt = Annotated[
    str | None, typer.Option("--api-key", help="Key with the read scope \\[env: AUDITSTREAM_API_KEY]")
]
AdminKeyOpt = Annotated[
    str | None, typer.Option("--api-key", help="Key with the admin scope \\[env: AUDITSTREAM_API_KEY]")
]
Format = Annotated[str, typer.Option("--format", help="table, json or csv")]


class ApiRefused(Exception):
    """The service answered with an HTTP error: its status and its JSON body's message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status, self.message = status, message


def request_json(url: str, key: str, method: str, path: str, body: Any = None, timeout: float = 120) -> Any:
    """One JSON request to a running service: its answer, ``ApiRefused`` for an error answer
    (the caller decides), and a clear message with exit 1 when the service cannot be reached
    or stops answering."""
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url.rstrip("/") + path,
        method=method,
        data=None if body is None else orjson.dumps(body),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return orjson.loads(resp.read())
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError:
            answer = None
        text = raw.decode(errors="replace")
        raise ApiRefused(
            exc.code, str(answer.get("message", text)) if isinstance(answer, dict) else text
        ) from None
    except urllib.error.URLError as exc:
        raise fail(f"cannot reach {url}: {exc.reason} (is `auditstream up` running?)") from None
    except (TimeoutError, ConnectionError, http.client.HTTPException) as exc:
        raise fail(f"{url} did not answer {path}: {exc or type(exc).__name__}") from None


def call_api(url: str, api_key: str | None, method: str, path: str, body: Any = None) -> Any:
    """One JSON request to a running service; errors become a clear message and exit 1."""
    key = api_key or os.environ.get("AUDITSTREAM_API_KEY", "")
    if not key:
        raise fail("pass --api-key or set AUDITSTREAM_API_KEY", 2)
    try:
        return request_json(url, key, method, path, body)
    except ApiRefused as exc:
        raise fail(f"{exc.status}: {exc.message}") from None  # fail shows it as plain, printable text


def run_sql(url: str, api_key: str | None, sql: str) -> dict[str, Any]:
    return dict(call_api(url, api_key, "POST", "/v1/sql", {"sql": sql}))


def print_result(result: dict[str, Any], fmt: str, title: str | None = None) -> None:
    columns, rows = result["columns"], result["rows"]
    if fmt == "json":
        records = [dict(zip(columns, r, strict=True)) for r in rows]
        sys.stdout.write(json_safe(orjson.dumps(records).decode()) + "\n")
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(columns)
        writer.writerows(rows)
        sys.stdout.write(buf.getvalue())
    elif fmt == "table":
        # stored values, column names and titles as Text: never markup, controls made visible
        table = Table(title=None if title is None else plain(title))
        for column in columns:
            table.add_column(plain(column))
        for r in rows:
            table.add_row(*(plain("" if v is None else f"{v:.4f}" if isinstance(v, float) else v) for v in r))
        result_console().print(table)
    else:
        raise fail(f"unknown format {fmt!r}; use table, json or csv", 2)


def sql(
    statement: Annotated[
        str, typer.Argument(help="One read-only statement (SELECT, WITH, SHOW, DESCRIBE, EXPLAIN)")
    ],
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
    format: Format = "table",
) -> None:
    """Run read-only SQL against the store through a running service."""
    print_result(run_sql(url, api_key, statement), format)


@db_app.command()
def migrate(
    data_dir: DataDir = None,
    clickhouse_url: Annotated[
        str | None, typer.Option("--clickhouse-url", help="\\[env: AUDITSTREAM_CLICKHOUSE_URL]")
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Apply the cluster layout ON CLUSTER NAME: replicated tables, a Distributed table "
            "per raw and derived table (deploy/README.md, Beyond one machine)",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the statements an empty server (or cluster) gets; connect to none"
        ),
    ] = False,
) -> None:
    """Apply pending DDL migrations (idempotent). `auditstream up` does this at start."""
    from schemas.migrate import migration_plan

    try:
        plan = migration_plan(cluster)  # also checks the cluster name and every table's layout
    except ValueError as exc:
        raise fail(str(exc), 2) from None
    if dry_run:
        sys.stdout.write("".join(f"{statement};\n\n" for statement in plan))
        return
    settings = load_settings(data_dir=data_dir, clickhouse_url=clickhouse_url)
    if cluster and not settings.clickhouse_url:
        raise fail("--cluster needs a ClickHouse server (--clickhouse-url), not the embedded store", 2)
    with data_dir_held(settings, exclusive=False):
        _migrate(settings, cluster)


def _migrate(settings: Settings, cluster: str | None) -> None:
    from core.store import StoreError, open_store
    from schemas.migrate import migrate as run

    async def go() -> list[str]:
        store = open_store(settings)
        try:
            return await run(store, cluster)
        finally:
            await store.close()

    try:
        applied = asyncio.run(go())
    except StoreError as exc:
        raise fail(f"{exc} (a running service applies migrations itself at start)") from None
    console.print(f"applied: {', '.join(applied)}" if applied else "schema is up to date")


@schema_app.command("export")
def export(
    out: Annotated[Path, typer.Option(help="Directory for the JSON Schema files")] = Path("schema"),
) -> None:
    """Write one JSON Schema per event type, plus the union, for client authors."""
    from pydantic import TypeAdapter

    from schemas.event_types import EVENT_MODELS, AnyEvent

    out.mkdir(parents=True, exist_ok=True)
    for model in EVENT_MODELS:
        name = model.model_fields["type"].annotation.__args__[0]  # type: ignore[union-attr]
        (out / f"{name}.schema.json").write_text(json.dumps(model.model_json_schema(), indent=2))
    union = TypeAdapter(AnyEvent).json_schema()
    (out / "event.schema.json").write_text(json.dumps(union, indent=2))
    console.print(f"wrote {len(EVENT_MODELS) + 1} schemas to {markup_safe(out)}/")
