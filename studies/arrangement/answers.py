"""The arrangement experiment's answers, defined once: the models of what the report, the
timeline and the decision line say, and the two functions that write a Figure-3 table in
their forms. The CLI (JSON and CSV), the board, the HTTP reports and the OpenAPI document
all take them from here (``tests/test_studies/test_answers.py`` fails when one drifts).

A Figure-3 arm has one model (``Figure3Arm``: per position, an ``Estimate`` of the CTR, the
gap and the distortion) and two forms of it: nested (``arm_json``, what the board draws)
and flat (``flatten``: one column per estimate, ``ctr_c1``, ``ctr_c1_ci_low``, ..., what
the report, the timeline, CSV and the analyst views carry; ``ReportArm`` is its model,
derived from ``Figure3Arm``'s fields).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from analytics.stats.arrangement import performative_power, performative_power_lower_bound
from analytics.stats.arrangement_table import ArmRow, json_number
from studies.arrangement.tables import CONTROL, ELEMENTS

Number = float | None
"""An estimate: ``null`` where it is undefined (no units, no baseline)."""


def interval_guarantee(intervals: str, level: float = 0.95) -> str:
    """What the report's intervals guarantee, at its level."""
    return INTERVAL_GUARANTEES[intervals].replace("95%", f"{level:.1%}".replace(".0%", "%"), 1)


INTERVAL_GUARANTEES = {
    "bootstrap": "95% clustered bootstrap: valid for one look at a fixed moment, not for watching",
    "sequential": (
        "95% confidence sequence: covers the truth at every moment of the study at once, so it "
        "may be watched and the study stopped when it excludes zero"
    ),
}


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Estimate(_Closed):
    """One estimate with its 95% interval (``null``: undefined)."""

    value: Number
    ci_low: Number
    ci_high: Number


class Figure3Arm(_Closed):
    """One arm of a Figure-3 table: CTR, gap and distortion at c_1..c_ranks."""

    arm: str
    units: int
    installs: int
    ctr: list[Estimate]
    delta: list[Estimate]
    beta: list[Estimate]


class Figure3(_Closed):
    """A Figure-3 table as the board draws it."""

    baseline: str
    has_baseline: bool
    ranks: int
    arms: list[Figure3Arm]
    performative_power_lower_bound: Number


ESTIMATES = tuple(name for name, f in Figure3Arm.model_fields.items() if f.annotation == list[Estimate])
"""The per-position estimates of an arm: ``ctr``, ``delta``, ``beta``."""
BOUNDS = {"value": "", "ci_low": "_ci_low", "ci_high": "_ci_high"}
"""Each field of ``Estimate`` and the suffix of its flat key (``ctr_c1``, ``ctr_c1_ci_low``)."""
COUNTS = tuple(name for name in Figure3Arm.model_fields if name not in ESTIMATES)
"""An arm's own columns, before its estimates: ``arm``, ``units``, ``installs``."""


class DecisionLine(RootModel[dict[str, str | None]]):
    """Per arm, the first day (ISO date) the confidence sequence for delta_c1 excluded zero,
    or null (not yet)."""


@cache
def record_keys(name: str, i: int) -> tuple[str, str, str]:
    """A flat record's keys for one estimate: value, low and high of ``name`` at c_i."""
    return tuple(f"{name}_c{i}{suffix}" for suffix in BOUNDS.values())  # type: ignore[return-value]


def flat_columns(ranks: int) -> list[str]:
    """The columns of a flat Figure-3 record with c_1..c_ranks (CSV's header)."""
    return [*COUNTS, *(k for name in ESTIMATES for i in range(1, ranks + 1) for k in record_keys(name, i))]


def flatten(table: list[ArmRow]) -> list[dict[str, Any]]:
    """One flat record per arm, for JSON and CSV output (the keys and values of
    ``Estimate.to_json``, written straight in: a 720-window timeline has 400k of them)."""
    out = []
    for row in table:
        record: dict[str, Any] = {"arm": row.arm, "units": row.units, "installs": row.installs}
        for name in ESTIMATES:
            for i, e in enumerate(getattr(row, name), start=1):
                value, low, high = record_keys(name, i)
                record[value] = json_number(e.value)
                record[low] = json_number(e.ci_low)
                record[high] = json_number(e.ci_high)
        out.append(record)
    return out


