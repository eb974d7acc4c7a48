"""Set and list similarity shared by the autocomplete and personalization audits (DESIGN.md §3.2, §3.3)."""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Set as AbstractSet


def jaccard(a: AbstractSet[Hashable], b: AbstractSet[Hashable]) -> float:
    """Jaccard index: size of the intersection over size of the union, in [0, 1].

    Two empty sets give 1.0: they are identical, so a distance defined as
    1 - jaccard is 0 (nothing changed) rather than undefined.
    """
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
