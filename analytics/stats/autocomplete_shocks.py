"""Shocks: crawl rounds in which many roots lose information stability at once (docs/method.md, "Shocks").

The paper (§4.3, Figure 7) saw roughly weekly drops in nmi across most roots on Google
and read them as possible algorithm updates rather than news about one root. The rule
below makes that reading testable: each root is compared with its own recent baseline,
and a round is a shock when a large enough share of the roots judged drop together.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_TOLERANCE = 1e-9  # a drop of exactly `drop` counts, whatever the float rounding of 0.9 - 0.8


@dataclass(frozen=True)
class ShockRule:
    """When a round is a shock.

    A root is judged in a round when it has at least min_history earlier nmi values. Its
    baseline is the median of its last baseline_window values (a median, so an earlier
    shock inside the window does not drag the baseline down), and it dropped when its nmi
    is at least `drop` below that baseline. The round is a shock when at least min_roots
    roots were judged and at least min_share of them dropped.
    """

    baseline_window: int = 6
    min_history: int = 3
    drop: float = 0.1
    min_share: float = 0.5
    min_roots: int = 3

    def __post_init__(self) -> None:
        if self.baseline_window < 1 or self.min_history < 1 or self.min_roots < 1:
            raise ValueError("baseline_window, min_history and min_roots must be at least 1")
        if not 0 < self.drop <= 1:
            raise ValueError(f"drop is an nmi difference in (0, 1], got {self.drop}")
        if not 0 < self.min_share <= 1:
            raise ValueError(f"min_share is a share in (0, 1], got {self.min_share}")


@dataclass(frozen=True)
class Shock:
    """A shock round: which roots dropped, out of how many judged."""

    round_id: str
    share: float
    roots_dropped: tuple[str, ...]
    roots_evaluated: int


def baseline(history: Sequence[float], rule: ShockRule) -> float:
    """A root's baseline: the median of its last baseline_window nmi values (NaN if none)."""
    recent = [v for v in history if not math.isnan(v)][-rule.baseline_window :]
    return statistics.median(recent) if recent else math.nan


def evaluate_round(
    history: Mapping[str, Sequence[float]],
    current: Mapping[str, float],
    rule: ShockRule = ShockRule(),
    *,
    round_id: str,
) -> Shock | None:
    """Judge one round; the Shock when it is one, else None.

    history holds each root's earlier nmi values, oldest first; current this round's.
    Roots missing from either, or with fewer than min_history earlier values, are not
    judged. NaN values are ignored in both.
    """
    judged: list[str] = []
    dropped: list[str] = []
    for root in sorted(current):
        value = current[root]
        past = [v for v in history.get(root, ()) if not math.isnan(v)]
        if math.isnan(value) or len(past) < rule.min_history:
            continue
        judged.append(root)
        if baseline(past, rule) - value >= rule.drop - _TOLERANCE:
            dropped.append(root)
    if len(judged) < rule.min_roots:
        return None
    share = len(dropped) / len(judged)
    if share < rule.min_share:
        return None
    return Shock(round_id, share, tuple(dropped), len(judged))


def detect_shocks(
    nmi_by_round: Mapping[str, Mapping[str, float]], rule: ShockRule = ShockRule()
) -> list[Shock]:
    """All shock rounds of a study; nmi_by_round maps round_id -> {root: nmi}, in round order.

    Each round is judged against the values of the rounds before it (shock rounds
    included), exactly as `evaluate_round` would judge it live.
    """
    history: dict[str, list[float]] = {}
    shocks: list[Shock] = []
    for round_id, current in nmi_by_round.items():
        shock = evaluate_round(history, current, rule, round_id=round_id)
        if shock is not None:
            shocks.append(shock)
        for root, value in current.items():
            history.setdefault(root, []).append(value)
    return shocks