def arm_json(row: ArmRow) -> dict[str, Any]:
    """One arm of a Figure-3 table in the nested form (``Figure3Arm``)."""
    return {
        "arm": row.arm,
        "units": row.units,
        "installs": row.installs,
        **{name: [e.to_json() for e in getattr(row, name)] for name in ESTIMATES},
    }


def clean(x: float) -> float | None:
    """A number for JSON: None for NaN and infinities, else rounded to 6 places."""
    return None if math.isnan(x) or math.isinf(x) else round(x, 6)


def pp_lower_bound(table: list[ArmRow]) -> float:
    """max over arms of -delta_1 (point estimates; ``table``'s gaps taken against control)."""
    return performative_power_lower_bound({r.arm: r.delta[0].value for r in table if r.delta})


POWER_METHOD = (
    "value: max over arms of CTR_c1(control) - CTR_c1(arm) (the paper's Theorem 1, sup_a delta_1(a) "
    "with delta = control minus arm); ci_low: max over arms of each arm's one-sided lower bound, "
    "Bonferroni-adjusted over the arms, se read off the arm's 95% interval as a normal one"
)


class PerformativePower(_Closed):
    """The lower bound on performative power (Theorem 1), always against control."""

    value: Number = Field(
        description="max over arms of CTR_c1(control) - CTR_c1(arm): a point estimate, biased upward."
    )
    ci_low: Number = Field(
        description="A one-sided 95% lower confidence bound valid for the maximum over arms."
    )
    arm: str | None = Field(description="The arm attaining the maximum.")
    against: Literal["control"] = "control"
    method: str
    reason: str | None = Field(description="Why value is null (no control arm, no other arm); else null.")


def power_json(table: list[ArmRow], baseline: str = CONTROL) -> dict[str, Any]:
    """``PerformativePower`` from a Figure-3 table whose gaps are taken against ``baseline``:
    null, with the reason, unless that is control (a gap against another arm is not the
    theorem's)."""
    found = performative_power(
        {r.arm: (r.delta[0].value, r.delta[0].ci_low, r.delta[0].ci_high) for r in table if r.delta}
    )
    reason = None
    if baseline != CONTROL:
        found = performative_power({})
        reason = f"gaps against {baseline}, not control: the bound is defined against control only"
    elif not any(r.arm == CONTROL for r in table):
        reason = "no control arm in the selection: the bound is defined against control only"
    elif found.arm is None:
        reason = "no arm beside control with a defined delta_c1"
    return {
        "value": clean(found.value),
        "ci_low": clean(found.ci_low),
        "arm": found.arm,
        "against": CONTROL,
        "method": POWER_METHOD,
        "reason": reason,
    }


def figure3_json(table: list[ArmRow], ranks: int, baseline: str) -> dict[str, Any]:
    """A Figure-3 table in the nested form (``Figure3``)."""
    pp = pp_lower_bound(table) if baseline == CONTROL else math.nan
    return {
        "baseline": baseline,
        "has_baseline": any(r.arm == baseline for r in table),
        "ranks": ranks,
        "arms": [arm_json(r) for r in table],
        "performative_power_lower_bound": clean(pp),
    }


_ESTIMATE_KEY = rf"^({'|'.join(ESTIMATES)})_c[0-9]+({'|'.join(s for s in BOUNDS.values() if s)})?$"


class ReportArm(BaseModel):
    """One arm of a Figure-3 table as flat columns: ``ctr_c1``, ``ctr_c1_ci_low``,
    ``ctr_c1_ci_high``, ``delta_c1``, ... ``beta_c<k>_ci_high`` (numbers or null)."""

    model_config = ConfigDict(
        extra="allow",
        json_schema_extra={
            "patternProperties": {_ESTIMATE_KEY: {"type": ["number", "null"]}},
            "additionalProperties": False,
        },
    )
    arm: str
    units: int = Field(ge=0)
    installs: int = Field(ge=0)


