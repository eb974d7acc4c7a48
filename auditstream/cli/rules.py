"""``auditstream rules``: the SERP identification rules, for people and for the browser extension."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer

from auditstream.cli.common import fail

app = typer.Typer(help="The SERP rulebook (collectors/serp/rules/*.toml).", no_args_is_help=True)


@app.command()
def export(
    engine: Annotated[str, typer.Option(help="google or bing")] = "google",
    out: Annotated[Path | None, typer.Option(help="Write the JSON here (default: standard output)")] = None,
) -> None:
    """Write an engine's rules as JSON, the form the browser extension evaluates.

    The extension finds organic results and boxes with these rules exactly as the
    crawler's parser does (a test holds the two to the same answers on real pages);
    copy the file to extension/rules/<engine>.json after changing a rules file.
    """
    from collectors.serp.rulebook import export_rules, rules_engines

    if engine not in rules_engines():
        raise fail(f"unknown engine {engine!r}; known: {', '.join(rules_engines())}", 2)
    text = orjson.dumps(export_rules(engine), option=orjson.OPT_INDENT_2).decode() + "\n"
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write {out}: {exc}", 2) from None
    typer.echo(f"wrote the {engine} rules to {out}", err=True)
