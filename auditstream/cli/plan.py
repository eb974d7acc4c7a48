"""``auditstream plan``: an experiment's pre-registered analysis plan (issue 38).

The plan is a TOML file (``docs/plans/powermeter.toml``; the model is
``schemas/analysis_plan.py``), checked here before it is sent, so a typo is a clear local
error rather than a 400. The service stores it with the hash of its canonical JSON.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import fields, replace
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.table import Table

from analytics.stats.arrangement_subsets import subset_names
from analytics.stats.planner import (
    World,
    days_needed,
    installs_needed,
    minimum_detectable_effect,
    paper_world,
)
from analytics.stats.planner import half_width as half_width_of
from auditstream.cli.common import fail, result_console
from auditstream.cli.data import AdminKeyOpt, ApiKeyOpt, Url, call_api
from auditstream.cli.plan_freeze import freeze_quintiles
from auditstream.cli.safe_text import printable
from schemas.analysis_plan import AnalysisPlan, plan_from_toml

app = typer.Typer(help="Register, amend and show an experiment's analysis plan.", no_args_is_help=True)
PlanFile = Annotated[Path, typer.Argument(help="The plan, as TOML (see docs/plans/powermeter.toml)")]
app.command("freeze-quintiles")(freeze_quintiles)


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


PilotOpt = Annotated[
    str | None,
    typer.Option("--pilot", help="Estimate the world from this experiment's data so far (a pilot)"),
]
PilotDay = Annotated[
    str | None, typer.Option(help="With --pilot: first (since) or last (until) day, YYYY-MM-DD")
]
PilotEngine = Annotated[str | None, typer.Option(help="With --pilot: the engine (the plan's, else google)")]
PilotArm = Annotated[
    str | None, typer.Option(help="With --pilot: the arm (the plan's primary, else swap_1_2)")
]
PilotRank = Annotated[int | None, typer.Option(help="With --pilot: the rank (default: the plan's, else 1)")]


def _pilot(
    url: str,
    api_key: str | None,
    experiment_id: str,
    given: dict[str, Any],
) -> tuple[World, int]:
    """The pilot's world from the service (``POST .../pilot-world``) and its rank; what the
    pilot was (selection, size, preprocessing) and what it estimates are printed first."""
    body = {k: v for k, v in given.items() if v is not None}
    answer = call_api(url, api_key, "POST", f"/v1/experiments/{experiment_id}/pilot-world", body)
    world = World(**{f.name: answer["world"][f.name] for f in fields(World) if f.name in answer["world"]})
    console = result_console()
    console.print(
        f"pilot [bold]{printable(answer['experiment_id'])}[/bold] on {printable(answer['engine'])}: "
        f"{printable(answer['arm'])} against {printable(answer['baseline'])} at c{answer['rank']}, "
        f"{answer['installs']} installs, {answer['units']} units, {answer['first_day']} to "
        f"{answer['last_day']} ({answer['days']} days), burn-in {answer['burn_in_days']} days and "
        f"{answer['unit_mode']} units from the {answer['preprocessing_from']}",
        markup=True,
        highlight=False,
    )
    console.print(f"estimated: {_describe(world)}", highlight=False)
    return world, int(answer["rank"])


def _describe(world: World) -> str:
    return (
        f"{world.installs} installs x {world.days:g} days, {world.clicks_per_day:.2f} clicks per "
        f"install-day, control CTR {world.ctr:.4g}, delta {world.delta:.4g}, between-install SD "
        f"{world.ctr_sd:.4g}, activity cv {world.activity_cv:.3g}"
    )


def _world(base: World, given: dict[str, Any]) -> World:
    """``base`` (the paper's world or a pilot's) with any assumption given replacing its own."""
    world = replace(base, **{k: v for k, v in given.items() if v is not None})
    if world.installs < 1 or world.days <= 0 or world.clicks_per_day <= 0 or world.ctr_sd < 0:
        raise fail("installs, days and clicks per install-day must be positive, the SD not negative", 2)
    if world.activity_cv < 0:
        raise fail("the activity's coefficient of variation must not be negative", 2)
    if not (0 < world.ctr < 1 and 0 <= world.ctr + world.delta <= 1):
        raise fail("the control CTR must lie in (0, 1) and CTR + delta in [0, 1]", 2)
    return world


def _print_size(
    world: World, rank: int, half_width: float | None, mde: float | None, level: float, power: float
) -> None:
    """The half-width and MDE of delta and beta at the rank at ``world``'s size, and the
    installs or days a target needs, plain and variance-reduced."""
    table = Table(
        "statistic",
        "estimator",
        "half-width",
        "MDE",
        f"installs ({world.days:g} days)",
        f"days ({world.installs} installs)",
    )
    target = half_width if half_width is not None else mde
    for statistic in ("delta", "beta"):
        for adjusted in (False, True):
            hw = half_width_of(world, statistic, adjusted, level)
            found = minimum_detectable_effect(world, statistic, adjusted, power, 1 - level)
            needs = ["", ""]
            if target is not None:
                p = power if mde is not None else None
                n = installs_needed(world, target, statistic, adjusted, level, p, 1 - level)
                d = days_needed(world, target, statistic, adjusted, level, p, 1 - level)
                needs = [str(n), "never" if math.isinf(d) else f"{d:.1f}"]
            kind = "variance-reduced" if adjusted else "plain"
            table.add_row(f"{statistic}_{rank}", kind, f"{hw:.4f}", f"{found:.4f}", *needs)
    console = result_console()
    console.print(_describe(world), highlight=False)
    console.print(table)


@app.command()
def size(
    installs: Annotated[int | None, typer.Option(help="Installs after preprocessing (paper: 85)")] = None,
    days: Annotated[float | None, typer.Option(help="Days an install contributes (paper: 150)")] = None,
    clicks_per_day: Annotated[float | None, typer.Option(help="Click units per install-day")] = None,
    ctr: Annotated[float | None, typer.Option(help="Control CTR at the rank (paper c1: 0.43)")] = None,
    delta: Annotated[float | None, typer.Option(help="The arm's gap (paper swap_1_2: -0.19)")] = None,
    ctr_sd: Annotated[float | None, typer.Option(help="Between-install SD of the control CTR")] = None,
    activity_cv: Annotated[float | None, typer.Option(help="CV of installs' click units (paper: 1)")] = None,
    half_width: Annotated[float | None, typer.Option(help="Target interval half-width")] = None,
    mde: Annotated[float | None, typer.Option(help="Target minimum detectable effect")] = None,
    level: Annotated[float, typer.Option(help="Interval level")] = 0.95,
    power: Annotated[float, typer.Option(help="Power for --mde")] = 0.8,
    pilot: PilotOpt = None,
    since: PilotDay = None,
    until: PilotDay = None,
    engine: PilotEngine = None,
    arm: PilotArm = None,
    rank: PilotRank = None,
    url: Url = "http://127.0.0.1:8080",
    api_key: ApiKeyOpt = None,
) -> None:
    """Study size for delta and beta of one arm: the expected half-width and MDE at the
    assumed size, and the installs (at its days) or days (at its installs) a target needs,
    plain and variance-reduced (analytics/stats/planner.py). The world is the paper's numbers,
    or with --pilot an experiment's data so far as the service estimates it; any assumption
    given replaces the world's (--installs and --days: the planned study's size)."""
    if half_width is not None and mde is not None:
        raise fail("give --half-width or --mde, not both", 2)
    if not (0.5 < level < 1 and 0 < power < 1) or any(t is not None and t <= 0 for t in (half_width, mde)):
        raise fail("--level in (0.5, 1), --power in (0, 1), targets positive", 2)
    selection = {"since": since, "until": until, "engine": engine, "arm": arm, "rank": rank}
    if pilot is None and (named := [f"--{k}" for k, v in selection.items() if v is not None]):
        raise fail(f"{', '.join(named)}: only with --pilot EXPERIMENT (they choose the pilot's data)", 2)
    base, shown = (paper_world(), 1) if pilot is None else _pilot(url, api_key, pilot, selection)
    given = {"installs": installs, "days": days, "clicks_per_day": clicks_per_day, "ctr": ctr}
    given |= {"delta": delta, "ctr_sd": ctr_sd, "activity_cv": activity_cv}
    _print_size(_world(base, given), shown, half_width, mde, level, power)