ElementShare: type[BaseModel] = create_model(
    "ElementShare",
    __config__=ConfigDict(extra="forbid"),
    __doc__="Share of an arm's clicks per element type, with 95% intervals from the bootstrap.",
    arm=(str, ...),
    clicks=(int, ...),
    **{f"{e}{part}": (Number, None) for e in ELEMENTS for part in BOUNDS.values()},  # type: ignore[call-overload]
)


class Drops(BaseModel):
    """Units per arm (clicks, or shown pages in impression mode) before preprocessing and
    dropped by each rule (``drops_sql``)."""

    arm: str
    all_units: int
    burn_in_dropped: int
    unidentified_dropped: int
    kept_clicks: int = Field(
        description="Click units kept (identified, past the burn-in), whatever the unit mode: "
        "what the SRM check counts."
    )
    later_page_dropped: int = Field(
        default=0,
        description="Clicks on later result pages (shown later pages in impression mode), "
        "left out before preprocessing: only a first result page counts. Not in all_units.",
    )


class BoxSubset(_Closed):
    baseline: str
    arms: list[ReportArm]


class MarketHealth(_Closed):
    """One engine market of an experiment (``read/markets.py``)."""

    market: str = Field(description="The Google domain's country code or Bing's market; '' when unknown.")
    events: int
    identified_share: Number
    units_by_arm: dict[str, int] = Field(description="Clicks kept after preprocessing, per arm.")
    srm_chi2: Number
    srm_p_value: Number
    srm_mismatch: bool | None = Field(description="p below the SRM alpha (null: unregistered, or no units).")


class ReportWarning(_Closed):
    """A warning about the report's own numbers (``read/warnings.py``)."""

    code: Literal["srm_mismatch", "unweighted", "too_few_units", "no_variance_reduction"] = Field(
        description="srm_mismatch: the kept clicks per arm fail the SRM test against the registered "
        "allocation; unweighted: reweighting raked no install; too_few_units: an arm has fewer "
        "than 10 units or 2 installs, so its intervals are null; no_variance_reduction: asked "
        "for, but the registered weights of the arms are not known."
    )
    message: str


class PlantedValue(_Closed):
    """One value a simulation planted (migration 0038)."""

    arm: str
    quantity: str = Field(description="ctr, delta or beta, as the report defines them.")
    rank: int = Field(ge=0)
    value: float


class FamilyTestAnswer(_Closed):
    quantity: Literal["delta", "beta"]
    arm: str
    rank: int = Field(ge=1)
    estimate: Number
    p_value: Number = Field(description="Unadjusted, two-sided.")
    adjusted_p_value: Number = Field(description="By the family's method (BH: the q-value).")
    rejected: bool = Field(description="adjusted_p_value <= 1 - level.")
    ci_low: Number
    ci_high: Number
    family_ci_low: Number = Field(description="At family_level (null: BH and not selected).")
    family_ci_high: Number
    family_level: Number
    family_sequence_low: Number | None = Field(
        None, description="Sequential reports: the family's always-valid interval (see family_sequence)."
    )
    family_sequence_high: Number | None = None


class FamilySequence(_Closed):
    alpha_each: float = Field(description="Each member's confidence sequence is at alpha / members.")
    members: int
    description: str


class Corrections(_Closed):
    method: Literal["holm", "bh", "bonferroni"]
    family: str = Field(description='"plan" (its tests in this selection) or the default family.')
    description: str
    level: float
    tests: list[FamilyTestAnswer]
    untested: list[list[Any]] = Field(description="Members of the family this selection cannot test.")
    family_sequence: FamilySequence | None = Field(
        None, description="Sequential reports: how the family's always-valid intervals are made."
    )


