"""The experiment registry's model: what the service and the extensions agree on."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from schemas.events import Day, Engine, Ident

Status = Literal["running", "stopped"]


MIN_ARM_SHARE = 1e-9
"""The smallest share of the weights an arm may have: one far below it is never assigned in
practice, and its share, as ``public()`` writes it, could round to 0 (a weight of 5e-324
beside 1.0 did, which the document says is above 0)."""


class ExperimentConfig(BaseModel):
    """An arrangement experiment: arms with allocation weights and the assignment salt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment_id: Ident
    engines: Annotated[list[Engine], Field(min_length=1, max_length=10)]
    arms: Annotated[
        dict[Ident, Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]],
        Field(
            min_length=2,
            max_length=20,
            json_schema_extra={  # the key pattern and _control_and_dates, for JSON Schema
                "required": ["control"],
                "additionalProperties": False,
                "description": "Arm -> relative allocation weight; a 'control' arm is required, "
                "the weights' sum must be a finite number and each weight at least 1e-09 of their sum.",
            },
        ),
    ]
    """Arm -> allocation weight, relative (normalised over an engine's arms, so their sum
    must be finite: 1e308 twice made every normalised weight 0). A number, never text or a
    boolean read as one."""
    salt: Annotated[str, Field(min_length=8, max_length=128)]
    start: Day
    end: Annotated[Day | None, Field(json_schema_extra={"description": "On or after start."})] = None
    """Calendar days (``YYYY-MM-DD``) within ClickHouse's ``Date`` range: a day it would clamp
    (0001-01-01 read back as 1970-01-01) is refused, as in the events."""
    engine_arms: Annotated[
        dict[
            Engine,
            Annotated[
                list[Ident],
                Field(
                    min_length=2,
                    max_length=20,
                    json_schema_extra={"contains": {"const": "control"}, "uniqueItems": True},
                ),
            ],
        ],
        Field(
            json_schema_extra={
                "additionalProperties": False,
                "description": "Engine -> the arms it runs (control among them): each engine one "
                "of engines, each arm one of arms.",
            }
        ),
    ] = {}
    """Engines that run only some of the arms (the paper ran only swap 1-2 on Bing): engine ->
    its arms, control among them, each weighted as in ``arms``. Engines not listed run every
    arm."""
    burn_in_days: Annotated[StrictInt, Field(ge=0, le=60)] = 4
    unit_mode: Literal["click", "impression"] = "click"
    status: Status = "running"

    @model_validator(mode="after")
    def _control_and_dates(self) -> ExperimentConfig:
        if "control" not in self.arms:
            raise ValueError("an experiment needs a 'control' arm")
        total = sum(self.arms.values())
        if not math.isfinite(total):
            raise ValueError("the arms' weights are relative: their sum must be a finite number")
        if tiny := sorted(a for a, w in self.arms.items() if w / total < MIN_ARM_SHARE):
            raise ValueError(
                f"each arm's weight must be at least {MIN_ARM_SHARE:g} of their sum (it would "
                f"almost never be assigned, and its share would round to 0): {tiny}"
            )
        if self.end is not None and self.end < self.start:
            raise ValueError("end is before start")
        for engine, arms in self.engine_arms.items():
            if engine not in self.engines:
                raise ValueError(f"engine_arms names {engine!r}, which is not in engines")
            if "control" not in arms:
                raise ValueError(f"engine_arms[{engine!r}] needs the 'control' arm")
            if unknown := sorted(set(arms) - set(self.arms)):
                raise ValueError(f"engine_arms[{engine!r}] names arms not in arms: {unknown}")
            if len(set(arms)) != len(arms):
                raise ValueError(f"engine_arms[{engine!r}] lists an arm twice")
        return self

    def arms_on(self, engine: str) -> dict[str, float]:
        """The arms ``engine`` runs, with their weights (not normalised)."""
        only = self.engine_arms.get(engine)
        return dict(self.arms) if only is None else {a: self.arms[a] for a in only}

    def public(self) -> dict[str, object]:
        """What an extension needs to assign arms: no operator-only fields."""

        def normalised(arms: dict[str, float]) -> list[dict[str, object]]:
            total = sum(arms.values())
            return [{"arm": a, "weight": w / total} for a, w in arms.items()]

        return {
            "experiment_id": self.experiment_id,
            "engines": self.engines,
            "arms": normalised(dict(self.arms)),
            "engine_arms": {e: normalised(self.arms_on(e)) for e in self.engine_arms},
            "salt": self.salt,
            "status": self.status,
            "assignment": (
                "sha256(salt:install_id:query) -> first 8 bytes / 2^64 -> weighted arm, among "
                "engine_arms[engine] when the engine is listed there, else among arms"
            ),
        }


def now_utc() -> datetime:
    return datetime.now(UTC)
