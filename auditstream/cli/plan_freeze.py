"""``auditstream plan freeze-quintiles``: freeze the ``n_candidates`` quintile boundaries from
a pilot period, as a logged amendment of the plan (issue 38).

The service computes both families' cut points (every page; the pages without ads or box)
over the units the plan keeps on the pilot's days and amends the plan with them
(``POST /v1/experiments/{id}/plan/freeze-quintiles``); the worker then keeps the quintiles as
named subsets, like ``box``. A plan that already fixes them is refused: change boundaries with
an explicit ``plan amend``.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

import typer
from rich.table import Table

from auditstream.cli.common import fail, result_console
from auditstream.cli.data import AdminKeyOpt, Url, call_api
from auditstream.cli.safe_text import printable


def _day(text: str | None, name: str) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise fail(f"--{name} {printable(text)!r} is not a day, YYYY-MM-DD", 2) from None


def _ranges(cuts: list[int]) -> str:
    """The quintiles' n_candidates_bucket ranges, (b_{k-1}, b_k]."""
    edges = ["-1", *(str(c) for c in cuts), "inf"]
    return "  ".join(f"q{k}: ({edges[k - 1]}, {edges[k]}]" for k in range(1, 6))


def _print_frozen(answer: dict[str, Any]) -> None:
    console = result_console()
    pilot = answer["pilot"]
    console.print(
        f"pilot {pilot['since'] or 'start'}..{pilot['until']}: {printable(pilot['engine'])}, "
        f"burn-in {pilot['burn_in_days']} days, identified installs"
    )
    table = Table("family", "cut points (n_candidates_bucket)", "units", "quintiles")
    for family, found in sorted(pilot["quintiles"].items()):
        table.add_row(family, str(found["kept"]), str(found["units"]), _ranges(found["kept"]))
    console.print(table)
    plan = answer["plan"]
    if plan is None:
        console.print("dry run: the plan is unchanged")
        return
    latest = plan["history"][-1]
    console.print(
        f"plan version {plan['version']} ({latest['kind']}), sha256 {plan['sha256']}\n"
        f"reason: {printable(latest['reason'])}\n"
        "the service now recomputes the study's per-install rows once with these boundaries; "
        "`auditstream plan show` says when the quintiles are stored"
    )


def freeze_quintiles(
    experiment_id: Annotated[str, typer.Argument()],
    until: Annotated[str, typer.Option(help="The pilot's last day, YYYY-MM-DD (included)")],
    since: Annotated[
        str | None, typer.Option(help="The pilot's first day (default: the study's first)")
    ] = None,
    reason: Annotated[str, typer.Option(help="Why, added to the logged reason")] = "",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the boundaries; amend nothing")] = False,
    url: Url = "http://127.0.0.1:8080",
    api_key: AdminKeyOpt = None,
) -> None:
    """Freeze the n_candidates quintile boundaries from a pilot period: the service computes
    them over the units the plan keeps on the pilot's days, shows them and amends the plan
    (a logged version: the pilot, its units and who). Refused when the plan fixes them already
    (change them with `plan amend`). Admin scope."""
    first, last = _day(since, "since"), _day(until, "until")
    if first is not None and last is not None and first > last:
        raise fail("--since is after --until", 2)
    body = {"until": until, "since": since, "reason": reason, "dry_run": dry_run}
    _print_frozen(
        call_api(url, api_key, "POST", f"/v1/experiments/{experiment_id}/plan/freeze-quintiles", body)
    )
