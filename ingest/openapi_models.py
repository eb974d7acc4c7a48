"""The shapes of the ``/v1`` answers that their handlers build as plain dicts.

Request bodies and experiment configs have their models where they are used
(``schemas/``, ``ingest/reports.py``, ``ingest/import_routes.py``); these models describe
the rest for the OpenAPI document (``ingest/openapi.py``) and are never used to build an
answer. ``tests/integration/test_openapi.py`` validates the service's real answers
against the document, so a handler that changes its answer without its model here fails
there. Objects are closed (``additionalProperties: false``) wherever the handler writes
the keys itself; rows read from a view are described by the keys every row has.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ingest.api_keys import SCOPES
from ingest.planted import PlantedValue
from ingest.validation import REASONS
from schemas.analysis_plan import AnalysisPlan
from schemas.events import Engine, Ident
from schemas.experiments import ExperimentConfig
from studies.arrangement.answers import (
    INTERVAL_GUARANTEES,
    Corrections,
    DecisionLine,
    ElementShare,
    Figure3,
    MarketHealth,
    Number,
    ReportWarning,
    VarianceReduction,
)


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- errors


class Problem(_Closed):
    """Every error answer: a stable code and a human-readable message."""

    error: str = Field(description="Stable machine-readable code, e.g. `unauthorized`, `not_found`.")
    message: str


# --------------------------------------------------------------------------- /v1/events


class EventRejection(_Closed):
    """One refused event: its index in the request, why, and the field (never its value)."""

    index: int = Field(ge=0)
    reason: str = Field(json_schema_extra={"enum": list(REASONS)})
    field: str | None


class EventsAccepted(_Closed):
    accepted: int = Field(ge=1)
    rejected: list[EventRejection]


class EventsAllRejected(Problem):
    """422: ``error`` is ``all_rejected``; each rejection says why."""

    error: Literal["all_rejected"]
    accepted: Literal[0]
    rejected: list[EventRejection]


# --------------------------------------------------------------------------- /v1/sql


class SqlRequest(_Closed):
    sql: str = Field(description="One statement (`schemas/clickhouse/README.md` lists the tables).")


class SqlResult(_Closed):
    columns: list[str]
    types: list[str] = Field(description="ClickHouse type of each column.")
    rows: list[list[Any]]


# --------------------------------------------------------------------------- keys


class KeyInfo(_Closed):
    """The caller's own key: what it may do, never its secret."""

    id: str = Field(pattern=r"^k_[0-9a-f]{10}$")
    name: str
    scopes: list[Annotated[str, Field(json_schema_extra={"enum": list(SCOPES)})]] = Field(min_length=1)


# --------------------------------------------------------------------------- experiments


class PublicArm(_Closed):
    arm: Ident
    weight: float = Field(gt=0, le=1, description="Share of assignments (the weights sum to 1).")


class PublicExperimentConfig(_Closed):
    """What an extension needs to assign arms (`ExperimentConfig.public`)."""

    experiment_id: Ident
    engines: list[Engine]
    arms: list[PublicArm]
    engine_arms: dict[Engine, list[PublicArm]] = Field(
        default={},
        description="Engines that run only some arms: draw among these there, else among `arms`.",
    )
    salt: str
    status: Literal["running", "stopped"]
    assignment: str


class PlantedOut(_Closed):
    """A simulated experiment's planted values (`ingest/planted.py`); none for a real study."""

    experiment_id: Ident
    seed: int | None = Field(ge=0)
    model: str | None = Field(description="The click model and its version, or null without values.")
    recorded_at: str | None = Field(description="When the values were stored (UTC), or null without any.")
    values: list[PlantedValue]


class PlanVersion(_Closed):
    """One version of an analysis plan: its registration or an amendment (`ingest/plans.py`)."""

    version: int = Field(ge=1)
    sha256: str = Field(pattern="^[0-9a-f]{64}$", description="SHA-256 of the plan's canonical JSON.")
    registered_at: str
    registered_by: str = Field(description="The API key's name (never the key).")
    kind: Literal["registration", "amendment", "freeze_quintiles"]
    reason: str


class PlanOut(_Closed):
    """An experiment's analysis plan: the current version and the history of versions."""

    experiment_id: Ident
    version: int = Field(ge=1)
    sha256: str = Field(pattern="^[0-9a-f]{64}$")
    plan: AnalysisPlan
    history: list[PlanVersion]
    quintiles_stored: bool | None = Field(
        description="With frozen quintile boundaries: whether the worker keeps the quintiles as named "
        "subsets yet (it recomputes the experiment's per-install rows once new boundaries are stored; "
        "until then a quintile report applies the boundaries to the per-day rows); null without."
    )


class PilotQuintiles(_Closed):
    kept: list[int] = Field(description="The 0.2, 0.4, 0.6 and 0.8 quantiles of n_candidates_bucket.")
    units: int = Field(ge=0, description="The kept units they weigh.")


