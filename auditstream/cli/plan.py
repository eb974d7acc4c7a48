"""``auditstream plan``: an experiment's pre-registered analysis plan (issue 38).

The plan is a TOML file (``docs/plans/powermeter.toml``; the model is
``schemas/analysis_plan.py``), checked here before it is sent, so a typo is a clear local
error rather than a 400. The service stores it with the hash of its canonical JSON.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from analytics.stats.arrangement_subsets import subset_names
from auditstream.cli.common import fail, result_console
from auditstream.cli.data import AdminKeyOpt, ApiKeyOpt, Url, call_api
from auditstream.cli.safe_text import printable
from schemas.analysis_plan import AnalysisPlan, plan_from_toml

app = typer.Typer(help="Register, amend and show an experiment's analysis plan.", no_args_is_help=True)
PlanFile = Annotated[Path, typer.Argument(help="The plan, as TOML (see docs/plans/powermeter.toml)")]


def read_plan(path: Path) -> AnalysisPlan:
    """The plan in ``path``, or a clear error (exit 2) naming the file and what is wrong."""
    try:
        plan = plan_from_toml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}", 2) from None
    except tomllib.TOMLDecodeError as exc:
        raise fail(f"{path} is not TOML: {exc}", 2) from None
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'plan'}: {e['msg']}" for e in exc.errors())
        raise fail(f"{path} is not a valid plan: {problems}", 2) from None
    if unknown := sorted(plan.subsets_named() - set(subset_names())):
        raise fail(f"{path} names unknown subsets {unknown} (known: {', '.join(subset_names())})", 2)
    return plan


def _print_plan(answer: dict[str, Any]) -> None:
    console = result_console()
    plan = answer["plan"]
    console.print(
        f"[bold]{printable(answer['experiment_id'])}[/bold] plan version {answer['version']}, "
        f"sha256 {answer['sha256']}"
    )
    intervals, correction = plan["intervals"], plan["correction"]
    console.print(
        f"burn-in {plan['burn_in_days']} days, unit {plan['unit_mode']}, {intervals['method']} "
        f"{intervals['level']:.0%}, alpha {plan['alpha']}, baseline {printable(plan['baseline'])}, "
        f"correction {correction['method']} over {correction['family']}, stopping {plan['stopping']['rule']}"
    )
    table = Table("role", "quantity", "arm", "rank", "engine", "subset")
    for role in ("primary", "secondary"):
        for q in plan[role]:
            table.add_row(role, q["quantity"], printable(q["arm"]), str(q["rank"]), q["engine"], q["subset"])
    console.print(table)
    for family, bounds in sorted(plan["quintiles"].items()):
        console.print(f"quintiles {family}: kept {bounds['kept']}, every {bounds['every'] or bounds['kept']}")
    history = Table("version", "kind", "sha256", "registered_at", "by", "reason")
    for v in answer["history"]:
        history.add_row(
            str(v["version"]),
            v["kind"],
            v["sha256"][:12],
            v["registered_at"],
            printable(v["registered_by"]),
            printable(v["reason"]),
        )
    console.print(history)


@app.command()
def register(path: PlanFile, url: Url = "http://127.0.0.1:8080", api_key: AdminKeyOpt = None) -> None:
    """Register the plan of its experiment (once; then amend it; needs the admin scope)."""
    plan = read_plan(path)
    answer = call_api(
        url, api_key, "PUT", f"/v1/experiments/{plan.experiment_id}/plan", plan.model_dump(mode="json")
    )
    _print_plan(answer)


@app.command()
def amend(
    experiment_id: Annotated[str, typer.Argument()],
    path: PlanFile,
    reason: Annotated[str, typer.Option(help="Why the plan changes (logged with the new version)")],
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
) -> None:
    """Amend the plan: a new version with its hash, logged with the reason (admin scope)."""
    plan = read_plan(path)
    if plan.experiment_id != experiment_id:
        raise fail(
            f"{path} is the plan of {printable(plan.experiment_id)!r}, not {printable(experiment_id)!r}", 2
        )
    body = {"reason": reason, "plan": plan.model_dump(mode="json")}
    _print_plan(call_api(url, api_key, "POST", f"/v1/experiments/{experiment_id}/plan/amendments", body))


@app.command()
def show(
    experiment_id: Annotated[str, typer.Argument()],
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
) -> None:
    """The current plan, its hash and its history of versions."""
    _print_plan(call_api(url, api_key, "GET", f"/v1/experiments/{experiment_id}/plan"))


@app.command()
def deviations(
    experiment_id: Annotated[str, typer.Argument()],
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
) -> None:
    """Every logged departure of a report from the plan: when, by whom, what."""
    answer = call_api(url, api_key, "GET", f"/v1/experiments/{experiment_id}/plan/deviations")
    table = Table("at", "by", "plan", "setting", "asked", "planned")
    for d in answer["deviations"]:
        for setting, change in sorted(d["what"].items()):
            table.add_row(
                d["at"],
                printable(d["by"]),
                d["plan_sha256"][:12],
                setting,
                printable(str(change.get("asked"))),
                printable(str(change.get("planned"))),
            )
    console = result_console()
    console.print(
        table if answer["deviations"] else f"no departures from the plan of {printable(experiment_id)}"
    )
