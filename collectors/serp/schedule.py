"""The study's clock: round ``k`` has a fixed slot on a grid from the study's start.

Slots are computed, never chained: a round that runs long (a slow profile, a slow
sink) does not move the next one, and a restarted crawler finds its place on the
same grid. Round ``k`` runs query ``k % len(queries)``; with ``days``, pass ``k //
len(queries)`` starts ``period`` after the previous pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from collectors.serp.study import ROUND_DIGITS, Study


@dataclass(frozen=True)
class Grid:
    study_id: str
    start: datetime
    spacing: float
    period: float
    n_queries: int
    total: int

    @classmethod
    def of(cls, study: Study, start: datetime) -> Grid:
        return cls(study.id, start, study.study.spacing, study.period, len(study.queries), study.total_rounds)

    def slot(self, k: int) -> datetime:
        cycle, position = divmod(k, self.n_queries)
        return self.start + timedelta(seconds=cycle * self.period + position * self.spacing)

    def query_index(self, k: int) -> int:
        return k % self.n_queries

    def round_id(self, k: int) -> str:
        width = max(ROUND_DIGITS, len(str(self.total - 1)))
        return f"{self.study_id}-r{k:0{width}d}"

    @property
    def end(self) -> datetime:
        """The last slot."""
        return self.slot(self.total - 1)
