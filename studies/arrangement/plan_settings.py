"""What a report follows when its experiment has a pre-registered analysis plan (issue 38).

A setting the analyst left unset takes the plan's value; a setting asked for that differs
from the plan is a *departure*: the report is still computed as asked (the analyst may look
at anything), but its answer says so and the service logs who asked what, and when
(``plan_deviations``). What the plan fixes, per setting of a report request:

- ``engine``, ``subset``: a departure when the plan names neither (its engine, its subsets
  and its quantities' engines and subsets);
- ``burn_in_days``, ``unit_mode``, ``baseline``: the plan's;
- ``intervals``, ``level``: the plan's interval method and level;
- ``correction``: the plan's multiple-comparison method;
- ``include_unidentified``, ``targets``: the plan's preprocessing keeps identified events
  only and does not reweight, so asking for either is a departure.

Pure: the request's settings in, the followed settings and the departures out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from schemas.analysis_plan import AnalysisPlan


@dataclass(frozen=True)
class Followed:
    settings: dict[str, Any]
    """The plan's value of every planned setting the request has and left unset."""
    departures: dict[str, dict[str, Any]]
    """Per setting asked for against the plan: ``{"asked": .., "planned": ..}``."""


def planned_values(plan: AnalysisPlan) -> dict[str, Any]:
    """The value the plan gives each setting it fixes."""
    return {
        "engine": plan.engine,
        "burn_in_days": plan.burn_in_days,
        "unit_mode": plan.unit_mode,
        "intervals": plan.intervals.method,
        "level": plan.intervals.level,
        "baseline": plan.baseline,
        "correction": plan.correction.method,
        "include_unidentified": False,
        "targets": None,
    }


def follow(asked: Mapping[str, Any], given: Collection[str], plan: AnalysisPlan) -> Followed:
    """The settings of a request (``asked``, every field; ``given``: those the caller set)
    with the plan filled in where unset, and the departures of those set."""
    planned = planned_values(plan)
    quantities = (*plan.primary, *plan.secondary)
    settings: dict[str, Any] = {}
    departures: dict[str, dict[str, Any]] = {}
    for name, value in planned.items():
        if name not in asked:
            continue
        if name not in given or (asked[name] is None and value is not None):  # None: unset
            settings[name] = value
        elif _differs(asked[name], value):
            departures[name] = {"asked": asked[name], "planned": value}
    engines = sorted({plan.engine, *(q.engine for q in quantities)})
    if "engine" in given and asked.get("engine") in engines:
        departures.pop("engine", None)  # another engine the plan names
    subsets = sorted(plan.subsets_named())
    if "subset" in asked and "subset" not in given and "all" not in subsets:
        settings["subset"] = plan.primary[0].subset  # the whole selection is not planned
    elif "subset" in asked and asked["subset"] not in subsets:
        departures["subset"] = {"asked": asked["subset"], "planned": subsets}
    return Followed(settings, departures)


def _differs(asked: Any, planned: Any) -> bool:
    if isinstance(planned, float) and isinstance(asked, int | float):
        return abs(float(asked) - planned) > 1e-12
    if planned is None:
        return bool(asked)  # an empty list of targets asks for nothing
    return bool(asked != planned)


Hypothesis = tuple[str, str, int]
"""(quantity, arm, rank): delta or beta of one arm against the baseline at one rank."""


def correction_family(
    plan: AnalysisPlan | None,
    engine: str,
    subset: str,
    baseline: str,
    arms: Collection[str] | None,
    ranks: int,
) -> list[Hypothesis]:
    """The comparisons a report corrects together. With a plan: its primary quantities (and
    the secondary ones when its family is ``all``) of this engine and subset, against the
    plan's baseline; CTRs are estimates, not tests, and a quantity of an arm the selection
    lacks (``arms``; None: not known yet), or past the report's ranks, is left out (the
    answer lists what was tested). Without a plan: delta of every arm at every rank shown."""
    if plan is None:
        return [("delta", a, r) for a in sorted(arms or ()) if a != baseline for r in range(1, ranks + 1)]
    if baseline != plan.baseline:
        return []
    chosen = plan.primary if plan.correction.family == "primary" else [*plan.primary, *plan.secondary]
    return [
        (q.quantity, q.arm, q.rank)
        for q in chosen
        if q.quantity != "ctr"
        and q.engine == engine
        and q.subset == subset
        and (arms is None or q.arm in arms)
        and q.rank <= ranks
    ]
