"""Personalization audits (Hannak et al., docs/method.md): compare the profiles of one round.

A round is one query issued by every profile at the same moment. Treatment profiles
are compared with the control; the control is compared with its twin, an identical
profile, to measure the engine's own noise. Personalization is what the treatments
change beyond that noise floor.

Comparisons use the page's results in page order, in one of two lists (``LINKS``):
``primary``, as the paper does, the primary link of every result of the main column
(news, videos, local ... boxes by the link they lead to, and those without one, such as
related searches, by a static label of their type), or ``organic``, the organic results
only. Ads, shopping ads and the side panel's knowledge panel are not results.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from itertools import pairwise

from analytics.stats.similarity import changed_at_rank, damerau_levenshtein, jaccard

RANKS = 10
"""Ranks compared (Hannak et al. use the first page: about ten results)."""
LINKS = ("primary", "organic")
"""The two lists a round is compared on; ``primary`` is the paper's and the default."""
NOT_RESULTS = frozenset({"ad", "shopping", "knowledge_panel"})
"""Component types that are not results of the main column (paid, or the side panel)."""


def links_of(items: Sequence[tuple[str, str]], links: str) -> tuple[str, ...]:
    """The compared list of a page given its (type, url) components in page order; a
    component without a link already carries its type as its url (``results_of``)."""
    if links == "organic":
        return tuple(url for kind, url in items if kind == "organic")
    if links == "primary":
        return tuple(url for kind, url in items if kind not in NOT_RESULTS)
    raise ValueError(f"links must be one of {LINKS}")


@dataclass(frozen=True)
class Snapshot:
    profile_id: str
    role: str  # treatment, control or control_twin
    treatment: str
    status: str  # ok, captcha, blocked or error
    urls: tuple[str, ...]  # the compared list (``links_of``) in page order
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
    rank1_from: int = 0
    """When rank 1 moved: where b's new rank-1 result was on a's page (1-based; 0: not on it)."""
    rank1_to: int = 0
    """When rank 1 moved: where a's rank-1 result went on b's page (0: off the page)."""


def compare(kind: str, treatment: str, a: Snapshot, b: Snapshot, ranks: int = RANKS) -> Comparison:
    top_a, top_b = a.urls[:ranks], b.urls[:ranks]
    moved = bool(top_a[:1] != top_b[:1])
    came_from = went_to = 0
    if moved and top_a and top_b:  # the paper's Figure 16, over the whole first page
        came_from = a.urls.index(b.urls[0]) + 1 if b.urls[0] in a.urls else 0
        went_to = b.urls.index(a.urls[0]) + 1 if a.urls[0] in b.urls else 0
    return Comparison(
        kind,
        treatment,
        a.profile_id,
        b.profile_id,
        jaccard(set(top_a), set(top_b)),
        damerau_levenshtein(top_a, top_b),
        tuple(changed_at_rank(top_a, top_b, ranks)),
        moved,
        came_from,
        went_to,
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


@dataclass(frozen=True)
class DayPage:
    day: date
    urls: tuple[str, ...]


def day_to_day(pages: Sequence[DayPage], ranks: int = RANKS) -> list[tuple[date, date, float, int]]:
    """Day-to-day consistency of one profile and query (the paper's Figures 12-13): each
    day's page against the previous day the profile saw the query, as (day, previous
    day, Jaccard, edit distance) over the first ``ranks`` results."""
    ordered = sorted(pages, key=lambda p: p.day)
    out = []
    for before, after in pairwise(ordered):
        a, b = before.urls[:ranks], after.urls[:ranks]
        out.append((after.day, before.day, jaccard(set(a), set(b)), damerau_levenshtein(a, b)))
    return out
