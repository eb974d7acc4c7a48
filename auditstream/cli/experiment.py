"""``auditstream experiment``: the registry of arrangement experiments."""

from __future__ import annotations

import secrets
import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
import typer

from auditstream.cli.common import fail
from auditstream.cli.data import AdminKeyOpt, ApiKeyOpt, Format, Url, call_api, print_result
from auditstream.cli.safe_text import json_safe, printable

app = typer.Typer(help="Create, list, show and stop arrangement experiments.", no_args_is_help=True)

ShowKeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        help="Key with the read scope (with --public: the ingest scope) \\[env: AUDITSTREAM_API_KEY]",
    ),
]


def _arms(pairs: list[str]) -> dict[str, float]:
    arms = {}
    for pair in pairs:
        name, _, weight = pair.partition("=")
        try:
            arms[name] = float(weight)
        except ValueError:
            raise fail(f"--arm takes name=weight, got {pair!r}", 2) from None
    return arms


def _engine_arms(pairs: list[str]) -> dict[str, list[str]]:
    out = {}
    for pair in pairs:
        engine, _, arms = pair.partition("=")
        if not engine or not arms:
            raise fail(f"--engine-arms takes engine=arm,arm,..., got {pair!r}", 2)
        out[engine] = [a.strip() for a in arms.split(",") if a.strip()]
    return out


@app.command()
def create(
    experiment_id: Annotated[str, typer.Argument(help="A short id, e.g. powermeter-2026")],
    arm: Annotated[list[str], typer.Option(help="name=weight, repeat per arm; include control")],
    engine: Annotated[
        list[str] | None, typer.Option(help="Repeat per engine (default google and bing, as the extension)")
    ] = None,
    engine_arms: Annotated[
        list[str] | None,
        typer.Option(
            help="engine=arm,arm,...: an engine that runs only these arms (control among them), e.g. "
            "bing=control,swap_1_2 as the paper ran; its SRM and gaps use only them. Repeat per engine"
        ),
    ] = None,
    salt: Annotated[str | None, typer.Option(help="Assignment salt (default: random)")] = None,
    start: Annotated[str | None, typer.Option(help="YYYY-MM-DD (default today)")] = None,
    end: Annotated[str | None, typer.Option(help="YYYY-MM-DD")] = None,
    burn_in_days: Annotated[int, typer.Option(help="Days of each install to drop")] = 4,
    unit_mode: Annotated[str, typer.Option(help="click (the paper's) or impression")] = "click",
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
) -> None:
    """Register an experiment (needs a key with the admin scope)."""
    body = {
        "experiment_id": experiment_id,
        "engines": engine or ["google", "bing"],
        "arms": _arms(arm),
        "engine_arms": _engine_arms(engine_arms or []),
        "salt": salt or secrets.token_urlsafe(16),
        "start": start or datetime.now(UTC).date().isoformat(),
        "end": end,
        "burn_in_days": burn_in_days,
        "unit_mode": unit_mode,
    }
    created = call_api(url, api_key, "POST", "/v1/experiments", body)
    typer.echo(json_safe(orjson.dumps(created, option=orjson.OPT_INDENT_2).decode()))


LIST_COLUMNS = ["experiment_id", "status", "start", "end", "engines", "arms", "unit_mode"]


def arm_shares(arms: dict[str, float]) -> dict[str, float]:
    """Each arm's share of the weights' sum, as extensions are served it: the registry keeps
    weights as given (the demo's 0.4, someone's 4), so raw ones listed side by side differ."""
    total = sum(arms.values())
    return {arm: round(weight / total, 4) if total else 0.0 for arm, weight in arms.items()}


def list_rows(items: list[dict[str, Any]], fmt: str) -> list[list[Any]]:
    """``experiment list`` rows: engines and arms (as shares) as JSON values for --format
    json, else comma-joined text (``google, bing``; ``control=0.5, swap_1_2=0.5``), never
    a Python repr."""
    rows = []
    for e in items:
        engines, shares = list(e.get("engines") or []), arm_shares(dict(e.get("arms") or {}))
        as_json = fmt == "json"
        shown_engines = engines if as_json else ", ".join(engines)
        shown_arms = shares if as_json else ", ".join(f"{arm}={share:g}" for arm, share in shares.items())
        row = [e.get(c) for c in LIST_COLUMNS]
        row[LIST_COLUMNS.index("engines")], row[LIST_COLUMNS.index("arms")] = shown_engines, shown_arms
        rows.append(row)
    return rows


@app.command("list")
def list_(url: Url = "http://127.0.0.1:8080", api_key: ApiKeyOpt = None, format: Format = "table") -> None:
    """All experiments with their status, engines and arms (each arm's share of the weights)."""
    items = call_api(url, api_key, "GET", "/v1/experiments")
    print_result({"columns": LIST_COLUMNS, "rows": list_rows(items, format)}, format)


@app.command()
def show(
    experiment_id: Annotated[str, typer.Argument()],
    public: Annotated[bool, typer.Option("--public", help="Show what extensions receive")] = False,
    url: Url = "http://127.0.0.1:8080",
    api_key: ShowKeyOpt = None,
) -> None:
    """One experiment's full config (or, with --public, the config served to extensions)."""
    path = f"/v1/experiments/{experiment_id}" + ("/config" if public else "")
    doc = call_api(url, api_key, "GET", path)
    sys.stdout.write(json_safe(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()) + "\n")


@app.command()
def stop(
    experiment_id: Annotated[str, typer.Argument()],
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
) -> None:
    """Mark an experiment stopped (its data stays; SRM checks end; needs the admin scope)."""
    stopped = call_api(url, api_key, "POST", f"/v1/experiments/{experiment_id}/stop")
    typer.echo(f"stopped {printable(stopped['experiment_id'])} (end {printable(stopped['end'])})")
