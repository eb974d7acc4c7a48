"""A pre-registered analysis plan (issue 38): what an experiment's report is to show, fixed
before the data are seen, read from TOML and stored with the hash of its canonical JSON.

The plan names the primary and secondary quantities, the family over which comparisons are
corrected and the method, the subsets (with the ``n_candidates`` quintile boundaries fixed,
so a quintile is a named subset like ``box``), the burn-in, the unit mode, the interval
method and level, alpha, the baseline and the decision line's stopping rule. Stored in
``analysis_plans`` (migration 0041): registration, then logged amendments, each a new
version with its own hash; a report that asks for something else is a departure, logged in
``plan_deviations``.

Hash stability: ``canonical_json`` is the model's JSON with every default filled in, keys
sorted and no whitespace, so the same plan written in a different order, or with a default
left out, has the same ``sha256``.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from typing import Annotated, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from schemas.events import Engine, Ident

Quantity = Literal["delta", "beta", "ctr"]
CutPoints = Annotated[
    list[Annotated[StrictInt, Field(ge=0, le=200)]],
    Field(
        min_length=4,
        max_length=4,
        description="The 0.2, 0.4, 0.6 and 0.8 quantiles of n_candidates_bucket (the floor of "
        "10 x log10 of the 'About N results' figure), in order.",
    ),
]
QUINTILE = re.compile(r"(no_ads_no_box_)?n_candidates_q([1-5])")
"""The quintile subsets' names, as ``analytics/stats/arrangement_subsets.QUINTILE`` (schemas
import nothing above them): over every page, and within the pages with neither ads nor a
box. Subset names are checked against ``subset_names()`` where the plan is used
(``ingest/plans.py``, ``auditstream plan``)."""


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlannedQuantity(_Closed):
    """One estimate of the report: a quantity of one arm at one rank, engine and subset."""

    quantity: Quantity
    arm: Ident
    rank: Annotated[StrictInt, Field(ge=1, le=10)]
    engine: Engine = "google"
    subset: Annotated[str, Field(max_length=64)] = "all"


class QuintileBounds(_Closed):
    """Fixed boundaries of one family of ``n_candidates`` quintiles. Frozen, a quintile is a
    page condition (its bucket in (b_{k-1}, b_k]), the same for the units preprocessing keeps
    (the estimates) and for those it drops (the preprocessing table): ``kept`` serves both,
    and ``every``, if given, must equal it (kept for plans that state both)."""

    kept: CutPoints
    every: CutPoints | None = None

    @model_validator(mode="after")
    def _ordered(self) -> QuintileBounds:
        if list(self.kept) != sorted(self.kept):
            raise ValueError("kept: cut points must not decrease")
        if self.every is not None and list(self.every) != list(self.kept):
            raise ValueError(
                "every: frozen quintiles are page conditions, the same for kept and dropped units: "
                "leave every out (or equal to kept)"
            )
        return self

    def as_query_bounds(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The ``ReportQuery.quintile_bounds`` pair (kept, every): the cut points twice."""
        return tuple(self.kept), tuple(self.kept)


class Correction(_Closed):
    family: Literal["primary", "all"] = "all"
    """Correct over the primary quantities only, or over primary and secondary together."""
    method: Literal["holm", "bh", "bonferroni", "none"] = "holm"


class Intervals(_Closed):
    method: Literal["bootstrap", "sequential"] = "bootstrap"
    level: Annotated[float, Field(gt=0.5, lt=1, allow_inf_nan=False)] = 0.95


class StoppingRule(_Closed):
    """The decision line's rule: stop on the first daily look whose interval excludes zero
    (always valid only with sequential intervals), or read once at the planned end."""

    rule: Literal["first_look_excluding_zero", "fixed_horizon"] = "fixed_horizon"
    max_days: Annotated[StrictInt, Field(ge=1, le=3650)] | None = None


class AnalysisPlan(_Closed):
    experiment_id: Ident
    primary: Annotated[list[PlannedQuantity], Field(min_length=1, max_length=50)]
    secondary: Annotated[list[PlannedQuantity], Field(max_length=500)] = []
    correction: Correction = Correction()
    subsets: Annotated[list[Annotated[str, Field(max_length=64)]], Field(max_length=50)] = ["all"]
    quintiles: dict[Literal["n_candidates", "no_ads_no_box_n_candidates"], QuintileBounds] = {}
    """Frozen quintile boundaries per family; a family absent here has moving boundaries
    (computed from each report's selection) until ``plan freeze-quintiles`` amends the plan."""
    engine: Engine = "google"
    burn_in_days: Annotated[StrictInt, Field(ge=0, le=3650)] = 4
    unit_mode: Literal["click", "impression"] = "click"
    intervals: Intervals = Intervals()
    alpha: Annotated[float, Field(gt=0, lt=0.5, allow_inf_nan=False)] = 0.05
    baseline: Ident = "control"
    stopping: StoppingRule = StoppingRule()

    @model_validator(mode="after")
    def _consistent(self) -> AnalysisPlan:
        keys = [(q.quantity, q.arm, q.rank, q.engine, q.subset) for q in (*self.primary, *self.secondary)]
        if len(set(keys)) != len(keys):
            raise ValueError("each quantity (quantity, arm, rank, engine, subset) at most once")
        if any(q.arm == self.baseline and q.quantity != "ctr" for q in (*self.primary, *self.secondary)):
            raise ValueError(f"delta and beta of the baseline {self.baseline!r} against itself are 0")
        return self

    def subsets_named(self) -> set[str]:
        """Every subset the plan names: its list and its quantities'."""
        return {*self.subsets, *(q.subset for q in (*self.primary, *self.secondary))}

    def quintile_bounds_for(self, subset: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The frozen boundaries of a quintile subset's family, else None (not a quintile,
        or its boundaries not fixed by the plan)."""
        match = QUINTILE.fullmatch(subset)
        if match is None:
            return None
        bounds = self.quintiles.get(f"{match.group(1) or ''}n_candidates")  # type: ignore[call-overload]
        return bounds.as_query_bounds() if bounds is not None else None

    def canonical_json(self) -> bytes:
        """Every field (defaults included), keys sorted, no whitespace: the hashed text."""
        return orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical_json()).hexdigest()


def plan_from_toml(text: str) -> AnalysisPlan:
    """A plan from TOML text (``tomllib``; a syntax error raises ``tomllib.TOMLDecodeError``,
    a bad plan pydantic's ``ValidationError``)."""
    return AnalysisPlan.model_validate(tomllib.loads(text))
