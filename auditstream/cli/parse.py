"""``auditstream parse``: run a parser on a saved response or result page, to check or debug it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer

from auditstream.cli.common import fail
from auditstream.cli.safe_text import json_safe

app = typer.Typer(help="Parse saved engine responses.", no_args_is_help=True)


@app.command()
def suggestions(
    file: Annotated[Path, typer.Argument(help="Saved response body (- = stdin)")],
    engine: Annotated[str, typer.Option(help="google or bing")] = "google",
    format_: Annotated[
        str | None,
        typer.Option("--format", help="psy-ab or firefox (google), as or osjson (bing); default per engine"),
    ] = None,
    query: Annotated[
        str | None, typer.Option(help="The query that was submitted (default: the one the engine echoed)")
    ] = None,
    http_status: Annotated[int, typer.Option(help="HTTP status the body came with")] = 200,
) -> None:
    """Print {query, suggestions: [{rank, text, self_loop, type}], status} as JSON.

    Exits 1 when the status is error (the body could not be read as the format), so a
    script notices; blocked and empty are answers the parser recognised (exit 0).
    """
    from collectors.autocomplete.engines import DEFAULT_FORMAT, FORMATS
    from collectors.autocomplete.parsers import parse_response

    if engine not in FORMATS:
        raise fail(f"unknown engine {engine!r}; known: {', '.join(FORMATS)}", 2)
    fmt = format_ or DEFAULT_FORMAT[engine]
    if fmt not in FORMATS[engine]:
        raise fail(f"{engine} has no format {fmt!r}; known: {', '.join(FORMATS[engine])}", 2)
    try:
        body = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc}", 2) from None
    parsed = parse_response(fmt, body, http_status, query=query)
    typer.echo(json_safe(orjson.dumps(parsed.to_json(), option=orjson.OPT_INDENT_2).decode()))
    if parsed.status == "error":
        raise fail(f"status error: no {engine} {fmt} suggestions could be read ({parsed.detail})")


@app.command()
def serp(
    file: Annotated[Path, typer.Argument(help="Saved result page (- = stdin)")],
    engine: Annotated[str, typer.Option(help="google or bing")] = "google",
    http_status: Annotated[int, typer.Option(help="HTTP status the page came with")] = 200,
) -> None:
    """Print the parse as JSON: status, result_estimate, language, coverage and components
    (rank, section, type, url, title).

    Ranks count every component in page order (sections top, main, bottom, side as the
    engine's rules file lists them); url is normalized, "" when a component has no link.
    coverage is the share of the page's visible blocks that a rule claimed: well below 1
    means a layout the rules do not know (look at the ``unknown`` components).
    """
    from collectors.serp.parser import parse_serp
    from collectors.serp.rulebook import rules_engines

    if engine not in rules_engines():
        raise fail(f"unknown engine {engine!r}; known: {', '.join(rules_engines())}", 2)
    try:
        body = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read {file}: {exc}", 2) from None
    parsed = parse_serp(engine, body, http_status=http_status)
    typer.echo(json_safe(orjson.dumps(parsed.to_json(), option=orjson.OPT_INDENT_2).decode()))
