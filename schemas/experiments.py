"""The experiment registry's model: what the service and the extensions agree on."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schemas.events import Engine, Ident

Status = Literal["running", "stopped"]


class ExperimentConfig(BaseModel):
    """An arrangement experiment: arms with allocation weights and the assignment salt."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    experiment_id: Ident
    engines: Annotated[list[Engine], Field(min_length=1, max_length=10)]
    arms: Annotated[dict[Ident, Annotated[float, Field(gt=0)]], Field(min_length=2, max_length=20)]
    salt: Annotated[str, Field(min_length=8, max_length=128)]
    start: date
    end: date | None = None
    burn_in_days: Annotated[int, Field(ge=0, le=60)] = 4
    unit_mode: Literal["click", "impression"] = "click"
    status: Status = "running"

    @model_validator(mode="after")
    def _control_and_dates(self) -> ExperimentConfig:
        if "control" not in self.arms:
            raise ValueError("an experiment needs a 'control' arm")
        if self.end is not None and self.end < self.start:
            raise ValueError("end is before start")
        return self

    def public(self) -> dict[str, object]:
        """What an extension needs to assign arms: no operator-only fields."""
        total = sum(self.arms.values())
        return {
            "experiment_id": self.experiment_id,
            "engines": self.engines,
            "arms": [{"arm": a, "weight": w / total} for a, w in self.arms.items()],
            "salt": self.salt,
            "status": self.status,
            "assignment": "sha256(salt:install_id:query) -> first 8 bytes / 2^64 -> weighted arm",
        }


def now_utc() -> datetime:
    return datetime.now(UTC)