class PilotWindow(_Closed):
    """A pilot period and the quintile cut points of each family over its kept units."""

    since: str | None = Field(description="The pilot's first day (null: the study's first).")
    until: str = Field(description="The pilot's last day (included).")
    engine: str
    burn_in_days: int = Field(ge=0)
    quintiles: dict[str, PilotQuintiles] = Field(
        description="Per family (n_candidates, no_ads_no_box_n_candidates): its cut points."
    )


class FrozenQuintilesOut(_Closed):
    """The boundaries frozen from a pilot (``plan freeze-quintiles``) and the amended plan."""

    experiment_id: Ident
    dry_run: bool
    pilot: PilotWindow
    plan: PlanOut | None = Field(description="The plan after the amendment; null for a dry run.")


class PlanDeviation(_Closed):
    plan_sha256: str = Field(pattern="^[0-9a-f]{64}$", description="The plan version departed from.")
    at: str
    by: str = Field(description="The API key's name.")
    what: dict[str, Any] = Field(description="Per setting: what the report asked and what the plan says.")


class PlanDeviations(_Closed):
    """The departures reports made from an experiment's plan, oldest first."""

    experiment_id: Ident
    deviations: list[PlanDeviation]


# --------------------------------------------------------------------------- reports

# --------------------------------------------------------------------------- import


class ImportRejection(_Closed):
    line: int = Field(ge=1, description="1-based line number in the chunk.")
    reason: str
    field: str | None


class ImportSpan(_Closed):
    experiment_id: str
    engine: str
    day_start: int = Field(description="UTC midnight, unix seconds.")


class ImportCrawlStudy(_Closed):
    engine: str
    study_id: str


class ImportSerpStudy(_Closed):
    study_id: str


class ImportAnswer(_Closed):
    lines: int = Field(ge=0)
    accepted: int = Field(ge=0)
    inserted: int = Field(ge=0)
    duplicates: int = Field(ge=0, description="Events stored before (same event_id): not stored again.")
    dead_letters: int = Field(ge=0)
    rejected_by_reason: dict[str, int]
    rejected: list[ImportRejection] = Field(description="The first 100 rejections.")
    spans: list[ImportSpan] = Field(description="Days to send back to `/v1/import/recompute`.")
    crawl_studies: list[ImportCrawlStudy] = Field(
        description="Autocomplete studies (their completion markers' `study_id`, per engine) to send back."
    )
    serp_studies: list[ImportSerpStudy] = Field(description="Personalization studies to send back.")


class ExportColumn(_Closed):
    name: str
    type: str = Field(description="Its ClickHouse type.")


class ExportTableInfo(_Closed):
    """One table of a study's export."""

    name: str
    events: str | None = Field(
        description="The event family whose raw events these are (written as `auditstream import` "
        "reads them); null for a result table."
    )
    key: list[str] = Field(description="The columns that order the rows and page through them (unique).")
    columns: list[ExportColumn]
    rows: int = Field(ge=0, description="Its rows in the study when the manifest was answered.")
    documented_as: list[str] = Field(description="The sections of schemas/clickhouse/README.md about it.")


class ExportManifest(_Closed):
    """What an export of a study holds, and the study's registration and plan."""

    kind: Literal["arrangement", "autocomplete", "personalization"]
    study: str
    study_is: str = Field(description="What the study id is for this kind, in words.")
    selected_by: str = Field(description="The SQL condition that selects the study's rows.")
    exported_at: str = Field(description="The service's clock, UTC (YYYY-MM-DD HH:MM:SS.fff).")
    version: str = Field(description="The service's auditstream version.")
    tables: list[ExportTableInfo]
    registration: ExperimentConfig | None = Field(description="The experiment as registered (arrangement).")
    plan: PlanOut | None = Field(description="Its analysis plan and the plan's history (arrangement).")


class ExportPage(_Closed):
    """One page of a study's table, in key order."""

    table: str
    columns: list[str]
    types: list[str] = Field(description="ClickHouse type of each column.")
    rows: list[list[Any]]
    next: str | None = Field(description="Send as `after` for the next page; null after the last.")


class RecomputeState(_Closed):
    """A recompute's progress: ``POST /v1/import/recompute`` answers its start, ``GET
    /v1/import/recompute/{recompute_id}`` how far it got."""

    id: str = Field(pattern=r"^rc_[0-9a-f]{20}$")
    status: Literal["running", "done", "failed"]
    days: int = Field(ge=0, description="Days to recompute (each named once).")
    installs: int = Field(ge=0, description="Studies whose installs to recompute (each named once).")
    studies: int = Field(
        ge=0, description="Autocomplete and personalization studies whose analyses to recompute."
    )
    steps: int = Field(ge=0, description="days + installs + studies.")
    done: int = Field(ge=0, description="Steps done.")
    error: Literal["store_unavailable", "store_refused", "interrupted", "internal_error"] | None = Field(
        None, description="Why a failed recompute stopped (send it again)."
    )
    message: str | None = None


