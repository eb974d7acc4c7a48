"""Personalization audits (Hannak et al., DESIGN.md §3.2): compare the profiles of one round.

A round is one query issued by every profile at the same moment. Treatment profiles
are compared with the control; the control is compared with its twin, an identical
profile, to measure the engine's own noise. Personalization is what the treatments
change beyond that noise floor. Comparisons use the organic results in page order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from analytics.stats.similarity import changed_at_rank, damerau_levenshtein, jaccard

RANKS = 10
"""Ranks compared (Hannak et al. use the first page: ten organic results)."""


@dataclass(frozen=True)
class Snapshot:
    profile_id: str
    role: str  # treatment, control or control_twin
    treatment: str
    status: str  # ok, captcha, blocked or error
    urls: tuple[str, ...]  # organic results in page order
    sent_at: datetime


@dataclass(frozen=True)
class Comparison:
    kind: str  # "treatment" (treatment vs control) or "noise" (control vs twin)
    treatment: str  # the treatment value; "" for the noise pair
    profile_a: str
    profile_b: str
    jaccard: float
    edit_distance: int
    changed: tuple[bool, ...]  # per rank 1..RANKS
    rank1_moved: bool  # b's rank-1 result is not a's rank-1 result


def compare(kind: str, treatment: str, a: Snapshot, b: Snapshot, ranks: int = RANKS) -> Comparison:
    top_a, top_b = a.urls[:ranks], b.urls[:ranks]
    return Comparison(
        kind,
        treatment,
        a.profile_id,
        b.profile_id,
        jaccard(set(top_a), set(top_b)),
        damerau_levenshtein(top_a, top_b),
        tuple(changed_at_rank(top_a, top_b, ranks)),
        bool(top_a[:1] != top_b[:1]),
    )


def compare_round(snapshots: Sequence[Snapshot], ranks: int = RANKS) -> list[Comparison]:
    """Every treatment against the control, and the control against its twin.

    Snapshots that failed (CAPTCHA, blocked, error) are left out of every pair: a
    missing page is not a personalized one. Without a usable control nothing is compared.
    """
    ok = sorted((s for s in snapshots if s.status == "ok"), key=lambda s: s.profile_id)
    control = next((s for s in ok if s.role == "control"), None)
    if control is None:
        return []
    pairs = []
    twin = next((s for s in ok if s.role == "control_twin"), None)
    if twin is not None:
        pairs.append(compare("noise", "", control, twin, ranks))
    for s in ok:
        if s.role == "treatment":
            pairs.append(compare("treatment", s.treatment, control, s, ranks))
    return pairs


def skew_ms(snapshots: Sequence[Snapshot]) -> float:
    """Lock-step skew: the spread of the profiles' fetch start times, in milliseconds."""
    if not snapshots:
        return 0.0
    starts = [s.sent_at for s in snapshots]
    return (max(starts) - min(starts)).total_seconds() * 1000