class ReducedEstimate(_Closed):
    quantity: Literal["delta", "beta"]
    arm: str
    rank: int = Field(ge=1)
    estimate: Number
    ci_low: Number
    ci_high: Number
    plain_estimate: Number
    plain_ci_low: Number
    plain_ci_high: Number
    width_ratio: Number = Field(description="Reduced interval's width over the plain one's.")


class VarianceReduction(_Closed):
    method: str
    level: float
    estimates: list[ReducedEstimate]


class PlanFollowed(_Closed):
    version: int = Field(ge=1)
    sha256: str = Field(min_length=64, max_length=64)
    followed: bool = Field(description="True: every setting was the plan's.")
    departures: dict[str, dict[str, Any]] = Field(
        description='Per setting asked for against the plan: {"asked": .., "planned": ..}.'
    )
    logged_at: str | None = Field(
        description="When the departures were logged (UTC); null when none, or not logged "
        "(the board's figures mark them without logging)."
    )


class ExperimentReport(_Closed):
    """``auditstream report experiment --format json``."""

    baseline: str
    arms: list[ReportArm]
    box_subset: BoxSubset
    element_shares: list[ElementShare]
    performative_power_lower_bound: Number = Field(
        description="performative_power.value (kept for readers of the point alone)."
    )
    performative_power: PerformativePower
    preprocessing: list[Drops]
    engine: str | None = Field(None, description="The engine: as asked, else the plan's, else google.")
    subset: str | None = Field(None, description="The subset: as asked, else the plan's, else all.")
    burn_in_days: int = Field(
        ge=0,
        description="Days dropped at the start of each install: as asked, else the plan's, else as "
        "registered, else 4.",
    )
    unit_mode: Literal["click", "impression"] = Field(
        description="What a unit is: as asked, else as the experiment was registered, else click."
    )
    intervals: str = Field(json_schema_extra={"enum": list(INTERVAL_GUARANTEES)})
    level: float = Field(0.95, gt=0.5, lt=1, description="The intervals' confidence level.")
    interval_guarantee: str
    decisions: DecisionLine | None = Field(
        description="Sequential intervals: per arm, the first day delta_c1 excluded zero (ISO date); "
        "null at a level other than 95% (the daily looks are stored at 95%)."
    )
    reweighting: dict[str, Any] | None = Field(description="With targets: installs raked, effective size.")
    unweighted_arms: list[ReportArm] | None
    subset_bounds: dict[str, Any] | None = Field(
        default=None,
        description="An n_candidates quintile: the n_candidates_bucket range its units were "
        "counted in (above: exclusive, at_most: inclusive; null where the quintile is open). "
        "The preprocessing rows use the quintile's boundaries over all units.",
    )
    markets: list[MarketHealth] | None = Field(
        default=None, description="Per engine market: events, identified share, SRM of the kept clicks."
    )
    warnings: list[ReportWarning] = Field(
        default_factory=list,
        description="What the report says about its own numbers (also printed under its tables).",
    )
    planted: list[PlantedValue] | None = Field(
        default=None,
        description="A simulated study: the values it planted for this experiment, engine, subset "
        "and baseline (table planted_values); null when none were recorded.",
    )
    corrections: Corrections | None = Field(
        default=None,
        description="The family's tests corrected for their number (the plan's correction, or "
        "--correction); null without one.",
    )
    variance_reduction: VarianceReduction | None = Field(
        default=None,
        description="Asked for: variance-reduced estimates beside the plain ones; null otherwise "
        "or when the registered arm weights are unknown.",
    )
    plan: PlanFollowed | None = Field(
        default=None,
        description="The experiment's analysis plan, when it has one: the version the report "
        "followed and the settings asked for against it (logged in plan_deviations).",
    )


class TimelineWindow(_Closed):
    window_start: str = Field(description="ISO timestamp (UTC) of the window's start.")
    arms: list[ReportArm]


class Timeline(_Closed):
    window_seconds: int = Field(gt=0)
    baseline: str
    burn_in_days: int = Field(ge=0, description="As for the experiment report.")
    unit_mode: Literal["click", "impression"] = Field(description="As for the experiment report.")
    windows: list[TimelineWindow] = Field(min_length=1)
