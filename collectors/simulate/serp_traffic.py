"""Simulated lock-step personalization rounds with planted noise and personalization (pure).

Every round one query is issued by all profiles. Each profile's page independently
replaces each organic result with a fresh one with probability ``noise`` (the engine's
own churn); the personalized treatment additionally replaces each with probability
``personalization``. So control vs twin differ at a rank with probability
1 - (1 - noise)^2, and the personalized treatment vs control with
1 - (1 - noise)^2 (1 - personalization).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from schemas.events import utc_text

EVENT_NAMESPACE = uuid.UUID("9c2e4b1a-5d3f-4e6a-8b7c-1d2e3f4a5b6c")
PROFILES: tuple[tuple[str, str, str], ...] = (
    ("control", "control", ""),
    ("twin", "control_twin", ""),
    ("logged-in", "treatment", "logged_in"),
    ("boston", "treatment", "location=Boston"),
)


@dataclass
class SerpStudyConfig:
    study: str = "demo-pers"
    engine: str = "google"
    queries: Sequence[tuple[str, str]] = (
        ("election polls", "politics"),
        ("cheap flights", "travel"),
        ("flu symptoms", "health"),
        ("laptop deals", "shopping"),
    )
    noise: float = 0.05
    personalization: float = 0.12
    personalized_treatment: str = "logged_in"
    seed: int = 1

    def expected_noise(self) -> float:
        return 1 - (1 - self.noise) ** 2

    def expected_changed(self, treatment: str) -> float:
        keep = (1 - self.noise) ** 2
        if treatment == self.personalized_treatment:
            keep *= 1 - self.personalization
        return 1 - keep


class SerpSimulation:
    def __init__(self, config: SerpStudyConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)

    def round(self, n: int, start: datetime | None = None) -> Iterator[dict[str, Any]]:
        c, rng = self.config, self.rng
        query, category = c.queries[n % len(c.queries)]
        base = [f"https://site{i}.example/{query.replace(' ', '-')}" for i in range(10)]
        t0 = start or datetime.now(UTC)
        for k, (profile, role, treatment) in enumerate(PROFILES):
            urls = [
                f"https://noise.example/{rng.getrandbits(48):x}" if rng.random() < c.noise else u
                for u in base
            ]
            if treatment == c.personalized_treatment:
                urls = [
                    f"https://personal.example/{rng.getrandbits(48):x}"
                    if rng.random() < c.personalization
                    else u
                    for u in urls
                ]
            round_id = f"{c.study}-r{n:05d}"
            yield {
                "type": "serp_snapshot",
                "schema_version": 1,
                "event_id": str(uuid.uuid5(EVENT_NAMESPACE, f"{c.study}|{round_id}|{profile}")),
                "sent_at": utc_text(t0 + timedelta(milliseconds=3 * k)),
                "study_id": c.study,
                "round_id": round_id,
                "profile_id": profile,
                "role": role,
                "treatment": treatment,
                "engine": c.engine,
                "query": query,
                "query_category": category,
                "results": [{"rank": i + 1, "type": "organic", "url": u} for i, u in enumerate(urls)],
                "result_estimate": 1_000_000 + n,
                "status": "ok",
                "raw_ref": "",
            }