class ErasureReceipt(_Closed):
    """What one erasure did (``streams/erasure.py``); a row of ``erasure_log`` too."""

    erasure_id: str = Field(description="A UUID.")
    install_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the install id, hex.")
    requested_by: Literal["operator", "volunteer"]
    started_at: str
    finished_at: str
    rows_removed: dict[str, int] = Field(description="Rows deleted, per table.")
    total_rows_removed: int = Field(ge=0)


class ErasureAnswer(_Closed):
    receipts: list[ErasureReceipt]


# --------------------------------------------------------------------------- board


class BoardExperiment(_Closed):
    experiment_id: str
    engines: list[str]
    units: int
    last_day: str
    registered: bool
    status: str | None


class BoardAutocompleteStudy(_Closed):
    study: str
    rounds: int
    rounds_with_data: int = Field(
        description="Rounds in which some root fetched something: the board opens on the newest "
        "study with two (churn and nmi compare rounds)."
    )
    engines: list[str]
    last: str


class BoardPersonalizationStudy(_Closed):
    study_id: str
    rounds: int
    last_round: str


class BoardIndex(_Closed):
    experiments: list[BoardExperiment]
    autocomplete_studies: list[BoardAutocompleteStudy]
    personalization_studies: list[BoardPersonalizationStudy]


class BoardDrops(_Closed):
    arm: str
    all_units: int
    burn_in_dropped: int
    unidentified_dropped: int
    kept: int
    kept_clicks: int = Field(description="Click units kept, whatever the unit mode (the SRM panel's).")


class SrmArm(_Closed):
    arm: str
    units: int
    share: Number
    expected_share: Number


class Alert(BaseModel):
    """An alert as stored (``alerts`` view)."""

    alert_id: str
    created_at: str
    kind: str
    severity: str
    subject: str
    summary: str


class Srm(_Closed):
    status: Literal["alert", "unregistered", "no_units", "mismatch", "ok"]
    registered: bool
    alpha: float
    units: int
    chi2: Number
    p_value: Number
    arms: list[SrmArm]
    alerts: list[Alert]


class BoardExperimentPanel(_Closed):
    experiment_id: str
    engine: str
    burn_in_days: int
    unit_mode: Literal["click", "impression"]
    seed: int
    registry_status: str | None
    figure3: Figure3
    weighted: dict[str, Any] | None = Field(description="With a targets file: the reweighted Figure 3.")
    intervals: str = Field(json_schema_extra={"enum": list(INTERVAL_GUARANTEES)})
    interval_guarantee: str
    decisions: DecisionLine | None
    correction: Literal["holm", "bh", "bonferroni", "none"] = Field(
        description="How the family's tests are corrected (the `correction` parameter; default holm)."
    )
    corrections: Corrections | None = Field(
        description="The family (delta of every arm at every rank shown) corrected for its number, "
        "beside Figure 3's unadjusted intervals; null for correction none or without a control arm."
    )
    variance_reduction: VarianceReduction | None = Field(
        description="With variance_reduction=1: the variance-reduced estimates beside the plain ones; "
        "null otherwise or when the registered arm weights are unknown."
    )
    element_shares: list[ElementShare]
    box_subset: Figure3
    drops: list[BoardDrops]
    srm: Srm
    markets: list[MarketHealth] = Field(description="Identification and SRM per engine market, busiest first")
    warnings: list[ReportWarning] = Field(
        default_factory=list, description="The report's warnings (SRM, reweighting, thin arms)."
    )


class ChurnGrid(_Closed):
    engine: str
    ranks: list[int]
    depths: list[int]
    churn: list[list[Number]] = Field(description="Mean churn, one row per depth, one column per rank.")
    pairs: list[list[int | None]]


class NmiRound(_Closed):
    crawl_id: str
    completed_at: str
    roots: int
    mean_nmi: Number
    min_nmi: Number
    shock: bool
    shock_details: Any


class NmiSeries(_Closed):
    engine: str
    rounds: list[NmiRound]


class BoardAutocompletePanel(_Closed):
    study: str
    engine: str
    churn: list[ChurnGrid]
    nmi: list[NmiSeries]


class PersonalizationRank(_Closed):
    rank: int
    changed: Number
    noise: Number
    personalization: Number


class PersonalizationTreatment(_Closed):
    treatment: str
    ranks: list[PersonalizationRank]


class BoardPersonalizationPanel(_Closed):
    study_id: str
    treatments: list[PersonalizationTreatment]
    rounds: dict[str, Any] | None = Field(description="Round completeness; null before the first round.")


class BoardAlerts(_Closed):
    alerts: list[Alert]
