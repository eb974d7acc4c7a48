"""Install weights raked to a target population's margins (``docs/reweighting.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from analytics.stats.bootstrap import install_key_sql
from analytics.stats.reweight import DIMENSIONS, Targets, effective_sample_size, rake
from core.store import Store
from schemas.sql import quote


def profiles_sql(experiment_id: str, seed: int) -> str:
    """Each install's questionnaire answers, keyed like the per-install rows."""
    columns = ", ".join(DIMENSIONS)
    return (
        f"SELECT {install_key_sql('install_id', seed)} AS install_key, consent, {columns} "
        f"FROM install_profiles WHERE experiment_id = {quote(experiment_id)}"
    )


@dataclass(frozen=True)
class KeyedWeights:
    """Install weights by install key, looked up for many rows at once (absent keys: 1)."""

    keys: np.ndarray
    weights: np.ndarray

    @classmethod
    def of(cls, keys: Any, weights: np.ndarray) -> KeyedWeights:
        """From parallel lists; a key given twice keeps its last weight (as a dict would)."""
        k = np.asarray(keys, dtype=np.uint64)
        last = k.size - 1 - np.unique(k[::-1], return_index=True)[1]  # sorted by key
        return cls(k[last], np.asarray(weights, dtype=float)[last])

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        at = np.minimum(np.searchsorted(self.keys, keys), max(self.keys.size - 1, 0))
        if not self.keys.size:
            return np.ones(len(keys))
        return np.where(self.keys[at] == keys, self.weights[at], 1.0)


async def install_weights(
    store: Store, experiment_id: str, seed: int, targets: Targets
) -> tuple[KeyedWeights, dict[str, Any]]:
    """Raked weights by install key (installs without answers: 1) and what the raking did."""
    profiles = (await store.query_arrow(profiles_sql(experiment_id, seed))).to_pydict()
    keys = profiles.get("install_key", [])
    answers = {d: np.asarray(profiles.get(d, []), dtype=object) for d in targets}
    weights = rake(answers, targets)
    raked = int((weights != 1).sum()) if len(weights) else 0
    summary = {
        "targets": targets,
        "installs_with_profile": len(keys),
        "installs_raked": raked,
        "effective_sample_size": round(effective_sample_size(weights), 1) if len(weights) else None,
        "max_weight": round(float(weights.max()), 3) if len(weights) else None,
        "without_answers": "weight 1: an install without a profile or an answer stands for itself",
    }
    return KeyedWeights.of(keys, weights), summary
